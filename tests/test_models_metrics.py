"""Metrics and candidate sampling: exact on hand-made cases and on the published LLaRA lists."""

from __future__ import annotations

import itertools
import json
import math
import random
from pathlib import Path

import pytest

from recmodels import metrics
from recmodels.candidates import negative_pool_size, sample_candidates


def test_hr_at_1_is_the_top_candidate_with_ties_to_the_earlier_one() -> None:
    assert metrics.hr_at_1([0.1, 0.9, 0.3], [7, 8, 9], target=8) == 1.0
    assert metrics.hr_at_1([0.1, 0.9, 0.3], [7, 8, 9], target=9) == 0.0
    assert metrics.hr_at_1([0.5, 0.5], [3, 4], target=3) == 1.0
    assert metrics.hr_at_1([0.5, 0.5], [3, 4], target=4) == 0.0
    with pytest.raises(ValueError):
        metrics.hr_at_1([0.1], [1, 2], target=1)


def test_target_rank_sorts_by_score_then_id_and_masked_targets_never_rank() -> None:
    scores = [0.2, 0.9, 0.5, 0.5, -math.inf]
    assert metrics.target_rank(scores, 1) == 0
    assert metrics.target_rank(scores, 2) == 1
    assert metrics.target_rank(scores, 3) == 2  # tie with item 2, which has the smaller id
    assert metrics.target_rank(scores, 0) == 3
    assert metrics.target_rank(scores, 4) == len(scores)


def test_hit_and_ndcg_at_k_exact() -> None:
    assert metrics.hit_at_k(0, 10) == 1.0
    assert metrics.hit_at_k(9, 10) == 1.0
    assert metrics.hit_at_k(10, 10) == 0.0
    assert metrics.ndcg_at_k(0, 10) == 1.0
    assert metrics.ndcg_at_k(1, 10) == pytest.approx(1 / math.log2(3))
    assert metrics.ndcg_at_k(9, 10) == pytest.approx(1 / math.log2(11))
    assert metrics.ndcg_at_k(10, 10) == 0.0


@pytest.mark.parametrize(("pool", "above", "negatives"), [(3, 1, 1), (6, 2, 3), (8, 0, 4), (7, 5, 3)])
def test_expected_hr_at_1_equals_enumeration_of_every_draw(pool: int, above: int, negatives: int) -> None:
    # Items 0..above-1 outrank the target; a draw is a hit when it contains none of them.
    draws = list(itertools.combinations(range(pool), negatives))
    hits = sum(1 for draw in draws if all(item >= above for item in draw))
    assert metrics.expected_hr_at_1(above, pool, negatives) == pytest.approx(hits / len(draws))


def test_mean_and_population_std() -> None:
    assert metrics.mean([1.0, 2.0, 3.0]) == 2.0
    assert metrics.std([1.0, 3.0]) == 1.0
    assert metrics.std([0.4]) == 0.0
    with pytest.raises(ValueError):
        metrics.mean([])


def test_candidates_hold_the_target_once_and_never_a_history_item() -> None:
    rng = random.Random(7)
    for _ in range(200):
        history = rng.sample(range(30), 10)
        target = rng.choice([i for i in range(30) if i not in history])
        cands = sample_candidates(history, target, 30, rng, n=20)
        assert len(cands) == 20 == len(set(cands))
        assert cands.count(target) == 1
        assert not set(cands) & set(history)


def test_candidates_are_reproducible_per_seed() -> None:
    def draw(seed: int) -> list[list[int]]:
        rng = random.Random(seed)
        return [sample_candidates([1, 2, 3], t, 500, rng) for t in (10, 20, 30)]

    assert draw(1) == draw(1)
    assert draw(1) != draw(2)


def test_candidates_reject_a_catalog_too_small() -> None:
    with pytest.raises(ValueError, match="negatives"):
        sample_candidates(list(range(10)), 10, 20, random.Random(0), n=20)


def test_a_target_in_its_own_history_stays_the_target_and_a_small_pool_is_drawn_whole() -> None:
    history = [3, 5, 3, 7]  # 3 consumed twice, and again next
    cands = sample_candidates(history, 3, 30, random.Random(0), n=20)
    assert cands.count(3) == 1 and len(cands) == 20 and not set(cands) & {5, 7}
    short = sample_candidates(list(range(10)), 10, 20, random.Random(0), n=20, fewer=True)
    assert sorted(short) == list(range(10, 20))  # the 9 items outside the history, and the target
    assert negative_pool_size(list(range(10)), 10, 20) == 9
    assert negative_pool_size(history, 3, 30) == 27


def test_expected_hr1_of_a_pool_smaller_than_19_draws_all_of_it() -> None:
    from recmodels.evaluation import RankingStats, expected_hr_at_1_of

    stats = [RankingStats(0, 0, 5), RankingStats(2, 2, 5), RankingStats(30, 1, 27)]
    assert expected_hr_at_1_of(stats) == [1.0, 0.0, pytest.approx(metrics.expected_hr_at_1(1, 27, 19))]


def test_candidates_reproduce_afl_lastfm_seed_303_lists(shared_data: Path) -> None:
    """AFL's LastFM run drew its candidates with random.seed(303), rows in file order."""
    rows = [json.loads(line) for line in (shared_data / "lastfm" / "test_candidates_seed303.jsonl").open()]
    rng = random.Random(303)
    drawn = [sample_candidates(r["history"], r["next"], 4606, rng) for r in rows]
    assert drawn == [r["candidates"] for r in rows]


def test_candidate_draws_are_the_ones_a_listed_pool_gives():
    """The pool is no longer listed per draw: the same lists (and the same generator state after) as
    random.sample over the listed pool, below and above sample's own small-pool threshold, with
    history ids outside the catalog."""

    def listed(history, target, n_items, rng, n):
        excluded = set(history) | {target}
        pool = [item for item in range(n_items) if item not in excluded]
        candidates = [*rng.sample(pool, min(n - 1, len(pool))), target]
        rng.shuffle(candidates)
        return candidates

    pick = random.Random(1)
    for trial in range(500):
        n_items = pick.choice([20, 60, 86, 100, 300, 2000])
        history = [pick.randrange(-3, n_items + 5) for _ in range(pick.randrange(0, 40))]
        target, n = pick.randrange(n_items), pick.choice([5, 20])
        ours, theirs = random.Random(trial), random.Random(trial)
        assert sample_candidates(history, target, n_items, ours, n, fewer=True) == listed(
            history, target, n_items, theirs, n
        )
        assert ours.getstate() == theirs.getstate()
