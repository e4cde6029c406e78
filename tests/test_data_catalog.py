"""`search_items`: case-insensitive title search ranked exact > prefix > substring."""

from __future__ import annotations

import pytest

from app.services.title_search import MatchRank, match_rank, search_items


def test_exact_title_comes_first_then_prefixes_then_substrings(ml_dataset):
    titles = [item.title for item in search_items(ml_dataset, "  HEAT ", limit=10)]
    assert titles == ["Heat", "Heathers", "Mystery Science Theater 3000: The Movie"]
    assert [match_rank(t, "heat") for t in titles] == [MatchRank.EXACT, MatchRank.PREFIX, MatchRank.SUBSTRING]


def test_within_a_rank_shorter_titles_come_first(ml_dataset):
    titles = [item.title for item in search_items(ml_dataset, "alien", limit=10)]
    assert titles == ["Alien", "Aliens", "Alien 3", "Alien: Resurrection"]


def test_every_hit_contains_the_query_and_limit_is_respected(ml_dataset):
    hits = search_items(ml_dataset, "star", limit=5)
    assert len(hits) == 5
    assert all("star" in item.title.lower() for item in hits)
    everything = search_items(ml_dataset, "star", limit=10_000)
    assert everything[:5] == hits
    assert len(everything) == sum("star" in item.title.lower() for item in ml_dataset.items)


def test_no_match_and_blank_queries_return_nothing(ml_dataset):
    assert search_items(ml_dataset, "zzzz-no-such-movie", limit=5) == []
    assert search_items(ml_dataset, "   ", limit=5) == []  # the untitled item 266 is never matched


def test_limit_must_be_positive(ml_dataset):
    with pytest.raises(ValueError, match="limit must be at least 1"):
        search_items(ml_dataset, "star", limit=0)


def _scan(items, query: str, limit: int) -> list[int]:
    """The ranking by definition: every title checked, sorted by (rank, title length, id)."""
    needle = query.strip().casefold()
    ranks = [(match_rank(item.title, needle), len(item.title), item.id) for item in items]
    ranked = sorted(rank for rank in ranks if rank[0] is not None)
    return [item_id for _, _, item_id in ranked[:limit]]


def test_the_index_ranks_as_a_scan_of_every_title_does():
    """Titles that repeat, differ only in case, grow under case folding (ß), hold the query twice,
    or are empty; queries that match none, one, or most titles."""
    import random

    from app.services.title_search import TitleIndex
    from recmodels.dataset import Item

    rng = random.Random(7)
    words = ["Heat", "heat", "HEATHER", "Straße", "strasse", "the", "The Heat", "a", "ab", "aba", ""]
    items = [
        Item(i, " ".join(rng.choice(words) for _ in range(rng.randint(0, 3))).strip()) for i in range(600)
    ]
    index = TitleIndex.build([item.title for item in items])
    queries = ["heat", "HEAT", "he", "a", "aba", "strasse", "STRASSE", "ß", "the heat", "zzz", "t", "e h"]
    for query in queries:
        for limit in (1, 3, 10, 1000):
            found = index.search(query.strip().casefold(), limit)
            assert found == _scan(items, query, limit), (query, limit)


async def test_the_start_up_warm_up_builds_the_index_once_for_every_later_search(ml_dataset, monkeypatch):
    """app.main's lifespan warms the title index; searches racing it (or each other) share one build."""
    import asyncio

    from app.services import catalog, title_search

    built = []
    real_build = title_search.TitleIndex.build

    def counted_build(titles):
        built.append(len(titles))
        return real_build(titles)

    monkeypatch.setattr(title_search.TitleIndex, "build", staticmethod(counted_build))
    monkeypatch.setattr(title_search, "_INDEXES", type(title_search._INDEXES)())
    await asyncio.gather(
        catalog.warm_up(ml_dataset),
        catalog.search(ml_dataset, query="star wars", limit=3),
        catalog.search(ml_dataset, query="toy", limit=3),
    )
    assert built == [ml_dataset.n_items]
    found = await catalog.search(ml_dataset, query="Toy Story", limit=1)
    assert found[0].title.startswith("Toy Story") and built == [ml_dataset.n_items]
