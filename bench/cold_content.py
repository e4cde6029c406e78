"""A training-free reference for the cold-start protocol: rank by text similarity to the history.

Each item is scored by the cosine between its MiniLM text vector (the cached vectors TextRec and
steering use) and the mean vector of the user's last ``--last`` history items. Nothing is trained,
so the held-out items are exactly as cold as under :mod:`recmodels.coldstart`: the score never
sees an interaction with them. The rows and the metric are the protocol's: the rows of each split
whose target is held out, pooled over hold-out seeds ``0 .. K-1``, expected HR@1-of-20 against
uniform negatives (every item outside the history), with a 95 % bootstrap interval over rows.

It answers how much of a cold item's chance a text-aware model should get from text alone:
TextRec's text-only path has to reach at least this.

    python -m bench.cold_content --dataset steam --fraction 0.1 --seeds 5 --json
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from app.eval.metrics import bootstrap_interval
from app.settings import get_settings
from recmodels import metrics
from recmodels.base import pad_histories
from recmodels.coldstart import cold_rows, held_out_items
from recmodels.dataset import Dataset, Row
from recmodels.evaluation import expected_hr_at_1_of, ranking_stats_from_scores
from recmodels.text import cached_text_vectors, content_scores, embedding_cache_path, item_texts


def content_hr1(vectors: np.ndarray, rows: Sequence[Row], last: int) -> list[float]:
    """Expected HR@1-of-20 of each row when items are ranked by cosine to the history's mean vector
    (vectors [N, D], L2-normalised), with the evaluation's own ranking rules (history left out)."""
    if not rows:
        return []
    n_items = vectors.shape[0]
    item_text = torch.cat([torch.from_numpy(vectors), torch.zeros(1, vectors.shape[1])])  # [N + 1, D]
    seqs = pad_histories([r.history for r in rows], last, n_items)  # [B, last]
    return expected_hr_at_1_of(ranking_stats_from_scores(content_scores(item_text, seqs, last), rows))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--fraction", type=float, default=0.1, help="Share of items held out.")
    parser.add_argument("--seeds", type=int, default=1, help="Hold-out seeds 0..K-1, pooled.")
    parser.add_argument("--last", type=int, default=5, help="History items in the user's profile.")
    parser.add_argument("--json", action="store_true", help="End with one JSON object.")
    args = parser.parse_args(argv)

    settings = get_settings()
    data = Dataset.open(settings.datasets_dir, args.dataset)
    cache = embedding_cache_path(settings.data_dir, data.name, data.fingerprint)
    vectors = cached_text_vectors(item_texts(data.items), cache_path=cache)  # [n_items, D]
    out: dict[str, Any] = {
        "dataset": data.name,
        "fraction": args.fraction,
        "seeds": args.seeds,
        "last": args.last,
    }
    held_outs = [held_out_items(data.n_items, args.fraction, seed) for seed in range(args.seeds)]
    for split in ("val", "test"):
        split_rows = data.eval_rows(split)[0]
        rows = [r for held in held_outs for r in cold_rows(split_rows, held)]
        per_row = content_hr1(vectors, rows, args.last)
        if not per_row:
            out[split] = {"rows": 0, "hr1_expected": None, "ci95": None}
            continue
        low, high = bootstrap_interval(per_row)
        out[split] = {"rows": len(rows), "hr1_expected": metrics.mean(per_row), "ci95": [low, high]}
        if not args.json:
            print(f"{split}: {len(rows)} cold rows, expected HR@1-of-20 {out[split]['hr1_expected']:.3f} "
                  f"[{low:.3f}, {high:.3f}]")  # fmt: skip
    if args.json:
        print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
