"""The offline agents' calibration as a worker reads it: where it is kept, and how it combines scores.

The offline agents weigh evidence (graph/agents/evidence.py); how much each piece counts is
:class:`graph.agents.evidence.LoopCalibration`, learned on the **validation** split for one
(dataset, rec model, reward model) by the lab (:mod:`lab.calibration.offline`, which says how):
`recloop prepare` fits it, and `recloop serve` prepares it once before any worker starts.

It is a small JSON file beside the rec model's artifact, ``calibration/<rec>+<reward>.json``, keyed
by the dataset fingerprint, both artifacts' SHA-256, the similarity backends installed and the
fit's version: a file with another key is stale. A worker only reads it (:func:`loop_calibration`,
via ``graph.deps.make_deps``); when it is missing or stale the worker stops at once with
:class:`CalibrationMissing`, which names the command that fits it. Fitting inside a worker's
start-up took more than 16 minutes on a 100k-item catalog, with no progress shown.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import torch

from graph.agents.evidence import LoopCalibration
from graph.caches import LoopCaches
from recmodels.dataset import Dataset
from recmodels.scorer import Scorer

log = logging.getLogger(__name__)
T = TypeVar("T")

CALIBRATION_VERSION = 1
"""Part of the key: a change to the fit (lab.calibration.offline) makes every saved file stale."""


class CalibrationMissing(RuntimeError):
    """No calibration was fitted for these models (or it is stale); the message names the command."""


def combined_scores(
    calibration: LoopCalibration,
    rec_log_probs: torch.Tensor,
    reward_log_probs: torch.Tensor,
    rec_history_similarity: torch.Tensor | None,
) -> dict[str, torch.Tensor]:
    """Per item, the recommendation agent's belief alone (``agent``) and combined with the user
    agent's evidence at the learned trust (``weighted``): what the offline loop ranks by, for a
    batch of users ([B, N] each; the similarity may be None when the agent reads none)."""
    belief = agent_belief(calibration, rec_log_probs, rec_history_similarity)
    user = reward_log_probs / calibration.reward_temperature
    return {"agent": belief, "weighted": (1.0 - calibration.trust) * belief + calibration.trust * user}


def agent_belief(
    calibration: LoopCalibration, rec_log_probs: torch.Tensor, rec_history_similarity: torch.Tensor | None
) -> torch.Tensor:
    """[B, N] the recommendation agent's belief: its model's calibrated log-probability plus the
    weighted similarity to the history (:func:`combined_scores`' ``agent``; the trust fit reads it
    alone, without a [B, N] mix it would not use)."""
    belief = rec_log_probs / calibration.rec_temperature
    if rec_history_similarity is not None and calibration.rec_history_weight:
        belief = belief + calibration.rec_history_weight * rec_history_similarity
    return belief


def models_key(catalog: Dataset, rec: Scorer, reward: Scorer) -> dict[str, Any]:
    """The catalog and the two models a fit was made for (part of every fitted file's key)."""
    return {
        "dataset": catalog.name,
        "dataset_fingerprint": catalog.fingerprint,
        "rec_model": rec.info.model_name,
        "rec_sha256": rec.info.artifact_sha256,
        "reward_model": reward.info.model_name,
        "reward_sha256": reward.info.artifact_sha256,
    }


def calibration_key(catalog: Dataset, rec: Scorer, reward: Scorer, backends: Sequence[str]) -> dict[str, Any]:
    """Everything the calibration depends on; a saved file with another key is stale."""
    return {
        "version": CALIBRATION_VERSION,
        **models_key(catalog, rec, reward),
        "similarity_backends": sorted(backends),
    }


def calibration_path(rec: Scorer, reward: Scorer) -> Path | None:
    """``<rec artifact's directory>/calibration/<rec>+<reward>.json``; None for models built in
    memory (no artifact file or hash): those are fitted once per process and never written."""
    artifact = rec.info.extra.get("path")
    if not (artifact and rec.info.artifact_sha256 and reward.info.artifact_sha256):
        return None
    return Path(artifact).parent / "calibration" / f"{rec.info.model_name}+{reward.info.model_name}.json"


def memo_key(key: Mapping[str, Any], path: Path | None, rec: Scorer, reward: Scorer) -> str:
    """Where :class:`LoopCaches` keeps a calibration: by its key and file (in-memory models: by object)."""
    return json.dumps(key, sort_keys=True) + (f"@{path}" if path else f"/{id(rec)}/{id(reward)}")


def read_keyed(path: Path, key: Mapping[str, Any], entry: str, parse: Callable[[Any], T]) -> T | None:
    """``parse`` of the ``entry`` a keyed file (``{"key": ..., entry: ...}``) holds, if the file was
    written for ``key`` (None when it is missing, stale or unreadable)."""
    if not path.is_file():
        return None
    try:
        raw = json.loads(path.read_text())
        if raw.get("key") != json.loads(json.dumps(key)):
            return None
        return parse(raw[entry])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("ignoring unreadable %s file %s (%s)", entry, path, exc)
        return None


def stored_loop_calibration(
    catalog: Dataset, rec: Scorer, reward: Scorer, backends: Sequence[str], caches: LoopCaches | None = None
) -> LoopCalibration | None:
    """The calibration fitted for these models: from ``caches`` (the caller's, when given) or the file
    beside the rec model's artifact (:func:`calibration_path`); None when there is none."""
    key = calibration_key(catalog, rec, reward, backends)
    path = calibration_path(rec, reward)
    memo = memo_key(key, path, rec, reward)
    if caches is not None:
        with caches.lock:
            if memo in caches.calibrations:
                return caches.calibrations[memo]
    found = read_keyed(path, key, "calibration", LoopCalibration.from_json) if path else None
    if found is not None and caches is not None:
        with caches.lock:
            caches.calibrations[memo] = found
    return found


def loop_calibration(
    catalog: Dataset, rec: Scorer, reward: Scorer, backends: Sequence[str], caches: LoopCaches | None = None
) -> LoopCalibration:
    """:func:`stored_loop_calibration`, or :class:`CalibrationMissing` naming the command that fits it."""
    found = stored_loop_calibration(catalog, rec, reward, backends, caches)
    if found is None:
        pair = f"{rec.info.model_name}+{reward.info.model_name}"
        where = calibration_path(rec, reward) or "nowhere: the models were built in memory"
        raise CalibrationMissing(
            f"the offline agents' calibration for {pair} on {catalog.name} is missing or stale "
            f"(expected at {where}); a worker never fits it: run `recloop prepare` "
            f"(or `recloop calibrate --dataset {catalog.name} --agents offline`), then start again"
        )
    return found
