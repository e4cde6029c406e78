"""Everything the loop needs, built once and shared by every loop of a process."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from app.data.dataset import Dataset
from app.settings import Settings
from graph.agents.base import RecAgent, UserAgent
from graph.agents.evidence import ItemVectors
from graph.agents.offline import OfflineRecAgent, OfflineUserAgent
from graph.calibration import LoopCalibration, loop_calibration
from graph.similarity import available_backends, load_vectors
from recmodels.scorer import Scorer

AgentKind = Literal["offline", "llm"]


# eq=False keeps identity hashing, so compiled graphs can be cached per deps object.
@dataclass(frozen=True, eq=False)
class LoopDeps:
    """The loop's dependencies: two trained models, the catalog, two agents, the settings."""

    rec_scorer: Scorer
    """The recommendation model: its top candidate is the prior Im."""
    reward_scorer: Scorer
    """The reward model: scores every proposal for the user agent."""
    catalog: Dataset
    rec_agent: RecAgent
    user_agent: UserAgent
    settings: Settings
    calibration: LoopCalibration = field(default_factory=LoopCalibration)
    """What the offline agents (and the LLM agents' offline fallbacks) learned on validation."""
    rec_vectors: ItemVectors | None = None
    """Item vectors of the offline recommendation agent's history evidence (None: it reads none)."""


def make_deps(
    settings: Settings,
    catalog: Dataset,
    rec_scorer: Scorer,
    reward_scorer: Scorer,
    agents: AgentKind = "offline",
    *,
    rec_prior: bool = True,
    user_reward: bool = True,
    calibration: LoopCalibration | None = None,
) -> LoopDeps:
    """Wire agents of the requested kind.

    ``rec_prior`` / ``user_reward`` are the ablation knobs of AFL Table 6: show the
    recommendation agent the rec model's pick, show the user agent the reward model.
    ``calibration`` defaults to the one learned on validation for these two models
    (:func:`graph.calibration.loop_calibration`: cached next to the models, fitted on first use).
    """
    for name, scorer in (("rec_scorer", rec_scorer), ("reward_scorer", reward_scorer)):
        if scorer.n_items != catalog.n_items:
            raise ValueError(
                f"{name}: model has {scorer.n_items} items but dataset {catalog.name!r} has {catalog.n_items}"
            )
    if calibration is None:
        calibration = loop_calibration(settings, catalog, rec_scorer, reward_scorer, available_backends())
    accept_top_k = settings.accept_top_k or 1
    offline_user = OfflineUserAgent(
        catalog,
        accept_top_k=accept_top_k,
        accept_share=min(1.0, accept_top_k / settings.n_candidates),
        use_reward=user_reward,
        calibration=calibration,
        vectors=load_vectors(calibration.user_similarity, settings, catalog, reward_scorer),
    )
    rec_vectors = load_vectors(calibration.rec_similarity, settings, catalog, reward_scorer)
    offline_rec = OfflineRecAgent(catalog, use_prior=rec_prior, calibration=calibration, vectors=rec_vectors)
    rec_agent: RecAgent
    user_agent: UserAgent
    if agents == "offline":
        rec_agent, user_agent = offline_rec, offline_user
    elif agents == "llm":
        from graph.agents.llm import LLMClient, LLMRecAgent, LLMUserAgent  # LLM stack only when used

        client = LLMClient.from_settings(settings)
        rec_agent = LLMRecAgent(catalog, settings, client, use_prior=rec_prior, fallback=offline_rec)
        user_agent = LLMUserAgent(catalog, settings, client, offline_user, use_reward=user_reward)
    else:
        raise ValueError(f"agents: must be 'offline' or 'llm', got {agents!r}")
    return LoopDeps(
        rec_scorer, reward_scorer, catalog, rec_agent, user_agent, settings, calibration, rec_vectors
    )
