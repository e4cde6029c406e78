"""bench.cold_content: the training-free cold-start reference ranks by cosine to the recent history."""

from __future__ import annotations

import numpy as np
import pytest

from bench.cold_content import content_hr1, popularity_hr1, text_popularity
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


def test_text_popularity_learns_from_the_fitted_items_only():
    vectors = _vectors(40)
    counts = np.expm1(2.0 + 3.0 * vectors[:, 0])  # log(1 + count) is linear in the first text coordinate
    fit_on = np.arange(40) < 30
    predicted = text_popularity(vectors, counts, fit_on)
    held_out = np.arange(30, 40)
    # The held-out items' popularity is predicted from their text: ordered like the truth.
    assert np.corrcoef(predicted[held_out], np.log1p(counts[held_out]))[0, 1] > 0.9
    # Their counts are never read: changing them changes nothing.
    counts[held_out] = 1e9
    np.testing.assert_allclose(text_popularity(vectors, counts, fit_on), predicted)


def test_popularity_ranks_the_most_counted_item_first_for_every_user():
    counts = np.arange(30, dtype=np.float64)  # item 29 is the most popular, item 0 the least
    top, bottom = popularity_hr1(counts, [_row([3, 4], 29), _row([3, 4], 0)])
    assert top == pytest.approx(1.0)
    assert bottom == 0.0


def test_the_popularity_term_lifts_a_popular_target_the_history_alone_misses():
    vectors = _vectors()
    rows = [_row([0, 1], 5)]
    popularity = np.zeros(30)
    popularity[5] = 100.0  # far above every other item
    (without,) = content_hr1(vectors, rows, last=1)
    (with_term,) = content_hr1(vectors, rows, last=1, popularity=popularity, weight=2.0)
    assert without < 0.5
    assert with_term == pytest.approx(1.0)
