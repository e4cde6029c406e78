"""A dataset's items: :class:`Item`, and the columns :class:`recmodels.dataset.Dataset` keeps of
``items.jsonl`` (:class:`ItemColumns`, read through :class:`CatalogItems`).

One :class:`~recmodels.dataset.Item` per item (a dataclass, a dict, a list of genre strings)
costs ~400 bytes of Python objects: ~400 MB per worker at 10^6 items. The columns hold the same
facts in ~50 bytes an item: the titles as one UTF-8 buffer with offsets, each item's genres as
codes into the catalog's genre names, the years as integers. An ``Item`` is made when asked for
(:meth:`ItemColumns.item`, a few microseconds) and equals the one ``items.jsonl`` spells, key
order of its attributes included; bulk readers (the title index, the hard filter's arrays) read
the columns themselves.

An item the columns cannot hold exactly (an attribute other than ``genres`` and ``year``, a year
that is not a whole number, genres that are not a list of strings, attributes in another order,
an id that is not its line number) keeps its JSON line, and is read from it.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

import numpy as np

_PLAIN_KEYS = ((), ("genres",), ("year",), ("genres", "year"))
"""The attribute layouts the columns hold (``items.jsonl`` order): any other keeps its line."""
_YEAR_ABSENT, _YEAR_NULL, _YEAR_KNOWN = 0, 1, 2
_YEAR_LIMIT = 2**31  # years are held as int32
_ITER_CHUNK = 65_536  # items turned into Python values at once while iterating


@dataclass(frozen=True)
class Item:
    id: int
    title: str
    attributes: dict[str, Any] = field(default_factory=dict)

    @property
    def genres(self) -> list[str]:
        return list(self.attributes.get("genres") or [])

    @property
    def year(self) -> int | None:
        return self.attributes.get("year")

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, **self.attributes}


def item_from_json(raw: dict[str, Any]) -> Item:
    """An ``items.jsonl`` record as an Item: ``id`` and ``title`` taken out, the rest its attributes."""
    item_id, title = raw.pop("id"), raw.pop("title")
    return Item(item_id, title, raw)


@dataclass(frozen=True, eq=False)
class ItemColumns:
    """Every item of one catalog as columns; position i holds item i (ids are line numbers)."""

    title_bytes: bytes
    """Every title in UTF-8, one after another."""
    title_offsets: np.ndarray
    """int64 [N + 1]: title i is ``title_bytes[title_offsets[i]:title_offsets[i + 1]]``."""
    genre_names: tuple[str, ...]
    """The genre names of the catalog, in order of first appearance (a code is a position here)."""
    genre_codes: np.ndarray
    """int32: each item's genres as codes, in the item's own order, one item after another."""
    genre_offsets: np.ndarray
    """int64 [N + 1]: item i's genres are ``genre_codes[genre_offsets[i]:genre_offsets[i + 1]]``."""
    has_genres: np.ndarray
    """bool [N]: the item has a ``genres`` attribute (an empty list counts; a missing key does not)."""
    years: np.ndarray
    """int32 [N]: the release year where known, else 0."""
    year_kinds: np.ndarray
    """uint8 [N]: 0 no ``year`` attribute, 1 ``year`` null, 2 a known year."""
    irregular: dict[int, str]
    """Position -> JSON line of the items the columns cannot rebuild exactly (read from the line)."""
    attributes_typed: bool
    """Every item's genres are a list of strings (or absent) and its year a whole number, null or
    absent: the genre and year columns then say all the items say (else bulk readers go item by item)."""

    @classmethod
    def read(cls, path: Path) -> ItemColumns:
        """The columns of an ``items.jsonl`` file, read line by line (no Item is kept)."""
        titles, title_offsets = bytearray(), array("q", [0])
        names: dict[str, int] = {}
        genre_codes, genre_offsets, has_genres = array("i"), array("q", [0]), bytearray()
        years, year_kinds = array("i"), bytearray()
        irregular: dict[int, str] = {}
        attributes_typed = True
        with path.open(encoding="utf-8") as fh:
            for position, line in enumerate(fh):
                raw = json.loads(line)
                item_id, title = raw.pop("id"), raw.pop("title")
                genres, year = raw.get("genres"), raw.get("year")
                genres_typed = "genres" not in raw or (
                    type(genres) is list and all(type(g) is str for g in genres)
                )
                year_typed = year is None or (type(year) is int and -_YEAR_LIMIT <= year < _YEAR_LIMIT)
                attributes_typed &= genres_typed and year_typed
                rebuilt = genres_typed and year_typed and tuple(raw) in _PLAIN_KEYS
                if not (rebuilt and type(item_id) is int and item_id == position and type(title) is str):
                    irregular[position] = line
                titles += str(title).encode("utf-8", "surrogatepass")
                title_offsets.append(len(titles))
                has_genres.append(genres_typed and "genres" in raw)
                for name in genres if genres_typed and genres else ():
                    genre_codes.append(names.setdefault(name, len(names)))
                genre_offsets.append(len(genre_codes))
                years.append(year if year_typed and year is not None else 0)
                kind = (
                    _YEAR_ABSENT
                    if "year" not in raw or not year_typed
                    else _YEAR_NULL
                    if year is None
                    else _YEAR_KNOWN
                )
                year_kinds.append(kind)
        return cls(
            title_bytes=bytes(titles),
            title_offsets=np.frombuffer(title_offsets, dtype=np.int64),
            genre_names=tuple(names),
            genre_codes=np.frombuffer(genre_codes, dtype=np.int32),
            genre_offsets=np.frombuffer(genre_offsets, dtype=np.int64),
            has_genres=np.frombuffer(bytes(has_genres), dtype=np.bool_),
            years=np.frombuffer(years, dtype=np.int32),
            year_kinds=np.frombuffer(bytes(year_kinds), dtype=np.uint8),
            irregular=irregular,
            attributes_typed=attributes_typed,
        )

    def __len__(self) -> int:
        return len(self.title_offsets) - 1

    def title(self, position: int) -> str:
        position = self._position(position)
        if self.irregular and position in self.irregular:
            return self.item(position).title
        start, end = self.title_offsets[position : position + 2].tolist()
        return self.title_bytes[start:end].decode("utf-8", "surrogatepass")

    def titles(self) -> list[str]:
        """Every title, item 0 first (a list of N strings: for building an index, not to keep)."""
        offsets = self.title_offsets.tolist()
        data = self.title_bytes
        titles = [
            data[a:b].decode("utf-8", "surrogatepass") for a, b in zip(offsets[:-1], offsets[1:], strict=True)
        ]
        for position in self.irregular:
            titles[position] = self.item(position).title
        return titles

    def _position(self, index: int) -> int:
        """``index`` as a list reads it (negative from the end); IndexError outside."""
        position = index + len(self) if index < 0 else index
        if not 0 <= position < len(self):
            raise IndexError(f"item index {index} out of range for {len(self)} items")
        return position

    def item(self, position: int) -> Item:
        position = self._position(position)
        if self.irregular and position in self.irregular:
            return item_from_json(json.loads(self.irregular[position]))
        attributes: dict[str, Any] = {}
        if self.has_genres[position]:
            start, end = self.genre_offsets[position : position + 2].tolist()
            attributes["genres"] = [self.genre_names[c] for c in self.genre_codes[start:end].tolist()]
        kind = self.year_kinds[position]
        if kind != _YEAR_ABSENT:
            attributes["year"] = int(self.years[position]) if kind == _YEAR_KNOWN else None
        start, end = self.title_offsets[position : position + 2].tolist()
        return Item(position, self.title_bytes[start:end].decode("utf-8", "surrogatepass"), attributes)

    def iter_items(self, start: int = 0, stop: int | None = None) -> Iterator[Item]:
        """Items ``start`` .. ``stop - 1`` in order, made from the columns a chunk at a time."""
        stop = len(self) if stop is None else stop
        for chunk in range(start, stop, _ITER_CHUNK):
            end = min(stop, chunk + _ITER_CHUNK)
            title_offsets = self.title_offsets[chunk : end + 1].tolist()
            genre_offsets = self.genre_offsets[chunk : end + 1].tolist()
            codes = self.genre_codes[genre_offsets[0] : genre_offsets[-1]].tolist()
            first_code = genre_offsets[0]
            has_genres = self.has_genres[chunk:end].tolist()
            years, kinds = self.years[chunk:end].tolist(), self.year_kinds[chunk:end].tolist()
            names, data = self.genre_names, self.title_bytes
            for j in range(end - chunk):
                position = chunk + j
                if self.irregular and position in self.irregular:
                    yield self.item(position)
                    continue
                attributes: dict[str, Any] = {}
                if has_genres[j]:
                    first, last = genre_offsets[j] - first_code, genre_offsets[j + 1] - first_code
                    attributes["genres"] = [names[c] for c in codes[first:last]]
                if kinds[j] != _YEAR_ABSENT:
                    attributes["year"] = years[j] if kinds[j] == _YEAR_KNOWN else None
                title = data[title_offsets[j] : title_offsets[j + 1]].decode("utf-8", "surrogatepass")
                yield Item(position, title, attributes)

    def genre_matrix(self) -> tuple[tuple[str, ...], np.ndarray]:
        """The catalog's case-folded genre names (sorted) and bool [N, G]: item i has genre j (what
        the steering filter asks: genres compared case-blind). Needs :attr:`attributes_typed`."""
        if not self.attributes_typed:
            raise ValueError("genre_matrix: some item's genres are not a list of strings")
        folded = sorted({name.casefold() for name in self.genre_names})
        column = {name: j for j, name in enumerate(folded)}
        code_column = np.array([column[name.casefold()] for name in self.genre_names], dtype=np.int64)
        matrix = np.zeros((len(self), len(folded)), dtype=bool)
        rows = np.repeat(np.arange(len(self)), np.diff(self.genre_offsets))
        matrix[rows, code_column[self.genre_codes]] = True
        return tuple(folded), matrix

    def known_years(self) -> tuple[np.ndarray, np.ndarray]:
        """bool [N]: the year is known; int64 [N]: the year (0 where unknown). Needs attributes_typed."""
        if not self.attributes_typed:
            raise ValueError("known_years: some item's year is not a whole number")
        return self.year_kinds == _YEAR_KNOWN, self.years.astype(np.int64)


class CatalogItems(Sequence[Item]):
    """``Dataset.items``: every item in id order, made from the columns when read (nothing kept)."""

    def __init__(self, columns: ItemColumns):
        self.columns = columns

    def __len__(self) -> int:
        return len(self.columns)

    @overload
    def __getitem__(self, index: int) -> Item: ...

    @overload
    def __getitem__(self, index: slice) -> list[Item]: ...

    def __getitem__(self, index: int | slice) -> Item | list[Item]:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step == 1:
                return list(self.columns.iter_items(start, max(start, stop)))
            return [self.columns.item(i) for i in range(start, stop, step)]
        return self.columns.item(index)

    def __iter__(self) -> Iterator[Item]:
        return self.columns.iter_items()
