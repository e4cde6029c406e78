"""Candidate lists of the LLaRA / AFL evaluation protocol."""

from __future__ import annotations

import random
from collections.abc import Sequence


def sample_candidates(
    history: Sequence[int], target: int, n_items: int, rng: random.Random, n: int = 20, *, fewer: bool = False
) -> list[int]:
    """The target plus ``n - 1`` items drawn uniformly (``random.sample``) from the items that are
    neither in the history nor the target, shuffled.

    The target may itself be in the history (repeat consumption): it is still the target, and the
    negatives still come from outside the history. When fewer than ``n - 1`` items are outside it (a
    small catalog, a long history), ``fewer`` takes them all (a shorter list); otherwise it raises.

    The pool is built in id order and the draws come from ``rng`` only, so the same seed and rows
    in the same order give the same lists (LLaRA draws from one seeded generator, row by row).
    """
    if not 0 <= target < n_items:
        raise ValueError(f"target {target} outside the catalog 0..{n_items - 1}")
    pool = _ItemsOutside(set(history) | {target}, n_items)
    if len(pool) < n - 1 and not fewer:
        raise ValueError(f"need {n - 1} negatives but only {len(pool)} items are outside the history")
    candidates = [*rng.sample(pool, min(n - 1, len(pool))), target]
    rng.shuffle(candidates)
    return candidates


class _ItemsOutside(Sequence[int]):
    """The ids 0..n_items-1 not in ``excluded``, in id order, without listing them: ``random.sample``
    draws ~20 positions from a pool of 10^4-10^5 items (indexing it, or listing it when it is small), so
    a list built per draw cost O(catalog) of Python for the same draws (issue 45)."""

    def __init__(self, excluded: set[int], n_items: int):
        self._excluded = sorted(item for item in excluded if 0 <= item < n_items)
        self._size = n_items - len(self._excluded)

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, position: int) -> int:  # type: ignore[override]  # no slices: sample never asks
        if not 0 <= position < self._size:
            raise IndexError(position)
        item = position
        for skipped in self._excluded:  # each excluded id at or below the answer moves it up by one
            if skipped > item:
                break
            item += 1
        return item


def negative_pool_size(history: Sequence[int], target: int, n_items: int) -> int:
    """How many items :func:`sample_candidates` may draw negatives from (outside history and target)."""
    return n_items - len(set(history) | {target})
