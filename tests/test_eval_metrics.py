"""Evaluation metrics on hand-made cases with exact expected numbers."""

from __future__ import annotations

import pytest

from lab.eval.metrics import (
    Confusion,
    bootstrap_interval,
    confusion,
    gini,
    hit_rate,
    macro_prf,
    mean_popularity_percentile,
    mean_std,
    micro_prf,
    popularity_percentiles,
    recommendation_gini,
)


def test_confusion_counts_each_cell() -> None:
    predicted = [True, True, False, False, True]
    truth = [True, False, True, False, True]
    assert confusion(predicted, truth) == Confusion(tp=2, fp=1, fn=1, tn=1)


def test_confusion_rejects_misaligned_lists() -> None:
    with pytest.raises(ValueError, match="2 labels but truth has 3"):
        confusion([True, False], [True, False, True])


def test_micro_pools_items_and_macro_averages_users() -> None:
    # user A: tp=2 fp=0 fn=2 -> P=1, R=0.5, F1=2/3 ; user B: tp=1 fp=3 fn=0 -> P=0.25, R=1, F1=0.4
    user_a = confusion([True, True, False, False], [True, True, True, True])
    user_b = confusion([True, True, True, True], [True, False, False, False])
    micro = micro_prf([user_a, user_b])  # tp=3 fp=3 fn=2
    assert micro.precision == pytest.approx(0.5)
    assert micro.recall == pytest.approx(0.6)
    assert micro.f1 == pytest.approx(2 * 0.5 * 0.6 / 1.1)
    macro = macro_prf([user_a, user_b])
    assert macro.precision == pytest.approx(0.625)
    assert macro.recall == pytest.approx(0.75)
    assert macro.f1 == pytest.approx((2 / 3 + 0.4) / 2)


def test_judge_that_predicts_nothing_scores_zero_not_nan() -> None:
    nothing = confusion([False, False], [True, False])
    assert (nothing.precision, nothing.recall, nothing.f1) == (0.0, 0.0, 0.0)
    assert macro_prf([]).f1 == 0.0


def test_hit_rate_and_spread() -> None:
    assert hit_rate([1, 2, 3, 4], [1, 0, 3, 0]) == 0.5
    mean, std = mean_std([0.2, 0.4])
    assert mean == pytest.approx(0.3)
    assert std == pytest.approx(0.1)


def test_gini_extremes_and_a_known_value() -> None:
    assert gini([5, 5, 5, 5]) == 0.0
    assert gini([0, 0, 0, 8]) == pytest.approx(0.75)  # (n-1)/n: everything on one item
    # sorted [1, 2, 3]: (-2*1 + 0*2 + 2*3) / (3 * 6) = 4/18
    assert gini([3, 1, 2]) == pytest.approx(4 / 18)
    with pytest.raises(ValueError):
        gini([1, -1])


def test_recommendation_gini_counts_never_recommended_items() -> None:
    # items 0..3, recommended 0,0,1 -> counts [2, 1, 0, 0] -> sorted [0,0,1,2]:
    # (-3*0 - 1*0 + 1*1 + 3*2) / (4 * 3) = 7/12
    assert recommendation_gini([0, 0, 1], n_items=4) == pytest.approx(7 / 12)


def test_popularity_percentiles_use_mid_ranks() -> None:
    # counts: item0=10, item1=0, item2=5, item3=5 -> order 1 < {2,3} < 0
    percentiles = popularity_percentiles({0: 10, 2: 5, 3: 5}, n_items=4)
    assert percentiles == pytest.approx([1.0, 0.0, 0.5, 0.5])
    assert popularity_percentiles({}, n_items=3) == pytest.approx([0.5, 0.5, 0.5])
    assert mean_popularity_percentile([0, 1], percentiles) == pytest.approx(0.5)


def test_bootstrap_interval_brackets_the_mean_and_narrows_with_more_users():
    hits = [1.0] * 40 + [0.0] * 60
    low, high = bootstrap_interval(hits)
    assert low < 0.4 < high
    assert 0.15 < high - low < 0.25  # about 4 standard errors of a 100-user HR@1 (0.049)
    more_low, more_high = bootstrap_interval(hits * 4)
    assert more_high - more_low < (high - low) * 0.6
    assert bootstrap_interval(hits) == (low, high)  # deterministic
    assert bootstrap_interval([]) == (0.0, 0.0)
