"""The spans of a command a parser can act on: genres, years, catalog titles and moods.

The learned parser splits the work: *what* a span refers to is looked up here, deterministically
(a lexicon of genre words, year expressions, the catalog's titles, a mood vocabulary), and
*which way* the user means it (wanted, unwanted, lifted, a taste anchor) is what its model
predicts from context. A span that is not found here is never applied: nothing is guessed.

Offsets are character offsets into the text as given, so the encoder's token offsets line up.
Titles are matched on accent- and case-folded words; a title that is a single everyday word
("Heat", "Air", "Muse") only counts when the user capitalised it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from steering.catalog_index import CatalogIndex
from steering.lexicon import (
    ACT,
    AGE,
    AKA,
    AMPERSAND,
    ARTICLES,
    BRACKETED,
    CHAT_ABBREVIATIONS,
    CHILD_MAX_AGE,
    DECADE_NAMES,
    GENRE_WORDS,
    LETTER_SYMBOLS,
    LIST_GAP,
    MOOD_WORDS,
    MOVED_ARTICLE,
    NOT_AN_ALIAS,
    NUMERALS,
    OLD_END,
    RECENT_SPAN,
    SERIES_EVERY,
    SERIES_NOUNS,
    SERIES_SINGULAR,
    SMALL_NUMBERS,
    STYLE_WORDS,
    SUBTITLE,
    SUFFIXES,
    SYMBOL_IN_WORD,
    TENS,
    UP_TO_NINETEEN,
    WORD,
    YEAR_PATTERNS,
    fold,
    word_key,
)
from steering.preferences import YearRange

MentionKind = Literal["genre", "year", "item", "mood"]
MENTION_KINDS: tuple[MentionKind, ...] = ("genre", "year", "item", "mood")
MAX_TITLE_WORDS = 12
FUZZY_MIN_CHARS = 7  # a misspelt title is looked for only from this many characters ("radiohed")
MISSPELT_MAX_WORDS = 6  # "raiders of the lost arc"
FUZZY_CUTOFF = 0.88  # difflib ratio: one letter wrong in eight


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


def _numbered(words: Sequence[str]) -> str:
    """Title words with a sequel number as digits ("godfather part ii" -> "godfather part 2"); a first
    word stays as it is ("Seven", "Three Colors: Red")."""
    return " ".join(w if i == 0 else NUMERALS.get(w, w) for i, w in enumerate(words))


def title_aliases(title: str) -> list[tuple[str, bool]]:
    """Shorter names a catalog title is known by, most specific first: the title without its bracketed
    part and the bracketed alternative ("Seven (Se7en)", "(a.k.a. X)"), a trailing article moved to the
    front ("Promesse, La" -> "La Promesse"), the part before a subtitle ("Star Trek: First Contact" ->
    "Star Trek", "Terminator 2: Judgment Day" -> "Terminator 2"), and a sequel number said without
    "part" ("The Godfather: Part II" -> "The Godfather II"). Excludes the title itself.

    Each comes with whether it is a short form (a subtitle or "part" dropped): a one-word short form
    ("Mission" of "Mission: Impossible") is a guess, only taken when it is a rare word."""
    names: dict[str, bool] = {}

    def add(name: str, short: bool) -> None:
        name = name.strip(" ,;:-")
        moved = MOVED_ARTICLE.match(name)
        if moved:
            add(f"{moved.group(2)} {moved.group(1)}", short)
            name = moved.group(1)
        if not name or name in names:
            return
        names[name] = short
        add(_spelt_out(name), short)
        subtitled = SUBTITLE.match(name)
        if subtitled:
            add(subtitled.group(1), True)
        words = name.split()
        for i, word in enumerate(words[:-1]):
            if word.casefold() == "part" and NUMERALS.get(words[i + 1].casefold(), words[i + 1]).isdigit():
                add(" ".join(w.rstrip(":") for w in (*words[:i], *words[i + 1 :])), True)

    add(title, False)
    bracketed = BRACKETED.match(title.strip())
    if bracketed:
        main, alternative = bracketed.group(1), AKA.sub("", bracketed.group(2).strip())
        add(main, False)
        if not alternative.isdigit() and not NOT_AN_ALIAS.match(alternative):
            add(alternative, False)
    return [(n, short) for n, short in names.items() if n != title.strip()]


def _number_in_words(n: int) -> str:
    if n < 20:
        return UP_TO_NINETEEN[n - 1]
    tens, unit = divmod(n, 10)
    return TENS[tens - 2] + (f"-{UP_TO_NINETEEN[unit - 1]}" if unit else "")


def _spelt_out(title: str) -> str:
    """The title as people type it: symbols standing for letters become the letters ("Ke$ha" ->
    "Kesha") and numbers from 1 to 99 become words ("12 Angry Men" -> "twelve Angry Men")."""
    spelt = SYMBOL_IN_WORD.sub(lambda m: LETTER_SYMBOLS[m.group()], title)
    return re.sub(r"\b([1-9]\d?)\b", lambda m: _number_in_words(int(m.group(1))), spelt)


@dataclass
class MentionFinder:
    """Finds mentions in commands over one catalog (built once per catalog)."""

    index: CatalogIndex
    common_words: Collection[str] = field(default_factory=frozenset)
    """Everyday words: a one-word title among them must be capitalised to count (e.g. 'Heat'), and a
    one-word alias (a title's short form) is never one of them. Rarer words ("fargo") count lower-cased."""
    known_words: Collection[str] = field(default_factory=frozenset)
    """Words of the language beyond the everyday ones (default: the everyday words): a known word is
    never read as a misspelt title or genre."""
    name_like_words: Collection[str] = field(default_factory=frozenset)
    """Everyday words rare enough that one said with a capital may be the last word of a name
    standing for it ("Bowie", "Floyd"): see :attr:`_short_names`."""

    @cached_property
    def _known(self) -> frozenset[str]:
        return frozenset(self.known_words) | frozenset(self.common_words)

    @cached_property
    def has_genres(self) -> bool:
        return bool(self.index.genres)

    @cached_property
    def newest_year(self) -> int | None:
        years = [item.year for item in self.index.catalog.items if item.year]
        return max(years) if years else None

    @cached_property
    def _titles(self) -> dict[str, tuple[int, ...]]:
        return self._title_table[0]

    @cached_property
    def _cased_aliases(self) -> frozenset[str]:
        return self._title_table[1]

    @cached_property
    def _title_table(self) -> tuple[dict[str, tuple[int, ...]], frozenset[str]]:
        """Title keys -> items, and the alias keys that count only said with capitals.

        An alias (:func:`title_aliases`) never takes a key a whole title has ("Alien" stays the film,
        not "Alien: Resurrection"); a one-word short form must be a rare word; and another name made
        of everyday words only ("Good Morning", "Hate" of a foreign film) counts only capitalised."""
        titles: dict[str, list[int]] = {}
        aliases: dict[str, list[int]] = {}
        cased: set[str] = set()
        for item in self.index.catalog.items:
            title = item.title or ""
            for name, short in ((title, False), *title_aliases(title)):
                into = titles if name == title else aliases
                # "Simon & Garfunkel", "Florence + the Machine", "Guns N' Roses" are said with "and" too
                for said in dict.fromkeys((name, AMPERSAND.sub(" and ", name))):
                    key = self._title_key(said)
                    if len(key) < 2 or key.isdigit():
                        continue
                    if short and " " not in key and (key in self.common_words or len(key) < 4):
                        continue
                    # a title's number said in words is no everyday phrase ("twelve angry men")
                    numbered = any(c.isdigit() for c in title) and not any(c.isdigit() for c in said)
                    everyday = all(w in self.common_words for w in key.split())
                    if into is aliases and not short and everyday and not numbered:
                        cased.add(key)
                    into.setdefault(key, []).append(item.id)
        for key, ids in aliases.items():
            titles.setdefault(key, ids)
        table = {k: tuple(dict.fromkeys(v)) for k, v in titles.items()}
        return table, frozenset(
            k for k in cased if k in aliases and table[k] == tuple(dict.fromkeys(aliases[k]))
        )

    @staticmethod
    def _title_key(name: str) -> str:
        words = word_key(name).split()
        if words and words[0] in ARTICLES and len(words) > 1:
            words = words[1:]
        return _numbered(words)

    @cached_property
    def _article_titles(self) -> frozenset[str]:
        """Title keys whose catalog title starts with "the" ("The Killers" -> "killers")."""
        keys = set()
        for item in self.index.catalog.items:
            words = word_key(item.title or "").split()
            if len(words) > 1 and words[0] == "the":
                keys.add(_numbered(words[1:]))
        return frozenset(keys)

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
        # "my 15 year old" names no film, and its "old" is no era
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
        if any(m.kind == "item" for m in chosen):
            chosen += self._listed_names(words, text, folded, chosen)
        return sorted(chosen, key=lambda m: m.start)

    def _listed_names(
        self, words: list[tuple[int, int, str]], text: str, folded: str, chosen: list[Mention]
    ) -> list[Mention]:
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

    def _lexicon(self, words: list[tuple[int, int, str]], text: str) -> Iterable[Mention]:
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

    def _items(
        self, words: list[tuple[int, int, str]], text: str, strict_case: bool = True
    ) -> Iterable[Mention]:
        """``strict_case``: names that count only capitalised must be (off: what a list may hold)."""
        titles, vocab = self._titles, self._vocabulary
        for i in range(len(words)):
            for n in range(min(MAX_TITLE_WORDS, len(words) - i), 0, -1):
                key = _numbered([w for _s, _e, w in words[i : i + n]])
                ids = titles.get(key)
                start, end = words[i][0], words[i + n - 1][1]
                if ids is None and n == 1 and key in self._short_names:
                    ids, capitals = self._short_names[key]
                    said = text[start:end]
                    capitalised = said.isupper() if capitals == "all" else said[0].isupper()
                    if capitals and strict_case and not capitalised:
                        ids = None
                if ids is None:
                    continue
                # a two-character title only with a digit in it ("U2"; not "it", "me")
                if n == 1 and (key in vocab or key in ARTICLES or (len(key) < 3 and key.isalpha())):
                    continue
                # "the killers", "the godfather": an everyday word after the article its title has
                after_its_article = i > 0 and words[i - 1][2] == "the" and key in self._article_titles
                lower_word = n == 1 and key in self.common_words and not text[start].isupper()
                if strict_case and lower_word and not after_its_article:
                    continue
                if strict_case and key in self._cased_aliases and not _capitalised(words[i : i + n], text):
                    continue
                yield Mention("item", start, end, text[start:end], items=ids)
                break
            else:
                if strict_case:
                    yield from self._misspelt_items(words, i, text)

    @cached_property
    def _series_table(self) -> dict[str, tuple[tuple[int, ...], tuple[int, ...]]]:
        """The first one to three words of titles, shared by two titles or more -> (all of them, the
        ones whose whole key is those words: the original a sequel follows)."""
        starting: dict[str, list[int]] = {}
        for item in self.index.catalog.items:
            words = self._title_key(item.title or "").split()
            for n in range(1, min(3, len(words)) + 1):
                starting.setdefault(" ".join(words[:n]), []).append(item.id)
        return {
            key: (tuple(ids), self._titles.get(key, ()))
            for key, ids in starting.items()
            if len(ids) >= 2 and len(key) >= 3 and key not in self._vocabulary
        }

    def _series(self, words: list[tuple[int, int, str]], text: str) -> Iterable[Mention]:
        """A series asked for by its shared name and a plural ("batman films", "every star trek
        movie"): every title that starts with the name, the name's own title left out for "sequels"."""
        table = self._series_table
        for i in range(len(words)):
            for n in (3, 2, 1):
                if i + n >= len(words):
                    continue
                key = " ".join(w for _s, _e, w in words[i : i + n])
                noun = words[i + n][2]
                every = i > 0 and words[i - 1][2] in SERIES_EVERY
                if key not in table or not (noun in SERIES_NOUNS or (every and noun in SERIES_SINGULAR)):
                    continue
                # the shared name must be a name itself (a title or its short form: "Batman", "Star
                # Trek"), so that "good films" is no series of the titles starting with "good"
                if key not in self._titles or (
                    key in self._cased_aliases and not _capitalised(words[i : i + n], text)
                ):
                    continue
                every_title, original = table[key]
                ids = tuple(x for x in every_title if x not in original) if noun == "sequels" else every_title
                if ids:
                    start, end = words[i][0], words[i + n][1]
                    yield Mention("item", start, end, text[start:end], items=ids, every=True)
                break

    def _unheard_of(self, word: str) -> bool:
        """A word of six letters or more that is no word of the language, nor one with a suffix
        ("mariah", "shawshank"; not "awfully", "jerky"): lower-cased, it can only be the name."""
        if len(word) < 6 or word in self._known:
            return False
        stems = [word[: -len(end)] for end in SUFFIXES if word.endswith(end)]
        return not any(stem in self._known or stem + "e" in self._known for stem in stems)

    @cached_property
    def _short_names(self) -> dict[str, tuple[tuple[int, ...], str]]:
        """One word a name of several is called by: a surname or given name ("Ozzy", "Einaudi" for
        "Ludovico Einaudi", "Shawshank"), and the initials of a name of three words or more ("RHCP",
        "QOTSA", "NIN"). Word -> (items, capitals: "" lower case counts, "first" a capital needed,
        "all" said in capitals).

        Only words no other title holds, never an everyday word ("more" is not Faith No More) except
        a name-like one ending the name, said with its capital ("Bowie", "Floyd"), never a title or
        alias. A name that other names hold whole stands for it ("Hendrix" is Jimi Hendrix, not The
        Jimi Hendrix Experience). A given name that is a word of the language ("britney") needs its
        capital; a rare surname ("hendrix") does not. Three initials must be said in capitals ("NIN",
        not "nin")."""
        if not self.common_words:  # without everyday words no word can be told rare
            return {}
        holders: dict[str, set[int]] = {}
        keys: dict[int, str] = {}
        acts: set[int] = set()  # names of a group or a pairing ("Bob Marley & The Wailers")
        for item in self.index.catalog.items:
            keys[item.id] = f" {word_key(item.title or '')} "
            if ACT.search(item.title or ""):
                acts.add(item.id)
            for word in keys[item.id].split():
                holders.setdefault(word, set()).add(item.id)
        found: dict[str, tuple[tuple[int, ...], str]] = {}
        for item in self.index.catalog.items:
            words = self._title_key(item.title or "").split()
            if len(words) < 2 or not all(w.isalpha() for w in words):
                continue
            candidates = {words[0], words[-1]} if len(words) <= 3 else set()
            for word in candidates:
                # the person, not the acts named after them: "Hendrix" is Jimi Hendrix, whom "The Jimi
                # Hendrix Experience" names whole (the contract's Nick Cave rule); "Bach" stays unread
                # between Sebastian Bach and Johann Sebastian Bach, no act
                others = holders.get(word, set()) - {item.id}
                if len(word) < 4 or any(o not in acts or keys[item.id] not in keys[o] for o in others):
                    continue
                if word not in self.common_words:
                    # a rare surname counts lower-cased too ("hendrix"), a given name only with its capital
                    rare_surname = word == words[-1] and word in self.known_words
                    lower = rare_surname or self._unheard_of(word)
                    found[word] = ((item.id,), "" if lower else "first")
                elif word == words[-1] and word in self.name_like_words:
                    found[word] = ((item.id,), "first")  # a surname: "Bowie", "Floyd", "Swift"
            initials = "".join(w[0] for w in words)
            if len(words) >= 3 and initials not in self._known and initials not in CHAT_ABBREVIATIONS:
                capitals = "all" if len(initials) == 3 else ""
                found[initials] = (
                    (found[initials][0] + (item.id,), capitals)
                    if initials in found
                    else ((item.id,), capitals)
                )
        taken = self._titles
        return {k: v for k, v in found.items() if k not in taken and k not in self._vocabulary}

    @cached_property
    def _titles_by_prefix(self) -> dict[str, list[str]]:
        """Title keys of at least FUZZY_MIN_CHARS characters by their first two letters (a misspelt
        title keeps its start far more often than not: "jurasic park", "radiohed")."""
        buckets: dict[str, list[str]] = {}
        for key in self._titles:
            if len(key) >= FUZZY_MIN_CHARS:
                buckets.setdefault(key[:2], []).append(key)
        return buckets

    def _misspelt_items(self, words: list[tuple[int, int, str]], i: int, text: str) -> Iterable[Mention]:
        """A title one or two letters off ("terminater 2", "red hot chilli peppers"), from word i: the
        closest key within FUZZY_CUTOFF, among keys of about the same length and the same start.
        One everyday word is never read as a misspelt title."""
        for n in range(min(MISSPELT_MAX_WORDS, len(words) - i), 0, -1):
            key = _numbered([w for _s, _e, w in words[i : i + n]])
            everyday = n == 1 and (key in self._known or key in self._vocabulary)
            # a key spelt right was judged by the title rules already ("good morning" uncapitalised)
            if len(key) < FUZZY_MIN_CHARS or everyday or key in self._titles:
                continue
            # an everyday phrase is no misspelt name of everyday words ("good mornings")
            plain = all(w in self.common_words for w in key.split())
            near = [
                k
                for k in self._titles_by_prefix.get(key[:2], ())
                if abs(len(k) - len(key)) <= 2 and not (plain and k in self._cased_aliases)
            ]
            close = difflib.get_close_matches(key, near, n=1, cutoff=FUZZY_CUTOFF)
            if close:
                start, end = words[i][0], words[i + n - 1][1]
                yield Mention("item", start, end, text[start:end], items=self._titles[close[0]])
                return


def overlaps(a: Mention, b: Mention) -> bool:
    """Whether two spans share a character."""
    return a.start < b.end and b.start < a.end


def _gap(folded: str, a: Mention, b: Mention) -> str:
    """The text between two mentions that do not overlap, in whichever order they stand."""
    first, second = (a, b) if a.end <= b.start else (b, a)
    return folded[first.end : second.start]


def _capitalised(words: Sequence[tuple[int, int, str]], text: str) -> bool:
    """Every word said with a capital ("Die Hard", not "die hard")."""
    return all(text[start].isupper() for start, _end, _word in words)


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
