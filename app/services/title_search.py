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
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import overload

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


class SortedTitles(Sequence[str]):
    """Sorted case-folded titles in one string with their offsets: ``bisect`` reads it as the list of
    strings it stands for, without a string object per title (10^6 of them: ~80 MB)."""

    def __init__(self, joined: str, offsets: np.ndarray):
        self.joined = joined
        self.offsets = offsets
        """int64 [M + 1]: title j is ``joined[offsets[j]:offsets[j + 1]]``."""

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self[j] for j in range(*index.indices(len(self)))]
        position = index + len(self) if index < 0 else index
        if not 0 <= position < len(self):
            raise IndexError(f"title {index} out of range for {len(self)} titles")
        start, end = self.offsets[position : position + 2].tolist()
        return self.joined[start:end]


@dataclass(frozen=True)
class TitleIndex:
    """A catalog's titles, indexed for :meth:`search` (see the module's docstring). Item ids are
    held in int arrays, not as items: a search makes the few items it returns."""

    by_title: SortedTitles
    """Case-folded titles, sorted (ties by id)."""
    by_title_ids: np.ndarray
    """int64: the ids of their items."""
    by_title_order: np.ndarray
    """Their order within a rank, (title length, id) as one int64 each: the top of a range of
    prefixes is picked in C (``argpartition``), not by a Python key per title."""
    by_length_ids: np.ndarray
    """int64: item ids ordered by (title length, id), the order within a rank."""
    joined: str
    """Their case-folded titles, in that order, each followed by the separator."""
    starts: np.ndarray
    """int64: where each of them starts in ``joined``."""

    @classmethod
    def build(cls, titles: Sequence[str]) -> TitleIndex:
        """The index of a catalog whose item i is titled ``titles[i]``."""
        ids = [i for i, title in enumerate(titles) if _SEPARATOR not in title]
        folded = [titles[i].casefold() for i in ids]
        lengths = np.fromiter((len(titles[i]) for i in ids), dtype=np.int64, count=len(ids))
        kept = np.asarray(ids, dtype=np.int64)
        by_title = sorted(range(len(ids)), key=folded.__getitem__)  # stable: ties stay in id order
        by_length = np.argsort(lengths, kind="stable")  # ties stay in id order
        folded_lengths = np.fromiter((len(f) for f in folded), dtype=np.int64, count=len(ids))
        return cls(
            by_title=SortedTitles("".join(folded[j] for j in by_title), _offsets(folded_lengths[by_title])),
            by_title_ids=kept[by_title],
            by_title_order=(lengths[by_title] << 32) | kept[by_title],
            by_length_ids=kept[by_length],
            joined="".join(folded[j] + _SEPARATOR for j in by_length.tolist()),
            starts=_offsets(folded_lengths[by_length] + 1)[:-1],
        )

    def search(self, needle: str, limit: int) -> list[int]:
        """Ids of the items whose case-folded title contains ``needle`` (case-folded, stripped, not
        empty), ranked exact > prefix > substring, shorter titles first within a rank, then by id."""
        lo = bisect_left(self.by_title, needle)
        hi = bisect_left(self.by_title, needle + "\U0010ffff", lo)  # every title starting with it
        exact_end = bisect_right(self.by_title, needle, lo, hi)
        exact = self._best(lo, exact_end, limit)
        prefixed = self._best(exact_end, hi, limit)
        found = (exact + prefixed)[:limit]
        position, n_titles = 0, len(self.starts)
        while len(found) < limit:
            position = self.joined.find(needle, position)
            if position < 0:
                break
            index = int(np.searchsorted(self.starts, position, side="right")) - 1
            if position != self.starts[index]:  # a title that starts with it is counted above
                found.append(int(self.by_length_ids[index]))
            # Any further occurrence in this title: on to the next one.
            position = int(self.starts[index + 1]) if index + 1 < n_titles else len(self.joined)
        return found

    def _best(self, start: int, end: int, limit: int) -> list[int]:
        """The first ``limit`` ids of ``by_title[start:end]`` in rank order, picked in C."""
        order = self.by_title_order[start:end]
        top = np.argpartition(order, limit - 1)[:limit] if len(order) > limit else np.arange(len(order))
        return self.by_title_ids[start + top[np.argsort(order[top], kind="stable")]].tolist()


def _offsets(lengths: np.ndarray) -> np.ndarray:
    """int64 [M + 1]: where each of M consecutive pieces of these lengths starts, and the end."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


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
                index = _INDEXES[dataset] = TitleIndex.build(dataset.item_columns.titles())
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
    return [dataset.item(i) for i in title_index(dataset).search(needle, limit)]
