"""The catalog's names: which words of a command name which items.

A name is looked up on accent- and case-folded words: a title whole, or a name it is known by
(:func:`title_aliases`: without its bracketed part or subtitle, an article moved back to the front, a
sequel number spelt another way, numbers and symbols said as words), a surname or initials standing
for a name of several words (:attr:`TitleLookup.short_names`), a series by its shared name and a
plural ("the batman films"), and a title one or two letters off ("jurasic park"). A one-word name
that is an everyday word ("Heat", "Air", "Muse") counts only when the user capitalised it.

What a name is, is decided here; :mod:`steering.mentions` makes the names it finds mentions.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

from steering.catalog_index import CatalogIndex
from steering.lexicon import (
    ACT,
    AKA,
    AMPERSAND,
    ARTICLES,
    BRACKETED,
    CHAT_ABBREVIATIONS,
    LETTER_SYMBOLS,
    MOVED_ARTICLE,
    NOT_AN_ALIAS,
    NUMERALS,
    SERIES_EVERY,
    SERIES_NOUNS,
    SERIES_SINGULAR,
    SUBTITLE,
    SUFFIXES,
    SYMBOL_IN_WORD,
    TENS,
    UP_TO_NINETEEN,
    word_key,
)

MAX_TITLE_WORDS = 12
FUZZY_MIN_CHARS = 7  # a misspelt title is looked for only from this many characters ("radiohed")
MISSPELT_MAX_WORDS = 6  # "raiders of the lost arc"
FUZZY_CUTOFF = 0.88  # difflib ratio: one letter wrong in eight

Words = list[tuple[int, int, str]]
"""A command's words: (start, end, the folded word)."""


class Named(NamedTuple):
    """A span of the command that names catalog items."""

    start: int
    end: int
    items: tuple[int, ...]
    every: bool = False
    """The items are all meant (a series: "the batman films"), not one name's candidates."""


def numbered(words: Sequence[str]) -> str:
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


def _capitalised(words: Sequence[tuple[int, int, str]], text: str) -> bool:
    """Every word said with a capital ("Die Hard", not "die hard")."""
    return all(text[start].isupper() for start, _end, _word in words)


