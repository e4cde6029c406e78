"""The loop's dependencies for the lab's commands (`recloop simulate`, the evaluation, the benchmarks):
the offline calibration fitted first when it is missing, then wired as a worker wires it."""

from __future__ import annotations

from typing import Unpack

from graph.config import AgentMode, LoopConfig
from graph.context import DepsKnobs, LoopDeps
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
    **knobs: Unpack[DepsKnobs],
) -> LoopDeps:
    """:func:`graph.deps.make_deps` on the stored calibration, fitted on validation (and saved beside
    the models) when there is none, as `recloop prepare` does; the other arguments are make_deps's."""
    calibration = await ensure_loop_calibration(
        config, catalog, rec_scorer, reward_scorer, available_backends(catalog), knobs.get("caches")
    )
    return await make_deps(
        config, catalog, rec_scorer, reward_scorer, agents, calibration=calibration, **knobs
    )
