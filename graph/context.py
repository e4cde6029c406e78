"""Everything the loop needs, built once and shared by every loop of a process: :class:`LoopDeps`
(the graph's runtime context), and :func:`build_deps`, which wires the agents for given
calibration parameters (:func:`graph.deps.make_deps` reads those; the lab fits them on validation).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict, Unpack

from graph.agents.base import RecAgent, UserAgent
from graph.agents.evidence import ItemVectors, LoopCalibration
from graph.agents.llm_evidence import LLMWeights
from graph.agents.offline import OfflineRecAgent, OfflineUserAgent
from graph.caches import LoopCaches
from graph.config import AgentMode, LoopConfig
from graph.item_vectors import load_vectors
from recmodels.dataset import Dataset
from recmodels.scorer import Scorer


# eq=False: identity hashing (models and agents do not compare by value).
@dataclass(frozen=True, eq=False)
class LoopDeps:
    """The loop's dependencies: two trained models, the catalog, two agents, the configuration.

    The graph's runtime context (``StateGraph(..., context_schema=LoopDeps)``): each run passes
    one, ``graph.ainvoke(input, config, context=deps)``, and the nodes read ``runtime.context``.
    """

    rec_scorer: Scorer
    """The recommendation model: its top candidate is the prior Im."""
    reward_scorer: Scorer
    """The reward model: scores every proposal for the user agent."""
    catalog: Dataset
    rec_agent: RecAgent
    user_agent: UserAgent
    config: LoopConfig
    calibration: LoopCalibration = field(default_factory=LoopCalibration)
    """What the offline agents (and the LLM agents' offline fallbacks) learned on validation."""
    rec_vectors: ItemVectors | None = None
    """Item vectors of the offline recommendation agent's history evidence (None: it reads none)."""
    llm_weights: LLMWeights | None = None
    """LLM agents: how much the LLM's answers count (None: offline agents)."""


def check_models(catalog: Dataset, rec_scorer: Scorer, reward_scorer: Scorer) -> None:
    """Both models must score this catalog's items."""
    for name, scorer in (("rec_scorer", rec_scorer), ("reward_scorer", reward_scorer)):
        if scorer.n_items != catalog.n_items:
            raise ValueError(
                f"{name}: model has {scorer.n_items} items but dataset {catalog.name!r} has {catalog.n_items}"
            )


class DepsKnobs(TypedDict, total=False):
    """The keyword arguments :func:`build_deps`, :func:`graph.deps.make_deps` and
    :func:`lab.calibration.deps.calibrated_deps` share (each passes them on to the next)."""

    rec_prior: bool
    """Show the recommendation agent the rec model's pick (default True; AFL Table 6's ablation)."""
    user_reward: bool
    """Show the user agent the reward model (default True; AFL Table 6's ablation)."""
    caches: LoopCaches | None
    """What the caller's loops share (calibrations, text item vectors); None computes or reads afresh."""
    llm_weights: LLMWeights | None
    """LLM agents: how much the LLM's answers count (None: the stored fit, else the default)."""


def build_deps(
    config: LoopConfig,
    catalog: Dataset,
    rec_scorer: Scorer,
    reward_scorer: Scorer,
    agents: AgentMode = "offline",
    *,
    calibration: LoopCalibration,
    **knobs: Unpack[DepsKnobs],
) -> LoopDeps:
    """Wire agents of the requested kind on the given calibration parameters (``knobs``:
    :class:`DepsKnobs`); ``llm_weights`` None here is the conservative default."""
    if unknown := knobs.keys() - DepsKnobs.__optional_keys__:  # as a misspelt keyword argument would
        raise TypeError(f"unexpected keyword arguments: {', '.join(sorted(unknown))}")
    rec_prior, user_reward = knobs.get("rec_prior", True), knobs.get("user_reward", True)
    caches, llm_weights = knobs.get("caches"), knobs.get("llm_weights")
    check_models(catalog, rec_scorer, reward_scorer)
    accept_top_k = config.accept_top_k or 1
    offline_user = OfflineUserAgent(
        catalog,
        accept_top_k=accept_top_k,
        accept_share=min(1.0, accept_top_k / config.n_candidates),
        use_reward=user_reward,
        calibration=calibration,
        vectors=load_vectors(calibration.user_similarity, config, catalog, reward_scorer, caches),
    )
    rec_vectors = load_vectors(calibration.rec_similarity, config, catalog, reward_scorer, caches)
    offline_rec = OfflineRecAgent(catalog, use_prior=rec_prior, calibration=calibration, vectors=rec_vectors)
    rec_agent: RecAgent
    user_agent: UserAgent
    if agents == "offline":
        rec_agent, user_agent = offline_rec, offline_user
    elif agents == "llm":
        from graph.agents.llm import LLMRecAgent, LLMUserAgent
        from llm.client import LLMClient  # LLM stack only when used

        client = LLMClient.from_config(config.llm)
        llm_weights = llm_weights or LLMWeights()
        rec_agent = LLMRecAgent(
            catalog, config, client, use_prior=rec_prior, fallback=offline_rec, weights=llm_weights
        )
        user_agent = LLMUserAgent(
            catalog, config, client, offline_user, use_reward=user_reward, weights=llm_weights
        )
    else:
        raise ValueError(f"agents: must be 'offline' or 'llm', got {agents!r}")
    return LoopDeps(
        rec_scorer,
        reward_scorer,
        catalog,
        rec_agent,
        user_agent,
        config,
        calibration,
        rec_vectors,
        llm_weights if agents == "llm" else None,
    )