@dataclass
class TitleLookup:
    """The names of one catalog's items (built once per catalog, by the mention finder)."""

    index: CatalogIndex
    common_words: Collection[str] = field(default_factory=frozenset)
    """Everyday words: a one-word title among them must be capitalised to count (e.g. 'Heat'), and a
    one-word alias (a title's short form) is never one of them. Rarer words ("fargo") count lower-cased."""
    known_words: Collection[str] = field(default_factory=frozenset)
    """Words of the language beyond the everyday ones (default: the everyday words): a known word is
    never read as a misspelt title."""
    name_like_words: Collection[str] = field(default_factory=frozenset)
    """Everyday words rare enough that one said with a capital may be the last word of a name
    standing for it ("Bowie", "Floyd"): see :attr:`short_names`."""
    vocabulary: Collection[str] = field(default_factory=frozenset)
    """Genre and mood words (the lexicon's keys the catalog reads): never a one-word name or a series."""

    @cached_property
    def known(self) -> frozenset[str]:
        return frozenset(self.known_words) | frozenset(self.common_words)

    @cached_property
    def titles(self) -> dict[str, tuple[int, ...]]:
        return self._title_table[0]

    @cached_property
    def cased_aliases(self) -> frozenset[str]:
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
                    key = self.title_key(said)
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
    def title_key(name: str) -> str:
        words = word_key(name).split()
        if words and words[0] in ARTICLES and len(words) > 1:
            words = words[1:]
        return numbered(words)

    @cached_property
    def _article_titles(self) -> frozenset[str]:
        """Title keys whose catalog title starts with "the" ("The Killers" -> "killers")."""
        keys = set()
        for item in self.index.catalog.items:
            words = word_key(item.title or "").split()
            if len(words) > 1 and words[0] == "the":
                keys.add(numbered(words[1:]))
        return frozenset(keys)

    def _unheard_of(self, word: str) -> bool:
        """A word of six letters or more that is no word of the language, nor one with a suffix
        ("mariah", "shawshank"; not "awfully", "jerky"): lower-cased, it can only be the name."""
        if len(word) < 6 or word in self.known:
            return False
        stems = [word[: -len(end)] for end in SUFFIXES if word.endswith(end)]
        return not any(stem in self.known or stem + "e" in self.known for stem in stems)

    @cached_property
    def short_names(self) -> dict[str, tuple[tuple[int, ...], str]]:
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
            words = self.title_key(item.title or "").split()
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
            if len(words) >= 3 and initials not in self.known and initials not in CHAT_ABBREVIATIONS:
                capitals = "all" if len(initials) == 3 else ""
                found[initials] = (
                    (found[initials][0] + (item.id,), capitals)
                    if initials in found
                    else ((item.id,), capitals)
                )
        taken = self.titles
        return {k: v for k, v in found.items() if k not in taken and k not in self.vocabulary}

    @cached_property
    def _titles_by_prefix(self) -> dict[str, list[str]]:
        """Title keys of at least FUZZY_MIN_CHARS characters by their first two letters (a misspelt
        title keeps its start far more often than not: "jurasic park", "radiohed")."""
        buckets: dict[str, list[str]] = {}
        for key in self.titles:
            if len(key) >= FUZZY_MIN_CHARS:
                buckets.setdefault(key[:2], []).append(key)
        return buckets

    def _misspelt(self, words: Words, i: int, text: str) -> Iterable[Named]:
        """A title one or two letters off ("terminater 2", "red hot chilli peppers"), from word i: the
        closest key within FUZZY_CUTOFF, among keys of about the same length and the same start.
        One everyday word is never read as a misspelt title."""
        for n in range(min(MISSPELT_MAX_WORDS, len(words) - i), 0, -1):
            key = numbered([w for _s, _e, w in words[i : i + n]])
            everyday = n == 1 and (key in self.known or key in self.vocabulary)
            # a key spelt right was judged by the title rules already ("good morning" uncapitalised)
            if len(key) < FUZZY_MIN_CHARS or everyday or key in self.titles:
                continue
            # an everyday phrase is no misspelt name of everyday words ("good mornings")
            plain = all(w in self.common_words for w in key.split())
            near = [
                k
                for k in self._titles_by_prefix.get(key[:2], ())
                if abs(len(k) - len(key)) <= 2 and not (plain and k in self.cased_aliases)
            ]
            close = difflib.get_close_matches(key, near, n=1, cutoff=FUZZY_CUTOFF)
            if close:
                start, end = words[i][0], words[i + n - 1][1]
                yield Named(start, end, self.titles[close[0]])
                return

    def names(self, words: Words, text: str, strict_case: bool = True) -> Iterable[Named]:
        """``strict_case``: names that count only capitalised must be (off: what a list may hold)."""
        titles, vocab = self.titles, self.vocabulary
        for i in range(len(words)):
            for n in range(min(MAX_TITLE_WORDS, len(words) - i), 0, -1):
                key = numbered([w for _s, _e, w in words[i : i + n]])
                ids = titles.get(key)
                start, end = words[i][0], words[i + n - 1][1]
                if ids is None and n == 1 and key in self.short_names:
                    ids, capitals = self.short_names[key]
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
                if strict_case and key in self.cased_aliases and not _capitalised(words[i : i + n], text):
                    continue
                yield Named(start, end, ids)
                break
            else:
                if strict_case:
                    yield from self._misspelt(words, i, text)

    @cached_property
    def series_table(self) -> dict[str, tuple[tuple[int, ...], tuple[int, ...]]]:
        """The first one to three words of titles, shared by two titles or more -> (all of them, the
        ones whose whole key is those words: the original a sequel follows)."""
        starting: dict[str, list[int]] = {}
        for item in self.index.catalog.items:
            words = self.title_key(item.title or "").split()
            for n in range(1, min(3, len(words)) + 1):
                starting.setdefault(" ".join(words[:n]), []).append(item.id)
        return {
            key: (tuple(ids), self.titles.get(key, ()))
            for key, ids in starting.items()
            if len(ids) >= 2 and len(key) >= 3 and key not in self.vocabulary
        }

    def series(self, words: Words, text: str) -> Iterable[Named]:
        """A series asked for by its shared name and a plural ("batman films", "every star trek
        movie"): every title that starts with the name, the name's own title left out for "sequels"."""
        table = self.series_table
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
                if key not in self.titles or (
                    key in self.cased_aliases and not _capitalised(words[i : i + n], text)
                ):
                    continue
                every_title, original = table[key]
                ids = tuple(x for x in every_title if x not in original) if noun == "sequels" else every_title
                if ids:
                    start, end = words[i][0], words[i + n][1]
                    yield Named(start, end, ids, every=True)
                break
