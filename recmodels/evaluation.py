"""Offline evaluation of a trained scorer under the LLaRA / AFL protocol.

- HR@1-of-20: per test row, 20 candidates (target + 19 uniform negatives outside the
  history), the model's top candidate must be the target; averaged over candidate seeds.
- Hit@10 / NDCG@10: full ranking over the whole catalog with history items masked.
- Rows with ``len_seq < 3`` are dropped first, as the upstream loaders do.

Logs with repeat consumption (a row's next item is already in its history) and small catalogs
need a rule the paper's datasets never did: such a row is kept and the target stays the target.
Candidates never include a history item, so its 19 negatives come from outside the history, and
the target itself is scored as any candidate (HR@1-of-20 counts it when it tops them). In the full
ranking history items are masked, the target among them, so such a row is a miss at Hit@10 and
NDCG@10. A row with fewer than 19 items outside its history gets all of them as negatives (a
shorter list; the expected HR@1 likewise draws all of them).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from recmodels import metrics
from recmodels.base import SequentialRecommender, pad_histories
from recmodels.candidates import sample_candidates
from recmodels.dataset import MIN_EVAL_LEN_SEQ, Dataset, Row
from recmodels.scorer import Scorer

DEFAULT_SEEDS = (0, 1, 2, 3, 4)
N_CANDIDATES = 20
_BATCH = 512
SCORE_BLOCK_ELEMENTS = 1 << 26
"""Most scores a [rows, N] block holds at once (256 MB of float32; the comparisons built from it
are a quarter of that each): at a million items 67 rows a block, where 512 rows had made 2 GB
blocks. Not much smaller: each block reads the whole item table once."""


def rows_per_block(n_items: int, most: int = _BATCH, cells: int | None = None) -> int:
    """Rows of one [rows, N] score block over a catalog of ``n_items``: at most ``most`` and
    ``cells`` scores (default :data:`SCORE_BLOCK_ELEMENTS`), at least 1."""
    cells = SCORE_BLOCK_ELEMENTS if cells is None else cells
    return max(1, min(most, cells // max(1, n_items)))


@dataclass(frozen=True)
class RankingStats:
    """Where one row's target lands in the full ranking."""

    rank: int  # 0-based among all items, history masked (n_items if the target is in the history)
    n_outranking: int  # candidate-pool items scored above the target
    pool_size: int  # items that may be drawn as negatives (not in history, not the target)


@torch.no_grad()
def full_ranking_stats(model: SequentialRecommender, rows: Sequence[Row]) -> list[RankingStats]:
    was_training = model.training
    model.eval()
    stats: list[RankingStats] = []
    block = rows_per_block(model.n_items)
    for start in range(0, len(rows), block):
        chunk = rows[start : start + block]
        seqs = pad_histories([r.history for r in chunk], model.max_len, model.pad_id)  # [B, T]
        device = next(model.parameters()).device  # a model training on a GPU is validated there
        stats += ranking_stats_from_scores(model.score_all(seqs.to(device)).cpu(), chunk)
    model.train(was_training)
    return stats


@torch.no_grad()
def ranking_stats_from_scores(scores: torch.Tensor, rows: Sequence[Row]) -> list[RankingStats]:
    """Where each row's target lands under per-item scores ``scores`` [B, N] (any model or mix of
    models: higher is better). History items are left out; ties go to the lower item id. Rows are
    taken in blocks of :func:`rows_per_block`, so the masks stay small at any catalog size."""
    _B, N = scores.shape  # batch, catalog
    block = rows_per_block(N, most=len(rows) or 1)
    if len(rows) > block:
        return [
            stat
            for start in range(0, len(rows), block)
            for stat in ranking_stats_from_scores(scores[start : start + block], rows[start : start + block])
        ]
    if not rows:
        return []
    targets = torch.as_tensor([r.next for r in rows])  # [B]
    target_scores = scores.gather(1, targets.unsqueeze(1))  # [B, 1]
    # Items outranking the target over the whole catalog: scored above it, or tied with a lower id.
    # The target itself is neither. A target scored -inf (its own history masked by the scores)
    # ties with no one: -inf items are never candidates to count. Counted in numpy: torch's sum of
    # a bool [67, 10^6] took 500 ms, numpy's count_nonzero 47.
    values, thresholds = scores.detach().cpu().numpy(), target_scores.detach().cpu().numpy()  # [B, N], [B, 1]
    n_above = torch.from_numpy(np.count_nonzero(values > thresholds, axis=1).astype(np.int64))  # [B]
    tied = np.count_nonzero(values == thresholds, axis=1)  # [B], the target among them
    for i in np.flatnonzero((tied > 1) & (thresholds[:, 0] != -np.inf)).tolist():  # rare but for ties
        n_above[i] += int(np.count_nonzero(values[i, : rows[i].next] == thresholds[i, 0]))
    # History items are no candidates: take back those counted above (each item once).
    others = [sorted(set(r.history) - {r.next}) for r in rows]
    history_rows = torch.as_tensor([i for i, items in enumerate(others) for _ in items], dtype=torch.long)
    history_items = torch.as_tensor([item for items in others for item in items], dtype=torch.long)
    if len(history_items):
        history_scores, their_targets = scores[history_rows, history_items], target_scores[history_rows, 0]
        counted = (history_scores > their_targets) | (
            (history_scores == their_targets)
            & (history_items < targets[history_rows])
            & (their_targets != float("-inf"))
        )
        n_above -= torch.bincount(history_rows[counted], minlength=len(rows))
    return ranking_stats_of_counts(n_above.tolist(), rows, N)


