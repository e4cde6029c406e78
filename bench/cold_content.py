"""A training-free reference for the cold-start protocol: rank by text similarity to the history.

Each item is scored by the cosine between its MiniLM text vector (the cached vectors TextRec and
steering use) and the mean vector of the user's last ``--last`` history items. Nothing is trained,
so the held-out items are exactly as cold as under :mod:`recmodels.coldstart`: the score never
sees an interaction with them. The rows and the metric are the protocol's: the rows of each split
whose target is held out, pooled over hold-out seeds ``0 .. K-1``, expected HR@1-of-20 against
uniform negatives (every item outside the history), with a 95 % bootstrap interval over rows.

It answers how much of a cold item's chance a text-aware model should get from text alone:
TextRec's text-only path has to reach at least this.

Two more columns bound what text can add:
- ``--popularity-weights``: the content score plus a popularity *predicted from text* (ridge
  regression of log(1 + training count) on the MiniLM vectors of the hold-out's warm items), both
  as per-row z-scores, ``z(cosine) + w * z(predicted popularity)``. Each weight is reported, and
  the one with the best validation figure is marked ``selected``; test never picks it.
- ``popularity_oracle``: every item ranked by its true count as a training target, the held-out
  items' counts included. The protocol hides exactly those, so this is not a method: it shows how
  much of the rows' figure popularity alone explains. ``popularity_oracle_with_content`` adds the
  content cosine to it (``z(cosine) + z(log(1 + true count))``): what the text-popularity column
  would reach if a title told an item's popularity exactly.

    python -m bench.cold_content --dataset steam --fraction 0.1 --seeds 5 --popularity-weights 0,1,2 --json
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from app.settings import get_settings
from lab.eval.metrics import bootstrap_interval
from recmodels import metrics
from recmodels.base import pad_histories
from recmodels.coldstart import cold_rows, held_out_items
from recmodels.dataset import Dataset, Row
from recmodels.evaluation import expected_hr_at_1_of, ranking_stats_from_scores
from recmodels.text import (
    cached_text_vectors,
    content_scores,
    embedding_cache_path,
    fit_text_popularity,
    item_texts,
    standardize,
)


def content_hr1(
    vectors: np.ndarray,
    rows: Sequence[Row],
    last: int,
    popularity: np.ndarray | None = None,
    weight: float = 0.0,
) -> list[float]:
    """Expected HR@1-of-20 of each row when items are ranked by cosine to the history's mean vector
    (vectors [N, D], L2-normalised), with the evaluation's own ranking rules (history left out).
    With ``popularity`` [N] and ``weight``, by ``z(cosine) + weight * z(popularity)`` instead."""
    if not rows:
        return []
    n_items = vectors.shape[0]
    item_text = torch.cat([torch.from_numpy(vectors), torch.zeros(1, vectors.shape[1])])  # [N + 1, D]
    seqs = pad_histories([r.history for r in rows], last, n_items)  # [B, last]
    scores = content_scores(item_text, seqs, last)  # [B, N]
    if popularity is not None and weight:
        popularity_row = torch.as_tensor(popularity, dtype=scores.dtype).unsqueeze(0)  # [1, N]
        scores = standardize(scores) + weight * standardize(popularity_row)
    return expected_hr_at_1_of(ranking_stats_from_scores(scores, rows))


def text_popularity(vectors: np.ndarray, counts: np.ndarray, fit_on: np.ndarray) -> np.ndarray:
    """[N] log(1 + count) predicted from each item's text vector (vectors [N, D]) by the ridge
    regression TextRec's cold scores use, fitted on the items where ``fit_on`` [N] is true."""
    item_text = torch.from_numpy(vectors)
    coef, intercept = fit_text_popularity(item_text, torch.from_numpy(counts), torch.from_numpy(fit_on))
    return (item_text @ coef + intercept).numpy()


def popularity_hr1(counts: np.ndarray, rows: Sequence[Row]) -> list[float]:
    """Expected HR@1-of-20 of each row when every user gets the same ranking, by ``counts`` [N]."""
    if not rows:
        return []
    scores = torch.as_tensor(counts, dtype=torch.float32).expand(len(rows), -1).clone()  # [B, N]
    return expected_hr_at_1_of(ranking_stats_from_scores(scores, rows))


