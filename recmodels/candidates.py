"""Candidate lists of the LLaRA / AFL evaluation protocol."""

from __future__ import annotations

import random
from collections.abc import Sequence


def sample_candidates(
    history: Sequence[int], target: int, n_items: int, rng: random.Random, n: int = 20
) -> list[int]:
    """The target plus ``n - 1`` items drawn uniformly (``random.sample``) from the items that are
    neither in the history nor the target, shuffled.

    The pool is built in id order and the draws come from ``rng`` only, so the same seed and rows
    in the same order give the same lists (LLaRA draws from one seeded generator, row by row).
    """
    if not 0 <= target < n_items:
        raise ValueError(f"target {target} outside the catalog 0..{n_items - 1}")
    excluded = set(history) | {target}
    pool = [item for item in range(n_items) if item not in excluded]
    if len(pool) < n - 1:
        raise ValueError(f"need {n - 1} negatives but only {len(pool)} items are outside the history")
    candidates = [*rng.sample(pool, n - 1), target]
    rng.shuffle(candidates)
    return candidates
