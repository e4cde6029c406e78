"""The cold-start protocol: items held out of training, evaluated as the targets of test rows.

A share of the catalog, drawn once with a fixed seed, is held out: every training (and
validation) row whose target is one of them is dropped before training, and the test rows whose
target is one of them are what the model is evaluated on (HR@1-of-20 against 19 uniform
negatives from the whole catalog, as usual). Held-out items still appear in other rows'
histories; an id-only model never saw them as a target, a text-aware one scores them from text.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

from recmodels.dataset import Row

COLD_SEED = 0  # fixed: every model of a comparison holds out the same items


def held_out_items(n_items: int, fraction: float, seed: int = COLD_SEED) -> frozenset[int]:
    """``round(fraction * n_items)`` item ids drawn uniformly with ``random.Random(seed)``."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"the held-out share must be between 0 and 1, got {fraction}")
    return frozenset(random.Random(seed).sample(range(n_items), round(fraction * n_items)))


def cold_rows(rows: Sequence[Row], held_out: frozenset[int]) -> list[Row]:
    """The rows whose target is held out."""
    return [r for r in rows if r.next in held_out]


def cold_artifact_path(models_dir: Path, dataset: str, model_name: str, fraction: float) -> Path:
    """Where a model trained under the protocol lives (beside, never instead of, the regular one)."""
    return Path(models_dir) / dataset / "cold" / f"{model_name}-{fraction:g}-seed{COLD_SEED}.pt"