def ranking_stats_of_counts(
    n_outranking: Sequence[int], rows: Sequence[Row], n_items: int
) -> list[RankingStats]:
    """Each row's :class:`RankingStats` from how many items outrank its target (history items and
    the target never count): the pool is the catalog less the row's other history items and the
    target; a target in its own history ranks last."""
    stats: list[RankingStats] = []
    for row, n in zip(rows, n_outranking, strict=True):
        pool = n_items - len(set(row.history) - {row.next}) - 1
        stats.append(RankingStats(n_items if row.next in row.history else n, n, pool))
    return stats


def expected_hr_at_1_of(stats: Sequence[RankingStats]) -> list[float]:
    """Per row: the exact HR@1-of-20 averaged over every draw of the 19 negatives (all of the pool
    when it holds fewer: see the module docstring)."""
    return [
        metrics.expected_hr_at_1(s.n_outranking, s.pool_size, min(N_CANDIDATES - 1, s.pool_size))
        for s in stats
    ]


def ranking_summary(stats: Sequence[RankingStats], k: int = 10) -> dict[str, float]:
    """Hit@k, NDCG@k and the expected HR@1-of-20 (exact mean over all candidate draws)."""
    return {
        f"hit{k}": metrics.mean([metrics.hit_at_k(s.rank, k) for s in stats]),
        f"ndcg{k}": metrics.mean([metrics.ndcg_at_k(s.rank, k) for s in stats]),
        "hr1_expected": metrics.mean(expected_hr_at_1_of(stats)),
    }


def sampled_hits(scorer: Scorer, rows: Sequence[Row], seed: int) -> list[float]:
    """Per row: 1.0 if the target tops its 20 candidates drawn from ``random.Random(seed)`` (rows in
    order), else 0.0. Two models over one catalog get the same candidates: a paired comparison.
    A row with fewer than 19 items outside its history is scored against all of them."""
    rng = random.Random(seed)
    candidate_lists = [
        sample_candidates(r.history, r.next, scorer.n_items, rng, N_CANDIDATES, fewer=True) for r in rows
    ]
    hits = [0.0] * len(rows)
    by_length: dict[int, list[int]] = {}  # candidate lists are scored in batches of one length
    for index, cands in enumerate(candidate_lists):
        by_length.setdefault(len(cands), []).append(index)
    for indices in by_length.values():
        for start in range(0, len(indices), _BATCH):
            chunk = indices[start : start + _BATCH]
            cands = [candidate_lists[i] for i in chunk]
            scores = scorer.score_batch([rows[i].history for i in chunk], cands)
            for i, s, c in zip(chunk, scores, cands, strict=True):
                hits[i] = metrics.hr_at_1(s, c, rows[i].next)
    return hits


def evaluate_model(
    scorer: Scorer,
    dataset: Dataset,
    split: str = "test",
    seeds: Sequence[int] = DEFAULT_SEEDS,
    rows: Sequence[Row] | None = None,
) -> dict[str, Any]:
    """HR@1-of-20 mean/std over candidate seeds, full-ranking Hit@10/NDCG@10, and row counts.

    ``rows`` (default: the split's evaluation rows) evaluates a subset, e.g. the cold-start rows.
    ``per_row`` holds each row's expected HR@1 and its sampled HR@1 averaged over the seeds, in
    row order, for paired comparisons and bootstrap intervals over users.
    """
    n_dropped = 0
    if rows is None:
        rows, n_dropped = dataset.eval_rows(split)
    if not rows:
        raise ValueError(f"{dataset.root}: split {split!r} has no rows with len_seq >= {MIN_EVAL_LEN_SEQ}")
    per_seed_hits = [sampled_hits(scorer, rows, seed) for seed in seeds]
    per_seed = [metrics.mean(hits) for hits in per_seed_hits]
    stats = full_ranking_stats(scorer.model, rows)
    summary = ranking_summary(stats)
    return {
        "model": scorer.info.model_name,
        "members": scorer.info.extra.get("members", 1),  # > 1: a seed ensemble
        "dataset": dataset.name,
        "split": split,
        "hr1_mean": metrics.mean(per_seed),
        "hr1_std": metrics.std(per_seed),
        "hr1_per_seed": dict(zip(map(str, seeds), per_seed, strict=True)),
        "hr1_expected": summary["hr1_expected"],
        "hit10": summary["hit10"],
        "ndcg10": summary["ndcg10"],
        "n_rows": len(rows),
        "n_dropped": n_dropped,
        "note": f"rows with len_seq < {MIN_EVAL_LEN_SEQ} dropped, as upstream",
        "per_row": {
            "hr1_expected": expected_hr_at_1_of(stats),
            "hr1_sampled": [metrics.mean(hits) for hits in zip(*per_seed_hits, strict=True)],
        },
    }
