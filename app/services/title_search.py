"""Finding items by title: what the service's catalog search and the steering parser use."""

from __future__ import annotations

from enum import IntEnum

from recmodels.dataset import Dataset, Item


class MatchRank(IntEnum):
    """Lower is better: an exact title beats a prefix, which beats any substring."""

    EXACT = 0
    PREFIX = 1
    SUBSTRING = 2


def match_rank(title: str, query: str) -> MatchRank | None:
    """How ``query`` (already case-folded and stripped) matches ``title``; None if it does not."""
    folded = title.casefold()
    if folded == query:
        return MatchRank.EXACT
    if folded.startswith(query):
        return MatchRank.PREFIX
    if query in folded:
        return MatchRank.SUBSTRING
    return None


def search_items(dataset: Dataset, query: str, limit: int) -> list[Item]:
    """Items whose title contains ``query`` (case-insensitive), best matches first.

    Ranked exact > prefix > substring; within a rank shorter titles first (closer to the
    query), then by id, so the order is deterministic. A blank query matches nothing.
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    needle = query.strip().casefold()
    if not needle:
        return []
    ranked: list[tuple[MatchRank, int, int, Item]] = []
    for item in dataset.items:
        rank = match_rank(item.title, needle)
        if rank is not None:
            ranked.append((rank, len(item.title), item.id, item))
    ranked.sort(key=lambda entry: entry[:3])
    return [entry[3] for entry in ranked[:limit]]
