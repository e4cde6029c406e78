"""Finding items by title: what the service's catalog search and the steering parser use.

A search never loops over the catalog in Python. The catalog's titles are indexed once (an
O(n log n) build, kept per catalog object) in two forms:

- the case-folded titles sorted, so the exact and prefix matches are one range (two bisections);
- all case-folded titles in one string, ordered as the ranking orders titles within a rank
  (shorter first, then by id), so the substring matches come out of ``str.find`` (C speed) already
  in rank order, and the search stops once it has enough.
"""

from __future__ import annotations

import threading
import weakref
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from recmodels.dataset import Dataset, Item

_SEPARATOR = "\x00"
"""Between titles in the joined string: no query holds it (the input guard refuses NUL)."""


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


@dataclass(frozen=True)
class TitleIndex:
    """A catalog's titles, indexed for :meth:`search` (see the module's docstring)."""

    by_title: list[str]
    """Case-folded titles, sorted."""
    by_title_items: list[Item]
    by_title_order: np.ndarray
    """Their order within a rank, (title length, id) as one int64 each: the top of a range of
    prefixes is picked in C (``argpartition``), not by a Python key per title."""
    by_length: list[Item]
    """Items ordered by (title length, id): the order within a rank."""
    joined: str
    """Their case-folded titles, in that order, each followed by the separator."""
    starts: list[int]
    """Where each of them starts in ``joined``."""

    @classmethod
    def build(cls, items: list[Item]) -> TitleIndex:
        titled = [(item.title.casefold(), item) for item in items if _SEPARATOR not in item.title]
        titled.sort(key=lambda pair: (pair[0], pair[1].id))
        by_length = sorted(titled, key=lambda pair: (len(pair[1].title), pair[1].id))
        starts, offset = [], 0
        for folded, _ in by_length:
            starts.append(offset)
            offset += len(folded) + 1
        return cls(
            by_title=[folded for folded, _ in titled],
            by_title_items=[item for _, item in titled],
            by_title_order=np.fromiter(
                ((len(item.title) << 32) | item.id for _, item in titled), dtype=np.int64, count=len(titled)
            ),
            by_length=[item for _, item in by_length],
            joined="".join(folded + _SEPARATOR for folded, _ in by_length),
            starts=starts,
        )

    def search(self, needle: str, limit: int) -> list[Item]:
        """Items whose case-folded title contains ``needle`` (case-folded, stripped, not empty),
        ranked exact > prefix > substring, shorter titles first within a rank, then by id."""
        lo = bisect_left(self.by_title, needle)
        hi = bisect_left(self.by_title, needle + "\U0010ffff", lo)  # every title starting with it
        exact_end = bisect_right(self.by_title, needle, lo, hi)
        exact = self._best(lo, exact_end, limit)
        prefixed = self._best(exact_end, hi, limit)
        found = (exact + prefixed)[:limit]
        position = 0
        while len(found) < limit:
            position = self.joined.find(needle, position)
            if position < 0:
                break
            index = bisect_right(self.starts, position) - 1
            if position != self.starts[index]:  # a title that starts with it is counted above
                found.append(self.by_length[index])
            # Any further occurrence in this title: on to the next one.
            position = self.starts[index + 1] if index + 1 < len(self.starts) else len(self.joined)
        return found

    def _best(self, start: int, end: int, limit: int) -> list[Item]:
        """The first ``limit`` items of ``by_title[start:end]`` in rank order, picked in C."""
        order = self.by_title_order[start:end]
        top = np.argpartition(order, limit - 1)[:limit] if len(order) > limit else np.arange(len(order))
        return [self.by_title_items[start + int(i)] for i in top[np.argsort(order[top], kind="stable")]]


_INDEXES: weakref.WeakKeyDictionary[Dataset, TitleIndex] = weakref.WeakKeyDictionary()


_BUILDING = threading.Lock()
"""The start-up warm-up and a first search may ask at once: the index is built once."""


def title_index(dataset: Dataset) -> TitleIndex:
    """The catalog's title index, built on first use and kept as long as the catalog."""
    index = _INDEXES.get(dataset)
    if index is None:
        with _BUILDING:
            index = _INDEXES.get(dataset)
            if index is None:
                index = _INDEXES[dataset] = TitleIndex.build(dataset.items)
    return index


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
    return title_index(dataset).search(needle, limit)
