"""The cold-start protocol: items held out of training, evaluated as the targets of test rows.

A share of the catalog, drawn once with a fixed seed, is held out: every training (and
validation) row whose target is one of them is dropped before training, and the test rows whose
target is one of them are what the model is evaluated on (HR@1-of-20 against 19 uniform
negatives from the whole catalog, as usual). Held-out items still appear in other rows'
histories; an id-only model never saw them as a target, a text-aware one scores them from text.

One hold-out leaves few test rows with a held-out target (9 of 95 on MovieLens at 10 %), so the
protocol may be repeated with hold-out seeds ``0 .. K-1`` (each its own draw of items and its own
trained models) and the cold rows of all K pooled (:func:`pool_results`); a test row can then
count once per hold-out that holds out its target.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from recmodels import metrics
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


def cold_artifact_path(
    models_dir: Path,
    dataset: str,
    model_name: str,
    fraction: float,
    seed: int = COLD_SEED,
    overrides: Mapping[str, Any] | None = None,
) -> Path:
    """Where a model trained under the protocol lives (beside, never instead of, the regular one);
    config ``overrides`` (on top of the preset) name their own file."""
    tag = "".join(f"-{k}={v}" for k, v in sorted((overrides or {}).items()))
    return Path(models_dir) / dataset / "cold" / f"{model_name}-{fraction:g}-seed{seed}{tag}.pt"


def pool_results(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One :func:`recmodels.evaluation.evaluate_model` result from several over disjoint row sets
    (one per hold-out seed): per-row lists concatenated, means weighted by rows, the spread over
    candidate seeds taken of the pooled per-seed means."""
    if len(results) == 1:
        return dict(results[0])
    n = [r["n_rows"] for r in results]
    total = sum(n)

    def weighted(key: str) -> float:
        return sum(r[key] * k for r, k in zip(results, n, strict=True)) / total

    seeds = list(results[0]["hr1_per_seed"])
    per_seed = {
        s: sum(r["hr1_per_seed"][s] * k for r, k in zip(results, n, strict=True)) / total for s in seeds
    }
    per_row = {key: [v for r in results for v in r["per_row"][key]] for key in results[0]["per_row"]}
    return {
        **results[0],
        "hr1_mean": metrics.mean(list(per_seed.values())),
        "hr1_std": metrics.std(list(per_seed.values())),
        "hr1_per_seed": per_seed,
        "hr1_expected": metrics.mean(per_row["hr1_expected"]),
        "hit10": weighted("hit10"),
        "ndcg10": weighted("ndcg10"),
        "n_rows": total,
        "n_dropped": sum(r["n_dropped"] for r in results),
        "per_row": per_row,
    }