def target_counts(rows: Sequence[Row], n_items: int) -> np.ndarray:
    """[N] how often each item is a row's target."""
    counts = Counter(r.next for r in rows)
    return np.array([counts[i] for i in range(n_items)], dtype=np.float64)


def _summary(per_row: list[float]) -> dict[str, Any]:
    if not per_row:
        return {"rows": 0, "hr1_expected": None, "ci95": None}
    low, high = bootstrap_interval(per_row)
    return {"rows": len(per_row), "hr1_expected": metrics.mean(per_row), "ci95": [low, high]}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--fraction", type=float, default=0.1, help="Share of items held out.")
    parser.add_argument("--seeds", type=int, default=1, help="Hold-out seeds 0..K-1, pooled.")
    parser.add_argument("--last", type=int, default=5, help="History items in the user's profile.")
    parser.add_argument(
        "--popularity-weights",
        type=lambda text: [float(w) for w in text.split(",")],
        default=[],
        help="Comma-separated weights of the text-predicted popularity term (best on validation: selected).",
    )
    parser.add_argument("--json", action="store_true", help="End with one JSON object.")
    args = parser.parse_args(argv)

    settings = get_settings()
    data = Dataset.open(settings.datasets_dir, args.dataset)
    cache = embedding_cache_path(settings.data_dir, data.name, data.fingerprint)
    vectors = cached_text_vectors(item_texts(data.items), cache_path=cache)  # [n_items, D]
    counts = target_counts(data.rows("train"), data.n_items)  # [n_items], held-out items included
    held_outs = [held_out_items(data.n_items, args.fraction, seed) for seed in range(args.seeds)]
    predicted = [  # per hold-out: fitted on its warm items only
        text_popularity(vectors, counts, np.array([i not in held for i in range(data.n_items)]))
        for held in held_outs
    ]
    out: dict[str, Any] = {
        "dataset": data.name,
        "fraction": args.fraction,
        "seeds": args.seeds,
        "last": args.last,
    }
    weights = sorted({0.0, *args.popularity_weights})
    by_weight: dict[float, dict[str, Any]] = {w: {} for w in weights}
    per_row_of: dict[float, list[float]] = {}
    for split in ("val", "test"):
        split_rows = data.eval_rows(split)[0]
        per_hold_out = [cold_rows(split_rows, held) for held in held_outs]
        rows = [r for hold_out_rows in per_hold_out for r in hold_out_rows]
        for weight in weights:
            per_row = [
                hr
                for hold_out_rows, popularity in zip(per_hold_out, predicted, strict=True)
                for hr in content_hr1(vectors, hold_out_rows, args.last, popularity, weight)
            ]
            by_weight[weight][split] = _summary(per_row)
            per_row_of[weight] = per_row
        for weight in weights[1:]:  # paired with the content cosine alone: same rows, same candidates
            diff = [a - b for a, b in zip(per_row_of[weight], per_row_of[0.0], strict=True)]
            by_weight[weight][split]["paired_vs_content"] = _summary(diff)
        out[split] = by_weight[0.0][split]  # the content cosine alone, as before
        out.setdefault("popularity_oracle", {})[split] = _summary(popularity_hr1(counts, rows))
        with_content = content_hr1(vectors, rows, args.last, np.log1p(counts), 1.0)
        out.setdefault("popularity_oracle_with_content", {})[split] = _summary(with_content)
        if not args.json:
            for weight in weights:
                summary = by_weight[weight][split]
                if summary["rows"]:
                    low, high = summary["ci95"]
                    figure = f"{summary['hr1_expected']:.3f} [{low:.3f}, {high:.3f}]"
                    print(f"{split}: {summary['rows']} cold rows, popularity weight {weight:g}: {figure}")
    if args.popularity_weights:
        selected = max(weights, key=lambda w: by_weight[w]["val"]["hr1_expected"] or 0.0)
        out["text_popularity"] = [{"weight": w, **by_weight[w], "selected": w == selected} for w in weights]
    if args.json:
        print(json.dumps(out))
    else:
        oracle, with_content = out["popularity_oracle"]["test"], out["popularity_oracle_with_content"]["test"]
        if oracle["rows"]:
            print(f"test: popularity oracle (true counts, not a method) {oracle['hr1_expected']:.3f}, "
                  f"with the content cosine {with_content['hr1_expected']:.3f}")  # fmt: skip
    return out


if __name__ == "__main__":
    main()
