"""Ranking metrics as pure functions (no tensors, no randomness)."""

from __future__ import annotations

import math
from collections.abc import Sequence


def hr_at_1(scores: Sequence[float], candidates: Sequence[int], target: int) -> float:
    """1.0 if the top-scored candidate is the target (ties go to the earlier candidate), else 0.0."""
    if len(scores) != len(candidates) or not candidates:
        raise ValueError("scores and candidates must be non-empty and of equal length")
    best = max(range(len(candidates)), key=lambda i: (scores[i], -i))
    return 1.0 if candidates[best] == target else 0.0


def rank_of(scores: Sequence[float], index: int) -> int:
    """1-based rank of ``scores[index]`` among ``scores``: 1 + how many score strictly higher, so
    ties share the better rank. The one tie rule of reward ranks (the loop's verdict, Table 5's
    reward-model baseline)."""
    return 1 + sum(1 for s in scores if s > scores[index])


def ranks(scores: Sequence[float]) -> list[int]:
    """:func:`rank_of` of every score."""
    return [rank_of(scores, i) for i in range(len(scores))]


def target_rank(scores: Sequence[float], target: int) -> int:
    """0-based rank of ``target`` when all items are sorted by descending score, ties by id.

    ``scores`` holds one score per item id; items masked with ``-inf`` rank below every real score.
    """
    t = scores[target]
    if t == -math.inf:
        return len(scores)  # a masked target is never retrieved
    return sum(1 for item, s in enumerate(scores) if s > t or (s == t and item < target))


def hit_at_k(rank: int, k: int) -> float:
    return 1.0 if rank < k else 0.0


def ndcg_at_k(rank: int, k: int) -> float:
    """NDCG@k with one relevant item: 1 / log2(rank + 2) inside the top k, else 0."""
    return 1.0 / math.log2(rank + 2) if rank < k else 0.0


def expected_hr_at_1(n_outranking: int, pool_size: int, n_negatives: int = 19) -> float:
    """Probability that the target beats ``n_negatives`` items drawn uniformly without replacement
    from ``pool_size`` items, ``n_outranking`` of which score higher than the target.

    This is HR@1-of-(n_negatives + 1) averaged over *every* possible candidate draw: the same
    quantity the sampled protocol estimates, without its sampling noise (used for model selection).
    """
    if not 0 <= n_outranking <= pool_size or n_negatives > pool_size:
        raise ValueError("need 0 <= n_outranking <= pool_size and n_negatives <= pool_size")
    prob = 1.0
    for i in range(n_negatives):
        prob *= (pool_size - n_outranking - i) / (pool_size - i)
        if prob <= 0.0:
            return 0.0
    return prob


def mean(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("mean of no values")
    return sum(values) / len(values)


def std(values: Sequence[float]) -> float:
    """Population standard deviation (the spread of the given runs, e.g. candidate seeds)."""
    mu = mean(values)
    return math.sqrt(sum((v - mu) ** 2 for v in values) / len(values))
