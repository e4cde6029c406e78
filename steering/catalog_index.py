"""Look-ups the parsers need from a catalog: titles -> ids, and the genre vocabulary."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence
from functools import cached_property
from typing import Protocol

from recmodels.dataset import Item
from steering.lexicon import ARTICLES, CLAUSE_BREAK, TERM_SPLIT, WORD, normalize_text


class Catalog(Protocol):
    """What steering needs from a dataset (``recmodels.dataset.Dataset`` satisfies it)."""

    @property
    def items(self) -> list[Item]: ...

    def item(self, item_id: int) -> Item: ...


def normalize_title(text: str) -> str:
    """Case, punctuation and a leading article do not matter when users name an item."""
    words = WORD.findall(text.casefold())
    return " ".join(words[1:] if len(words) > 1 and words[0] in ARTICLES else words)


class CatalogIndex:
    """Title and genre look-ups over one catalog, built once per catalog (or read from the steering
    look-up `recloop prepare` saved: :func:`steering.lookup.catalog_index`)."""

    TABLES = ("_ids_by_title", "genres", "fragile_titles")
    """The look-ups built from every item: what :mod:`steering.lookup` saves and gives back."""

    def __init__(self, catalog: Catalog, tables: dict[str, object] | None = None):
        self.catalog = catalog
        for name, value in (tables or {}).items():  # prepared tables: the cached properties' values
            if name not in self.TABLES:
                raise ValueError(f"unknown catalog index table {name!r}")
            self.__dict__[name] = value

    @cached_property
    def _ids_by_title(self) -> dict[str, list[int]]:
        index: dict[str, list[int]] = defaultdict(list)
        for item in self.catalog.items:
            key = normalize_title(item.title)
            if key:  # MovieLens id 266 has an empty title; nobody can name it
                index[key].append(item.id)
        return dict(index)

    @cached_property
    def genres(self) -> tuple[str, ...]:
        """Genre names present in the catalog (empty for title-only catalogs such as LastFM)."""
        return tuple(sorted({g for item in self.catalog.items for g in item.genres}))

    @cached_property
    def fragile_titles(self) -> list[str]:
        """Titles the clause/term splitting would cut ("Boot, Das", "G.I. Jane"), longest first."""
        titles = {normalize_text(item.title) for item in self.catalog.items if item.title}
        fragile = (t for t in titles if CLAUSE_BREAK.search(t) or TERM_SPLIT.search(t))
        return sorted(fragile, key=len, reverse=True)

    def canonical_genre(self, name: str) -> str | None:
        wanted = name.casefold()
        return next((g for g in self.genres if g.casefold() == wanted), None)

    def ids_for_title(self, text: str) -> list[int]:
        """Every item whose title matches ``text`` (several when titles repeat)."""
        return list(self._ids_by_title.get(normalize_title(text), ()))

    def resolve_title(self, text: str, prefer: Collection[int] = ()) -> int | None:
        """One item for ``text``: among duplicates, one the user has seen or been shown, else the first."""
        ids = self.ids_for_title(text)
        if not ids:
            return None
        return next((i for i in ids if i in prefer), ids[0])

    def titles(self, ids: Sequence[int]) -> list[str]:
        return [self.catalog.item(i).title for i in ids]


class InMemoryCatalog:
    """A catalog held in memory: for hand-made item sets (tests, previews) without a dataset directory."""

    def __init__(self, items: Sequence[Item]):
        if [item.id for item in items] != list(range(len(items))):
            raise ValueError("InMemoryCatalog: item ids must be 0..n-1 in order")
        self._items = list(items)

    @property
    def items(self) -> list[Item]:
        return self._items

    @property
    def n_items(self) -> int:
        return len(self._items)

    def item(self, item_id: int) -> Item:
        return self._items[item_id]

    def title(self, item_id: int) -> str:
        return self._items[item_id].title
