"""Filter, matcher, attenuator, aggregator and the planner on hand-made candidates.

The recommender here is a real SequentialRecommender with hand-set item vectors (user state =
mean of the history's vectors), so every expected ranking can be worked out by hand.
"""

from __future__ import annotations

import pytest
import torch

from recmodels.base import SequentialRecommender
from recmodels.dataset import Item
from recmodels.scorer import Scorer, ScorerInfo
from steering.catalog_index import InMemoryCatalog
from steering.planner import PlanWeights, choose_tools, run_plan, steer_candidates
from steering.preferences import Preferences, Side, SoftPreference, YearRange
from steering.similarity import CollaborativeSimilarity
from steering.tools import (
    aggregate,
    attenuate,
    filter_candidates,
    hard_violations,
    match,
    semantic_scores,
    zscore,
)


class HandSetRecommender(SequentialRecommender):
    """User state = mean vector of the history's items; item scores = dot products."""

    def __init__(self, vectors: list[list[float]]):
        super().__init__(n_items=len(vectors), max_len=10)
        self.weight = torch.nn.Parameter(torch.tensor(vectors, dtype=torch.float32))

    def encode(self, seqs: torch.Tensor) -> torch.Tensor:
        table = torch.cat([self.weight, torch.zeros(1, self.weight.shape[1])])  # [N + 1, H], pad row zero
        real = (seqs != self.pad_id).float().unsqueeze(-1)  # [B, T, 1]
        return (table[seqs] * real).sum(1) / real.sum(1).clamp(min=1)  # [B, H]

    def output_embeddings(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        return self.weight, None


# id: title, genres, year, vector (dims: "family", "dark", "space")
ITEMS = [
    ("Toy Story", ["Animation", "Comedy"], 1995, [1.0, 0.0, 0.0]),
    ("Lion King", ["Animation", "Children's"], 1994, [0.9, 0.1, 0.0]),
    ("Heat", ["Crime", "Thriller"], 1995, [0.0, 1.0, 0.0]),
    ("Scream", ["Horror", "Thriller"], 1996, [0.1, 0.9, 0.1]),
    ("Star Wars", ["Action", "Sci-Fi"], 1977, [0.2, 0.2, 1.0]),
    ("Alien", ["Horror", "Sci-Fi"], 1979, [0.0, 0.6, 0.8]),
    ("Babe", ["Children's", "Comedy"], None, [0.8, 0.0, 0.1]),
    ("Clerks", ["Comedy"], 1994, [0.5, 0.3, 0.0]),
]  # fmt: skip
TOY_STORY, LION_KING, HEAT, SCREAM, STAR_WARS, ALIEN, BABE, CLERKS = range(len(ITEMS))


@pytest.fixture(scope="module")
def catalog() -> InMemoryCatalog:
    return InMemoryCatalog([Item(i, t, {"genres": g, "year": y}) for i, (t, g, y, _v) in enumerate(ITEMS)])


@pytest.fixture(scope="module")
def scorer() -> Scorer:
    model = HandSetRecommender([v for *_rest, v in ITEMS])
    return Scorer(model, ScorerInfo("handset", "toy", "none", len(ITEMS)))


def test_hard_violations_name_each_broken_constraint(catalog):
    prefs = Preferences(
        positive=Side(genres=["Comedy"], year_range=YearRange(start=1990, end=1999)),
        negative=Side(genres=["Animation"], items=[CLERKS]),
    )
    assert hard_violations(prefs, catalog.item(TOY_STORY)) == ["genre Animation is excluded"]
    assert hard_violations(prefs, catalog.item(STAR_WARS)) == [
        "not in the wanted genre(s) Comedy",
        "released 1977, wanted 1990-1999",
    ]
    assert hard_violations(prefs, catalog.item(BABE)) == ["released unknown, wanted 1990-1999"]
    assert hard_violations(prefs, catalog.item(CLERKS)) == ["this item is excluded"]
    unknown_year_ok = Preferences(negative=Side(year_range=YearRange(end=1980)))
    assert hard_violations(unknown_year_ok, catalog.item(BABE)) == []
    assert hard_violations(unknown_year_ok, catalog.item(ALIEN)) == ["released 1979, excluded up to 1980"]
    only = Preferences(positive=Side(items=[HEAT]))
    assert hard_violations(only, catalog.item(SCREAM)) == ["not one of the items asked for"]


def test_filter_keeps_satisfying_items_in_order(catalog):
    prefs = Preferences(positive=Side(genres=["Sci-Fi", "Thriller"]), negative=Side(genres=["Horror"]))
    assert filter_candidates([ALIEN, STAR_WARS, SCREAM, HEAT, TOY_STORY], prefs, catalog) == [STAR_WARS, HEAT]


def test_zscore_and_matcher_mix():
    assert zscore([1.0, 1.0]) == [0.0, 0.0] and zscore([3.0]) == [0.0]
    assert zscore([1.0, 3.0]) == [-1.0, 1.0]
    collaborative, semantic = [0.0, 10.0, 20.0], [0.9, 0.5, 0.1]
    assert match(collaborative, semantic, semantic_weight=0.0) == zscore(collaborative)
    assert match(collaborative, semantic, semantic_weight=1.0) == pytest.approx(zscore(semantic))
    assert match(collaborative, semantic, semantic_weight=0.5) == pytest.approx([0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="semantic_weight must be in"):
        match(collaborative, semantic, semantic_weight=1.5)


def test_attenuator_penalises_only_above_average_similarity():
    assert attenuate([0.1, 0.1, 0.7], strength=2.0) == pytest.approx([0.0, 0.0, 2.0 * 2**0.5])
    with pytest.raises(ValueError, match="strength"):
        attenuate([0.1], strength=-1)


def test_aggregator_ranks_by_score_minus_penalty_with_stable_ties():
    ranked = aggregate([10, 11, 12], [1.0, 3.0, 2.0], penalties=[0.0, 5.0, 0.0])
    assert [r.item for r in ranked] == [12, 10, 11]
    assert ranked[2].penalty == 5.0 and ranked[2].collaborative == 3.0
    tied = aggregate([7, 8, 9], [0.0, 0.0, 0.0], k=2)
    assert [r.item for r in tied] == [7, 8]


def test_semantic_scores_skip_free_text_without_a_text_model(scorer):
    similarity = CollaborativeSimilarity(scorer)
    prefs = [SoftPreference(text="Toy Story", item=TOY_STORY), SoftPreference(text="lighter")]
    scores, skipped = semantic_scores([LION_KING, HEAT], prefs, similarity)
    assert skipped == [prefs[1]]
    assert scores[0] > 0.99 and scores[1] == pytest.approx(0.0)
    assert torch.allclose(similarity.item_vectors.norm(dim=1), torch.ones(len(ITEMS)))


def test_choose_tools_runs_only_what_is_needed():
    assert choose_tools(Preferences()) == ["aggregator"]
    assert choose_tools(Preferences(negative=Side(genres=["Horror"]))) == ["filter", "aggregator"]
    soft = Preferences(
        positive=Side(soft=[SoftPreference(text="x")]), negative=Side(soft=[SoftPreference(text="y")])
    )
    assert choose_tools(soft) == ["matcher", "attenuator", "aggregator"]


def test_planner_filters_then_ranks_by_the_rec_model(scorer, catalog):
    history = [HEAT]  # a "dark" user: Scream is the model's favourite
    assert scorer.rank(history, [SCREAM, ALIEN, CLERKS])[0] == SCREAM
    no_horror = Preferences(negative=Side(genres=["Horror"]))
    result = run_plan(no_horror, range(len(ITEMS)), history, scorer, catalog, k=3)
    assert result.tools == ["filter", "aggregator"] and result.after_filter == 6
    assert result.items == [HEAT, CLERKS, STAR_WARS]
    assert all(not hard_violations(no_horror, catalog.item(i)) for i in result.items)


def test_matcher_pulls_similar_items_up_and_skips_the_anchor(scorer, catalog):
    history = [HEAT]  # a "dark" user
    pool = [i for i in range(len(ITEMS)) if i != HEAT]
    assert run_plan(Preferences(), pool, history, scorer, catalog, k=1).ranked[0].item == SCREAM
    like_toy_story = Preferences(positive=Side(soft=[SoftPreference(text="Toy Story", item=TOY_STORY)]))
    ranked = run_plan(like_toy_story, pool, history, scorer, catalog, k=len(pool)).ranked
    assert [r.item for r in ranked][:2] == [LION_KING, CLERKS], "family items first, the darker one before"
    assert TOY_STORY not in [r.item for r in ranked]
    assert ranked[0].semantic == pytest.approx(0.9 / (0.9**2 + 0.1**2) ** 0.5)


def test_attenuator_pushes_items_like_the_rejected_one_down(scorer, catalog):
    history = [CLERKS]
    pool = [SCREAM, HEAT, STAR_WARS, BABE]
    before = run_plan(Preferences(), pool, history, scorer, catalog, k=4).ranked
    less_like_heat = Preferences(negative=Side(soft=[SoftPreference(text="Heat", item=HEAT)]))
    after = run_plan(
        less_like_heat, pool, history, scorer, catalog, k=4, weights=PlanWeights(attenuation=3.0)
    ).ranked
    assert [r.item for r in before] == [BABE, SCREAM, HEAT, STAR_WARS]
    assert [r.item for r in after] == [BABE, STAR_WARS, SCREAM, HEAT], "the two 'dark' items sink"
    assert after[-1].penalty > 0 and all(r.penalty == 0 for r in before)
    assert {r.item: r.penalty for r in after}[STAR_WARS] == 0.0


def test_unsatisfiable_constraints_give_an_empty_plan_not_a_violation(scorer, catalog):
    impossible = Preferences(positive=Side(genres=["Western"]))
    result = run_plan(impossible, range(len(ITEMS)), [HEAT], scorer, catalog, k=5)
    assert result.items == [] and result.pool_size == len(ITEMS)
    with pytest.raises(ValueError, match="k must be >= 1"):
        run_plan(impossible, [HEAT], [HEAT], scorer, catalog, k=0)


def test_steer_candidates_without_preferences_is_the_rec_models_top_k(scorer, catalog):
    history = [HEAT, SCREAM]
    assert steer_candidates(None, history, scorer, catalog, k=3) == scorer.top_k(history, 3)
    assert steer_candidates(Preferences(), history, scorer, catalog, k=3) == scorer.top_k(history, 3)
    comedies = Preferences(positive=Side(genres=["Comedy"]))
    steered = steer_candidates(comedies, history, scorer, catalog, k=3, exclude=[CLERKS])
    assert steered == [TOY_STORY, BABE]


def test_hard_violations_accept_the_graph_states_plain_dict(catalog):
    as_dict = Preferences(negative=Side(genres=["Horror"])).model_dump()
    assert hard_violations(as_dict, catalog.item(SCREAM)) == ["genre Horror is excluded"]
    assert hard_violations(None, catalog.item(SCREAM)) == []
    with pytest.raises(ValueError, match="colour"):
        hard_violations({"positive": {"colour": "red"}}, catalog.item(SCREAM))


def test_the_attribute_index_filters_exactly_as_hard_violations(synthetic_dataset):
    """The arrays the filter reads at catalog scale say, item by item, what the per-item rules say:
    genres any case, known and unknown years, item ids, on both sides."""
    from steering.tools import AttributeIndex

    items = synthetic_dataset.items
    index = AttributeIndex.of_items(items)
    genres = sorted({g for item in items for g in item.genres})
    cases = [
        Preferences(positive=Side(genres=[genres[0].upper()])),
        Preferences(positive=Side(genres=[genres[1], "No Such Genre"], year_range=YearRange(start=1990))),
        Preferences(positive=Side(genres=["No Such Genre"])),
        Preferences(negative=Side(genres=[genres[2]], year_range=YearRange(start=1980, end=1989))),
        Preferences(positive=Side(year_range=YearRange(end=1975), items=[3, 5, 8, 10**6])),
        Preferences(negative=Side(items=[0, 1, 2]), positive=Side(genres=[genres[0], genres[3]])),
    ]
    for preferences in cases:
        allowed = index.allowed(preferences)
        assert [bool(a) for a in allowed] == [not hard_violations(preferences, item) for item in items]
        assert filter_candidates(list(range(len(items)))[::-1], preferences, synthetic_dataset) == [
            i for i in range(len(items))[::-1] if not hard_violations(preferences, items[i])
        ]


def test_an_item_without_a_year_passes_only_the_negative_range():
    from steering.tools import AttributeIndex

    items = [
        Item(0, "A", {"genres": ["Drama"], "year": None}),
        Item(1, "B", {"genres": ["Drama"], "year": 1990}),
    ]
    index = AttributeIndex.of_items(items)
    wanted = Preferences(positive=Side(year_range=YearRange(start=1980)))
    unwanted = Preferences(negative=Side(year_range=YearRange(start=1980)))
    assert index.allowed(wanted).tolist() == [False, True]
    assert index.allowed(unwanted).tolist() == [True, False]


def _awkward_floats(rng, n: int) -> list:
    """n-value float64 arrays the exact sums must get right, drawn from ``rng`` in this order:
    normal, float32-made (narrow and wide-ranged), wide-ranged, signed zeros, nearly constant."""
    import numpy as np

    return [
        rng.standard_normal(n),
        rng.standard_normal(n).astype(np.float32).astype(np.float64) * 7 - 3,
        (rng.standard_normal(n) * 2.0 ** rng.integers(-60, 60, n)).astype(np.float32).astype(np.float64),
        rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n),
        np.where(rng.integers(0, 2, n) == 1, -0.0, np.round(rng.uniform(-1, 1, n), 2)),
        np.full(n, 0.1) + rng.integers(0, 2, n) * 1e-17,
    ]


def test_the_deviation_of_long_lists_is_statistics_own_float():
    """z-scores over a 10^5-item pool divide by the same float statistics.pstdev gives (exact sums,
    one rounding): normal, float32-made, wide-ranged, signed-zero, nearly constant and integer lists."""
    import statistics

    import numpy as np

    from steering.tools import _pstdev

    rng = np.random.default_rng(0)
    for trial in range(60):
        n = int(rng.integers(1024, 5000))
        lists = _awkward_floats(rng, n)
        for values in lists:
            assert _pstdev(values.tolist()) == statistics.pstdev(values.tolist()), trial
    integers = list(range(3000))
    assert _pstdev(integers) == statistics.pstdev(integers)


def test_exact_sums_of_float32_made_values_are_the_exact_sums():
    """Scores and cosines are float32's made float64: their sums come from bincounts per power of two
    (steering/tools.py); the same exact integers as the general path's, checked against Fractions."""
    from fractions import Fraction

    import numpy as np

    from steering.tools import _exact_sums_of_part

    rng = np.random.default_rng(5)
    for trial in range(40):
        n = int(rng.integers(1, 3000))
        values = (rng.standard_normal(n) * 2.0 ** rng.integers(-100, 100, n)).astype(np.float32)
        values[rng.random(n) < 0.2] = 0.0
        for x in (values.astype(np.float64), values.astype(np.float64) + 2.0**-80):  # short, then wide
            total, squares, lowest = _exact_sums_of_part(x)
            assert Fraction(total) * Fraction(2) ** lowest == sum(map(Fraction, x.tolist())), trial
            exact_squares = sum(Fraction(v) ** 2 for v in x.tolist())
            assert Fraction(squares) * Fraction(2) ** (2 * lowest) == exact_squares, trial


def test_the_mean_of_two_preferences_similarities_is_statistics_own():
    """Two soft preferences: each candidate's mean similarity is statistics.fmean's float (signed zeros)."""
    import math
    import statistics

    import numpy as np

    from steering.preferences import SoftPreference as Soft

    rng = np.random.default_rng(0)
    rows = [rng.standard_normal(3000) * 10.0 ** rng.integers(-20, 20, 3000) for _ in range(2)]
    rows[0][::7], rows[1][::7] = -0.0, -0.0
    rows[1][::11] = -rows[0][::11]

    class Fixed:
        def similarities(self, candidates, pref):
            return rows[pref.item].tolist()

    means, skipped = semantic_scores(range(3000), [Soft(text="a", item=0), Soft(text="b", item=1)], Fixed())
    expected = [statistics.fmean(pair) for pair in zip(rows[0].tolist(), rows[1].tolist(), strict=True)]
    assert skipped == [] and means == expected
    assert [math.copysign(1.0, m) for m in means] == [math.copysign(1.0, e) for e in expected]


def test_the_top_k_order_is_the_full_stable_sorts_first_k():
    """aggregate picks the k best of a 10^6-item pool without sorting it all: the same items in the
    same order, ties (many, and signed zeros) in candidate order, infinities included."""
    import numpy as np

    from steering.tools import _stable_order

    rng = np.random.default_rng(3)
    for trial in range(300):
        n = int(rng.integers(1, 400))
        keys = np.round(rng.standard_normal(n), int(rng.integers(0, 3))) + 0.0
        keys[rng.random(n) < 0.05] = -np.inf
        keys[rng.random(n) < 0.05] = np.inf
        for k in (None, -1, 0, 1, 2, 5, 20, n - 1, n, n + 3):
            full = np.argsort(keys, kind="stable")
            expected = full if k is None else full[:k]
            got = _stable_order(keys, k)
            assert (got if k is None or k > 0 else got[:k]).tolist() == expected.tolist(), (trial, k)


def test_the_array_tools_give_the_list_tools_floats():
    """The planner's numpy path (zscore_array, match_array, attenuate_array) makes the floats of the
    list z-score (statistics' mean and deviation) bit for bit, signed zeros included: short and long
    lists (exact sums), wide-ranged and constant ones."""
    import numpy as np

    from steering.tools import attenuate_array, match_array, zscore_array

    def same(array, listed) -> bool:
        return array.dtype == np.float64 and array.tobytes() == np.asarray(listed, dtype=np.float64).tobytes()

    rng = np.random.default_rng(1)
    for trial in range(40):
        n = int(rng.choice([0, 1, 2, 5, 1023, int(rng.integers(1024, 5000))]))
        lists = [*_awkward_floats(rng, n), np.full(n, -0.0)]
        for values in lists:
            assert same(zscore_array(values), zscore(values.tolist())), trial
            z = np.asarray(zscore(values.tolist()), dtype=np.float64)
            assert same(attenuate_array(values, strength=1.5), 1.5 * np.where(z > 0.0, z, 0.0)), trial
            other = rng.standard_normal(n)
            mixed = 0.7 * np.asarray(zscore(other.tolist())) + (1.0 - 0.7) * z
            assert same(match_array(values, other, semantic_weight=0.7), mixed), trial


def _random_scorer_and_catalog(rng, genres: list[str], n: int = 3000) -> tuple[Scorer, list[Item]]:
    """A scorer over n random 8-d item vectors, and n items cycling through three genres and 60 years:
    long enough for the exact sums and the planner's array paths."""
    import numpy as np

    vectors = rng.standard_normal((n, 8)).astype(np.float32)
    scorer = Scorer(HandSetRecommender(vectors.tolist()), ScorerInfo("handset", "toy", "none", n))
    items = [Item(i, f"item {i}", {"genres": [genres[i % 3]], "year": 1950 + i % 60}) for i in range(n)]
    return scorer, items


def test_the_planner_on_arrays_ranks_as_the_list_tools_do():
    """run_plan (arrays end to end) against the tools' list functions composed by hand, on a catalog
    long enough for the exact sums: the same items, scores, similarities and penalties; the scorer's
    and the similarity's arrays hold their lists' floats."""
    import numpy as np

    model_scorer, items = _random_scorer_and_catalog(np.random.default_rng(2), ["Comedy", "Horror", "Drama"])
    n = len(items)
    big = InMemoryCatalog(items)
    sim = CollaborativeSimilarity(model_scorer)
    preferences = Preferences(
        positive=Side(soft=[SoftPreference(text="a", item=3), SoftPreference(text="b", item=17)]),
        negative=Side(genres=["Horror"], soft=[SoftPreference(text="c", item=40)]),
    )
    history = [5, 9, 200]
    pool = [i for i in range(n) if i not in history]
    plan = run_plan(preferences, pool, history, model_scorer, big, k=20, similarity=sim)

    candidates = filter_candidates([i for i in pool if i not in (3, 17)], preferences, big)
    collaborative = model_scorer.score(history, candidates)
    semantic, _ = semantic_scores(candidates, preferences.positive.soft, sim)
    negative, _ = semantic_scores(candidates, preferences.negative.soft, sim)
    matched = match(collaborative, semantic, semantic_weight=PlanWeights().semantic_weight)
    penalties = attenuate(negative, strength=PlanWeights().attenuation)
    expected = aggregate(
        candidates, collaborative, matched=matched, semantic=semantic, penalties=penalties, k=20
    )
    assert len(candidates) > 1024 and repr(plan.ranked) == repr(expected)
    assert model_scorer.score_array(history, np.asarray(candidates)).tolist() == collaborative
    assert sim.similarity_array(np.asarray(candidates), preferences.positive.soft[0]).tolist() == (
        sim.similarities(candidates, preferences.positive.soft[0])
    )


def _near_ties(n: int):
    """Values 1 + i ulp beside one far outlier: the z-score's rounding merges the near-ties."""
    import numpy as np

    values = 1.0 + np.arange(n) * 2.0**-52
    values[0] = 2.0**60
    return values


def test_the_order_read_off_the_scores_is_the_z_scores_order():
    """zscore_order (a plan without matcher or penalty, ranked without the z-score's exact sums)
    gives the positions aggregate_arrays ranks first, or None: on awkward lists (ties, signed zeros,
    wide ranges, nearly constant), near-ties a z-score may merge, NaN and inf."""
    import numpy as np

    from steering.tools import aggregate_arrays, zscore_order

    rng = np.random.default_rng(7)
    read = 0
    for trial in range(30):
        n = int(rng.integers(1024, 6000))
        lists = [*_awkward_floats(rng, n), np.round(rng.standard_normal(n), 1), _near_ties(n)]
        for values in lists:
            for k in (1, 20, n - 1):
                order = zscore_order(values, k)
                ranked = aggregate_arrays(np.arange(n), values, k=k)
                if order is not None:
                    read += 1
                    assert order.tolist() == [r.item for r in ranked], (trial, k)
        with_nan = rng.standard_normal(n)
        with_nan[3] = np.nan
        assert zscore_order(with_nan, 20) is None
        assert zscore_order(np.append(rng.standard_normal(n), np.inf), 20) is None
    assert read > 300  # most lists are read off the scores; the rest fall back
    assert zscore_order(_near_ties(1024), 20) is None
    merged = aggregate_arrays(np.arange(1024), _near_ties(1024), k=20)  # z merges some of them:
    assert [r.item for r in merged] != np.argsort(-_near_ties(1024), kind="stable")[:20].tolist()
    assert zscore_order(np.arange(5.0), 2) is None  # short lists: statistics' own path


def test_a_plan_by_the_rec_scores_alone_makes_its_scores_only_when_read():
    """A hard filter without soft preferences over a long pool: the items come from the scores'
    order, `ranked` (with its z-scores) is made only when read, and it lists the same items with the
    floats aggregate gives."""
    import numpy as np

    from steering.tools import aggregate_arrays

    model_scorer, items = _random_scorer_and_catalog(np.random.default_rng(3), ["Drama", "Horror", "Comedy"])
    n, big = len(items), InMemoryCatalog(items)
    preferences = Preferences(negative=Side(genres=["Horror"]))
    history = [5, 9, 200]
    pool = [i for i in range(n) if i not in history]
    plan = run_plan(preferences, pool, history, model_scorer, big, k=20)

    assert len(plan.items) == 20 and "ranked" not in vars(plan)  # the scores are not made yet
    candidates = np.asarray(filter_candidates(pool, preferences, big))
    expected = aggregate_arrays(candidates, model_scorer.score_array(history, candidates), k=20)
    assert plan.items == [r.item for r in expected]
    assert repr(plan.ranked) == repr(expected)


def test_the_unseen_catalog_as_a_mask_plans_as_its_list_of_ids():
    """steer_plan filters the unseen catalog as one mask (pool, "like X" anchors, hard filter); run_plan
    over the same items listed as ids plans the same: items, scores, pool sizes. With the attribute
    index and without it (the per-item filter)."""
    import numpy as np

    from steering.planner import steer_plan
    from steering.tools import use_attribute_index

    model_scorer, items = _random_scorer_and_catalog(np.random.default_rng(4), ["Drama", "Horror", "Comedy"])
    n = len(items)
    history, exclude = [5, 9, 200], [11, 12]
    unseen = [i for i in range(n) if i not in {*history, *exclude}]
    cases = [
        Preferences(negative=Side(genres=["Horror"])),
        Preferences(positive=Side(genres=["Drama"], year_range=YearRange(start=1990))),
        Preferences(positive=Side(soft=[SoftPreference(text="like 3", item=3)]), negative=Side(items=[7, 8])),
        Preferences(positive=Side(genres=["No Such Genre"])),
    ]
    for with_index in (True, False):
        catalog = InMemoryCatalog(items)
        if not with_index:
            use_attribute_index(catalog, None)
        for preferences in cases:
            masked = steer_plan(preferences, history, model_scorer, catalog, 20, exclude=exclude)
            listed = run_plan(preferences, unseen, history, model_scorer, catalog, k=20)
            assert (masked.pool_size, masked.after_filter) == (listed.pool_size, listed.after_filter)
            assert masked.items == listed.items and repr(masked.ranked) == repr(listed.ranked)
    assert masked.items == [] and masked.pool_size == len(unseen)  # no item has that genre
