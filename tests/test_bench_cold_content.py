"""bench.cold_content: the training-free cold-start reference ranks by cosine to the recent history."""

from __future__ import annotations

import numpy as np
import pytest

from bench.cold_content import content_hr1
from recmodels.dataset import Row


def _vectors(n: int = 30) -> np.ndarray:
    vectors = np.random.default_rng(0).normal(size=(n, 8))
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _row(history: list[int], target: int) -> Row:
    return Row(history=tuple(history), next=target, len_seq=len(history))


def test_a_target_like_the_recent_history_wins_and_its_opposite_loses():
    vectors = _vectors()
    vectors[5] = vectors[1]  # the target's text equals the last history item's
    vectors[6] = -vectors[1]  # the opposite: every other item scores higher
    like, unlike = content_hr1(vectors, [_row([0, 1], 5), _row([0, 1], 6)], last=1)
    assert like == pytest.approx(1.0)
    assert unlike == 0.0


def test_only_the_last_items_make_the_profile_and_history_items_are_never_negatives():
    vectors = _vectors()
    near = vectors[2] + 0.05 * vectors[3]
    vectors[7] = near / np.linalg.norm(near)
    # The profile is item 2 alone. Item 2 itself scores above the target (cosine 1), but it is in the
    # history, so it is never drawn as a negative and does not count against the target.
    (hr,) = content_hr1(vectors, [_row([9, 2], 7)], last=1)
    assert hr == pytest.approx(1.0)
    (older,) = content_hr1(vectors, [_row([2, 9], 7)], last=1)
    assert older < 1.0
