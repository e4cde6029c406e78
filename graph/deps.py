"""The loop's dependencies as a worker builds them from what was fitted: :func:`make_deps` (the pieces
are in :mod:`graph.context`). It reads the calibrations and never fits them; the lab's
:func:`lab.calibration.deps.calibrated_deps` fits a missing one first."""

from __future__ import annotations

import logging
from typing import Unpack

from graph.agents.evidence import LoopCalibration
from graph.agents.llm_evidence import LLMWeights
from graph.calibration import loop_calibration
from graph.config import AgentMode, LoopConfig
from graph.context import DepsKnobs, LoopDeps, build_deps, check_models
from graph.item_vectors import available_backends
from graph.llm_calibration import stored_llm_weights
from recmodels.dataset import Dataset
from recmodels.scorer import Scorer

log = logging.getLogger(__name__)


async def make_deps(
    config: LoopConfig,
    catalog: Dataset,
    rec_scorer: Scorer,
    reward_scorer: Scorer,
    agents: AgentMode = "offline",
    *,
    calibration: LoopCalibration | None = None,
    **knobs: Unpack[DepsKnobs],
) -> LoopDeps:
    """Wire agents of the requested kind.

    ``knobs`` (:class:`graph.context.DepsKnobs`): ``rec_prior`` / ``user_reward`` are the ablation
    knobs of AFL Table 6: show the recommendation agent the rec model's pick, show the user agent the
    reward model. ``caches``: what the caller's loops share (calibrations, text item vectors); None
    computes or reads them afresh. ``llm_weights`` (LLM agents) default to those ``recloop calibrate
    --agents llm`` fitted for the configured endpoint, else the conservative default (logged as such).
    ``calibration`` defaults to the one learned on validation for these two models
    (:func:`graph.calibration.loop_calibration`: saved next to the models by `recloop prepare`);
    when there is none it raises :class:`graph.calibration.CalibrationMissing`, naming the command.
    """
    check_models(catalog, rec_scorer, reward_scorer)
    caches = knobs.get("caches")
    if calibration is None:
        calibration = loop_calibration(
            catalog, rec_scorer, reward_scorer, available_backends(catalog), caches
        )
    if agents == "llm" and knobs.get("llm_weights") is None:
        llm_weights, key = stored_llm_weights(config, catalog, rec_scorer, reward_scorer, caches)
        if llm_weights is None:
            llm_weights = LLMWeights()
            log.warning(
                "LLM weights for %s (%s on %s): %s",
                key["endpoint_model"],
                catalog.name,
                config.llm.base_url,
                llm_weights.status,
            )
        knobs = {**knobs, "llm_weights": llm_weights}
    return build_deps(config, catalog, rec_scorer, reward_scorer, agents, calibration=calibration, **knobs)
