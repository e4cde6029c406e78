"""The spans of a command a parser can act on: genres, years, catalog titles and moods.

The learned parser splits the work: *what* a span refers to is looked up here, deterministically
(a lexicon of genre words, year expressions, the catalog's titles, a mood vocabulary), and
*which way* the user means it (wanted, unwanted, lifted, a taste anchor) is what its model
predicts from context. A span that is not found here is never applied: nothing is guessed.

Offsets are character offsets into the text as given, so the encoder's token offsets line up.
What the words mean is :mod:`steering.lexicon`'s; which words name catalog items is
:mod:`steering.titles`' (a title that is a single everyday word, "Heat", "Air", "Muse", only counts
when the user capitalised it).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from steering.catalog_index import CatalogIndex
from steering.lexicon import (
    AGE,
    CHILD_MAX_AGE,
    DECADE_NAMES,
    GENRE_WORDS,
    LIST_GAP,
    MOOD_WORDS,
    OLD_END,
    RECENT_SPAN,
    SMALL_NUMBERS,
    STYLE_WORDS,
    TENS,
    WORD,
    YEAR_PATTERNS,
    fold,
)
from steering.preferences import YearRange
from steering.titles import Named, TitleLookup, Words
from steering.tools import attribute_index

MentionKind = Literal["genre", "year", "item", "mood"]
MENTION_KINDS: tuple[MentionKind, ...] = ("genre", "year", "item", "mood")


@dataclass(frozen=True)
class Mention:
    """A span of the command and what it refers to (the role is the model's to predict)."""

    kind: MentionKind
    start: int
    end: int
    text: str
    genres: tuple[str, ...] = ()
    years: YearRange | None = None
    items: tuple[int, ...] = ()
    mood: str = ""
    every: bool = False
    """The items are all meant (a series: "the batman films"), not one name's candidates."""


@dataclass
class MentionFinder:
    """Finds mentions in commands over one catalog (built once per catalog)."""

    index: CatalogIndex
    common_words: Collection[str] = field(default_factory=frozenset)
    known_words: Collection[str] = field(default_factory=frozenset)
    name_like_words: Collection[str] = field(default_factory=frozenset)
    """Word lists of the encoder's vocabulary: what each does to names is said by
    :class:`~steering.titles.TitleLookup`; a known or everyday word is never read as a misspelt genre."""

    @cached_property
    def titles(self) -> TitleLookup:
        """The catalog's names (titles, aliases, short names, series)."""
        return TitleLookup(
            self.index, self.common_words, self.known_words, self.name_like_words, frozenset(self._vocabulary)
        )

    @cached_property
    def _known(self) -> frozenset[str]:
        return self.titles.known

    @cached_property
    def has_genres(self) -> bool:
        return bool(self.index.genres)

    @cached_property
    def newest_year(self) -> int | None:
        catalog = self.index.catalog
        arrays = attribute_index(catalog)  # the filter's year arrays (from prepare's look-up when saved)
        if arrays is not None:  # 10^6 items: ~1 ms, where making every Item took 2.5 s
            years = arrays.years[arrays.year_known & (arrays.years != 0)]  # a year 0 says no more than none
            return int(years.max()) if len(years) else None
        years = [item.year for item in catalog.items if item.year]
        return max(years) if years else None

    @cached_property
    def _vocabulary(self) -> dict[str, tuple[MentionKind, object]]:
        """Genre and mood word sequences -> (kind, value); a catalog without genres reads them as moods."""
        vocab: dict[str, tuple[MentionKind, object]] = {}
        for words in STYLE_WORDS:
            vocab[words] = ("mood", words)
        for words, genres in GENRE_WORDS.items():
            canonical = tuple(g for g in (self.index.canonical_genre(n) for n in genres) if g)
            if canonical and len(canonical) == len(genres):
                vocab[words] = ("genre", canonical)
            elif not self.has_genres:
                vocab[words] = ("mood", words)
        for words, mood in MOOD_WORDS.items():
            vocab.setdefault(words, ("mood", mood))
        return vocab

    @cached_property
    def _fuzzy_genre_words(self) -> list[str]:
        return [
            w
            for w, (kind, _v) in self._vocabulary.items()
            if kind == "genre" and len(w) >= 5 and " " not in w
        ]

    def find(self, text: str) -> list[Mention]:
        """Non-overlapping mentions, in text order; the longest span wins an overlap."""
        folded = fold(text)
        words = [(m.start(), m.end(), m.group()) for m in WORD.finditer(folded)]
        candidates = [*self._years(folded), *self._ages(folded, text)]
        candidates += [*self._lexicon(words, text), *self._items(words, text), *self._series(words, text)]
        chosen = _longest_first(candidates, folded)
        if any(m.kind == "item" for m in chosen):
            chosen += self._listed_names(words, text, folded, chosen)
        return sorted(chosen, key=lambda m: m.start)

    def word_mentions(self, text: str) -> list[Mention]:
        """The mentions of the word tables alone (genres, moods, years, a child's age), no titles:
        non-overlapping, in text order, the longest span winning an overlap as in :meth:`find`."""
        folded = fold(text)
        words = [(m.start(), m.end(), m.group()) for m in WORD.finditer(folded)]
        candidates = [*self._years(folded), *self._ages(folded, text), *self._lexicon(words, text)]
        return sorted(_longest_first(candidates, folded), key=lambda m: m.start)

    def _listed_names(self, words: Words, text: str, folded: str, chosen: list[Mention]) -> list[Mention]:
        """Names said in lower case that count only capitalised ("blur", "whitney"), taken when they
        stand in a list beside a title found on its own ("oasis or blur", "mariah, whitney, celine"):
        in a list of names, the next one is a name too. The list may run on from a name taken so."""
        lenient = [
            m for m in self._items(words, text, strict_case=False) if not any(overlaps(m, c) for c in chosen)
        ]
        named = [m for m in chosen if m.kind == "item"]
        taken: list[Mention] = []
        grew = True
        while grew:
            grew = False
            for mention in lenient:
                if any(overlaps(mention, t) for t in taken):
                    continue
                if any(LIST_GAP.fullmatch(_gap(folded, n, mention)) for n in named):
                    taken.append(mention)
                    named.append(mention)
                    grew = True
        return taken

    # --- years -----------------------------------------------------------------------------

    def _years(self, folded: str) -> Iterable[Mention]:
        seen: set[tuple[int, int]] = set()
        for name, pattern in YEAR_PATTERNS:
            for found in pattern.finditer(folded):
                span = (found.start(), found.end())
                if span in seen:
                    continue
                years = self._year_range(name, found)
                if years is None:
                    continue
                seen.add(span)
                if self.newest_year is None:  # a catalog without years: "80s stuff" is a mood
                    yield Mention("mood", *span, text=found.group(), mood=found.group())
                else:
                    yield Mention("year", *span, text=found.group(), years=years)

    def _year_range(self, name: str, found: re.Match[str]) -> YearRange | None:
        groups = [g for g in found.groups()]
        try:
            if name == "between":
                low, high = sorted(_year(y) for y in groups if y)
                return YearRange(start=low, end=high)
            if name == "decade_pair":
                first = _decade(groups[0], *groups[1:4])
                second = _decade(groups[4], *groups[5:8])
                return YearRange(start=min(first.start, second.start), end=max(first.end, second.end))
            if name == "before_decade":
                return YearRange(end=_decade(*groups[1:5]).start - 1)
            if name == "after_decade":
                return YearRange(start=_decade(*groups[1:5]).end + 1)
            if name == "since_decade":
                decade = _decade(None, *groups[0:3]) if any(groups[0:3]) else _decade(None, *groups[3:6])
                return YearRange(start=decade.start)
            if name in ("before", "after"):
                year = _year(groups[1])
                return YearRange(end=year - 1) if name == "before" else YearRange(start=year + 1)
            if name in ("until", "until_suffix"):
                return YearRange(end=_year(groups[0]))
            if name == "since":
                return YearRange(start=_year(next(g for g in groups if g)))
            if name == "decade":
                return _decade(*groups[0:4])
            if name == "year":
                return YearRange(start=_year(groups[0]), end=_year(groups[0]))
            if name == "year_words":
                year = 1900 + 10 * (TENS.index(groups[0]) + 2)
                year += SMALL_NUMBERS.index(groups[1]) + 1 if groups[1] else 0
                return YearRange(start=year, end=year)
            if name == "decade_years":
                return _decade(None, None, next(g for g in groups if g))
            if name == "recent":
                return YearRange(start=self.newest_year - RECENT_SPAN) if self.newest_year else None
            if name == "old":
                return YearRange(end=OLD_END)
        except ValueError:
            return None
        return None

    # --- genres and moods --------------------------------------------------------------------

    def _ages(self, folded: str, text: str) -> Iterable[Mention]:
        """A child's age ("for my 5 year old", "a ten-year-old") asks for children's films."""
        for found in AGE.finditer(folded):
            number = found.group(1)
            age = int(number) if number.isdigit() else SMALL_NUMBERS.index(number) + 1
            if not 0 < age <= CHILD_MAX_AGE:
                continue
            start, end = found.span()
            kind, value = self._vocabulary["kids"]
            if kind == "genre":
                yield Mention("genre", start, end, text[start:end], genres=value)  # type: ignore[arg-type]
            else:
                yield Mention("mood", start, end, text[start:end], mood="suitable for kids")

    def _lexicon(self, words: Words, text: str) -> Iterable[Mention]:
        vocab = self._vocabulary
        for i in range(len(words)):
            for n in (3, 2, 1):
                if i + n > len(words):
                    continue
                key = " ".join(w for _s, _e, w in words[i : i + n])
                found = vocab.get(key)
                if found is None and n == 1 and len(key) >= 5 and key not in self._known:
                    close = difflib.get_close_matches(key, self._fuzzy_genre_words, n=1, cutoff=0.84)
                    found = vocab[close[0]] if close else None
                if found is None:
                    continue
                start, end = words[i][0], words[i + n - 1][1]
                kind, value = found
                if kind == "genre":
                    yield Mention("genre", start, end, text[start:end], genres=value)  # type: ignore[arg-type]
                else:
                    yield Mention("mood", start, end, text[start:end], mood=str(value))
                break

    # --- titles ------------------------------------------------------------------------------

    def _items(self, words: Words, text: str, strict_case: bool = True) -> Iterable[Mention]:
        """``strict_case``: names that count only capitalised must be (off: what a list may hold)."""
        for named in self.titles.names(words, text, strict_case):
            yield _item_mention(named, text)

    def _series(self, words: Words, text: str) -> Iterable[Mention]:
        for named in self.titles.series(words, text):
            yield _item_mention(named, text)


def _item_mention(named: Named, text: str) -> Mention:
    return Mention(
        "item", named.start, named.end, text[named.start : named.end], items=named.items, every=named.every
    )


def overlaps(a: Mention, b: Mention) -> bool:
    """Whether two spans share a character."""
    return a.start < b.end and b.start < a.end


def _gap(folded: str, a: Mention, b: Mention) -> str:
    """The text between two mentions that do not overlap, in whichever order they stand."""
    first, second = (a, b) if a.end <= b.start else (b, a)
    return folded[first.end : second.start]


def _year(text: str) -> int:
    """A year as written: "1977", or "'77" (a two-digit year below 30 is this century's)."""
    if text.startswith("'"):
        short = int(text[1:])
        return 2000 + short if short < 30 else 1900 + short
    return int(text)


def _decade_name(word: str) -> str:
    """A decade's name as written, misspelt by a letter or two ("ninties", "eighies", "ninetys"); a
    word that is none ("movies", "cities") raises ValueError."""
    if word.endswith("ys"):
        word = word[:-2] + "ies"
    if word in DECADE_NAMES:
        return word
    close = difflib.get_close_matches(word, [n for n in DECADE_NAMES if n[0] == word[0]], n=1, cutoff=0.85)
    if not close:
        raise ValueError(f"not a decade: {word}")
    return close[0]


def _decade(four: str | None, full: str | None, two: str | None, word: str | None = None) -> YearRange:
    """A decade, narrowed by early/mid/late when given ('four' is the modifier here)."""
    modifier = four
    if full:
        start = int(full)
    elif two:
        short = int(two)
        start = 1900 + short if short >= 20 else 2000 + short
    elif word:
        start = DECADE_NAMES[_decade_name(word)]
    else:
        raise ValueError("no decade")
    if modifier == "early":
        return YearRange(start=start, end=start + 4)
    if modifier in ("mid", "middle"):  # the middle five years (the labelling contract, frozen set v4)
        return YearRange(start=start + 3, end=start + 7)
    if modifier == "late":
        return YearRange(start=start + 5, end=start + 9)
    return YearRange(start=start, end=start + 9)


def _longest_first(candidates: list[Mention], folded: str) -> list[Mention]:
    """The candidates that survive overlaps, the longest span first (then by kind, then position);
    a span inside "my 15 year old" counts only as a genre: it names no film, and its "old" is no era."""
    ages = [found.span() for found in AGE.finditer(folded)]
    candidates = [
        m for m in candidates if m.kind == "genre" or not any(s < m.end and m.start < e for s, e in ages)
    ]
    priority = {"year": 0, "genre": 1, "mood": 2, "item": 3}
    candidates.sort(key=lambda m: (-(m.end - m.start), priority[m.kind], m.start))
    chosen: list[Mention] = []
    for mention in candidates:
        if not any(overlaps(mention, c) for c in chosen):
            chosen.append(mention)
    return chosen
