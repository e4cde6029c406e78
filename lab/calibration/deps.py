"""The loop's dependencies for the lab's commands (`recloop simulate`, the evaluation, the benchmarks):
the offline calibration fitted first when it is missing, then wired as a worker wires it."""

from __future__ import annotations

from graph.agents.evidence import LoopCalibration
from graph.agents.llm_evidence import LLMWeights
from graph.caches import LoopCaches
from graph.config import AgentMode, LoopConfig
from graph.context import LoopDeps
from graph.deps import make_deps
from graph.item_vectors import available_backends
from lab.calibration.offline import ensure_loop_calibration
from recmodels.dataset import Dataset
from recmodels.scorer import Scorer


async def calibrated_deps(
    config: LoopConfig,
    catalog: Dataset,
    rec_scorer: Scorer,
    reward_scorer: Scorer,
    agents: AgentMode = "offline",
    *,
    rec_prior: bool = True,
    user_reward: bool = True,
    calibration: LoopCalibration | None = None,
    caches: LoopCaches | None = None,
    llm_weights: LLMWeights | None = None,
) -> LoopDeps:
    """:func:`graph.deps.make_deps` on the stored calibration, fitted on validation (and saved beside
    the models) when there is none, as `recloop prepare` does; the arguments are make_deps's."""
    if calibration is None:
        calibration = await ensure_loop_calibration(
            config, catalog, rec_scorer, reward_scorer, available_backends(), caches
        )
    return await make_deps(
        config,
        catalog,
        rec_scorer,
        reward_scorer,
        agents,
        rec_prior=rec_prior,
        user_reward=user_reward,
        calibration=calibration,
        caches=caches,
        llm_weights=llm_weights,
    )
