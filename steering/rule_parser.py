"""The rule parser: a natural-language command -> a :class:`PreferenceUpdate`, by rules over the lexicon.

:class:`OfflineParser` (``"parser": "offline"`` in every answer) is deterministic and handles the common
forms; it is the LLM parser's fallback and the learned parser's second reader. What it does not
understand it reports in ``ParseResult.unparsed`` instead of guessing. Its words and patterns are
:mod:`steering.lexicon`'s (the ``RULE_*`` reach and grammar).

Forms the offline parser understands (in clauses split where :data:`steering.lexicon.CLAUSE_BREAK`
says: ``, ; . ! ? :``, "but", "though", "however", "plus", "also", a spaced dash):

- genres: "no horror", "more comedies", "not animated", "only drama or romance";
- years: "from the 90s", "1980s", "before 1980", "after 1995", "between 1980 and 1990",
  "not from the 80s", "classic" (the old era, up to 1969);
- items: "more like Toy Story", "less like Heat", "not Star Wars" (titles resolved against the
  catalog), "something lighter" (a small vocabulary of moods, kept as soft text);
- lifting: "horror is fine again", "bring back Star Wars";
- "reset" / "start over" / "forget my preferences";
- genres in any phrasing the look-up reads, when the other words carry no wish of their own or ask
  for it: "surprise me with a 70s thriller", "no scary flicks tonight" (``RULE_NEUTRAL_WORDS``,
  ``RULE_WISH_WORDS``; the look-up's own tables, :meth:`MentionFinder.word_mentions`).

It never reads a hard constraint on a side it cannot be sure of (issue 43): a clause with a turning
word past its prefix ("not a fan of X", "enough of X", "nothing too X"), an exception ("anything but
X"), or a word it does not know is withheld whole into ``unparsed`` with the reason; a negation with
no object of its own ("X? no") withholds the command; a value said twice one way unread is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum

from steering.catalog_index import Catalog, CatalogIndex
from steering.lexicon import (
    DECADE_NAMES,
    DISCOURSE_START,
    FILLER_END,
    FILLER_START,
    GENRE_WORDS,
    IGNORABLE,
    LIFT_PREFIX,
    LIFT_SUFFIX,
    LIKE,
    MOOD_WORDS,
    NEGATIVE_PREFIXES,
    OLD_END,
    POSITIVE_PREFIXES,
    RULE_AFTER,
    RULE_BEFORE,
    RULE_BETWEEN,
    RULE_DECADE,
    RULE_EXCEPTION_LEADS,
    RULE_GENRE_WORDS,
    RULE_IN_YEAR,
    RULE_MOOD_WORDS,
    RULE_NEUTRAL_WORDS,
    RULE_OLD_WORDS,
    RULE_RESET,
    RULE_TURNING_WORDS,
    RULE_WISH_WORDS,
    RULE_YEAR_FILLER,
    TERM_SPLIT,
    fold,
    normalize_text,
    split_clauses_with_breaks,
    word_key,
)
from steering.mentions import Mention, MentionFinder
from steering.parsing import CommandParser, ParseResult
from steering.preferences import Preferences, PreferenceUpdate, Side, SoftPreference, YearRange


class Polarity(Enum):
    POSITIVE = "positive"
    NEGATIVE = "negative"
    LIFT = "lift"


@dataclass(frozen=True)
class _Turn:
    """Per-command context (kept off the parser so one parser serves concurrent requests)."""

    prefer: frozenset[int]  # items on screen: they win among duplicate titles
    shielded: tuple[str, ...] = field(default=())  # titles replaced by ⟨n⟩ before splitting

    def unshield(self, text: str) -> str:
        return _SHIELD.sub(lambda m: self.shielded[int(m[1])], text)


class OfflineParser(CommandParser):
    """Deterministic rule-based parser over one catalog."""

    name = "offline"

    def __init__(self, catalog: Catalog | CatalogIndex):
        self.index = catalog if isinstance(catalog, CatalogIndex) else CatalogIndex(catalog)
        self._fragile_titles = self.index.fragile_titles
        # the look-up's word tables over this catalog (no titles, no encoder vocabulary: nothing to load)
        self.finder = MentionFinder(self.index)

    async def parse(
        self, text: str, *, memory: Preferences, recommendations: Sequence[int] = ()
    ) -> ParseResult:
        """Pure string work (no I/O): async only to share the parsers' one interface."""
        return self.read(text, recommendations)

    def read(self, text: str, recommendations: Sequence[int] = ()) -> ParseResult:
        """The same reading, synchronously (the learned parser checks its hard constraints against it).

        Never on the wrong side. A clause is read whole or not at all: one the prefix grammar cannot
        place (a turning word past its prefix, an exception after "anything but", a word it does not
        know) is withheld into ``unparsed`` with the reason. A negation standing alone ("horror? no",
        "westerns - not tonight") withholds the whole command, since what it turns around may be in
        another clause, and a value read on two sides is dropped from both."""
        command = normalize_text(text)
        if not command:
            return ParseResult(unparsed=["empty command"])
        if RULE_RESET.match(command):
            return ParseResult(update=PreferenceUpdate(reset=True))
        update = PreferenceUpdate()
        unparsed: list[str] = []
        dangling: list[str] = []
        withheld: list[Mention] = []  # what the clauses not read mention, on a side not known
        command, shielded = _shield_titles(command, self._fragile_titles)
        turn = _Turn(frozenset(recommendations), tuple(shielded))
        previous = ""
        for before, clause in split_clauses_with_breaks(command):
            clause = _strip_discourse(clause)
            opening, previous = previous, clause or previous
            if not clause or clause in IGNORABLE:
                continue
            if before == "but" and self._opens_exception(opening):
                why = [f"'{clause}' (after '{opening} but'): an exception, which the rules do not read"]
                alone = False
            else:
                read = PreferenceUpdate()
                why, alone = self._parse_clause(clause, read, turn)
            unparsed += [turn.unshield(reason) for reason in why]
            if alone:
                dangling.append(turn.unshield(clause))
            elif why:
                withheld += self.finder.word_mentions(turn.unshield(clause))
            else:
                _merge(update, read)
        if dangling:
            reason = f"'{dangling[0]}' may turn around another part of the command: nothing applied"
            return ParseResult(unparsed=[*unparsed, reason])
        unparsed += _drop_contradictions(update, withheld)
        return ParseResult(update=update, unparsed=unparsed)

    def _parse_clause(self, clause: str, update: PreferenceUpdate, turn: _Turn) -> tuple[list[str], bool]:
        """What the clause adds to ``update`` (its own, merged only when the clause is understood
        whole); returns what was not understood, and whether the clause is a negation whose object is
        not in it."""
        polarity, body = _polarity(clause)
        side = {Polarity.POSITIVE: update.positive, Polarity.NEGATIVE: update.negative}.get(
            polarity, update.lift
        )
        # Titles first, as said: fillers such as "movie" or "again" may belong to one ("A Goofy Movie").
        if self._add_item_reference(body, polarity, side, turn):
            return [], False
        # before the fillers go: "westerns again" may lift them, "no horror anymore" is still no horror
        said = _words(turn.unshield(_extract_year_range(body)[0]))  # "after 1995" turns nothing
        tail = ("too",) if polarity is not Polarity.NEGATIVE else ("too", "anymore", "again", "instead")
        while said and said[-1] in tail:
            said.pop()
        turning = [word for word in said if word in RULE_TURNING_WORDS]
        body = _strip_fillers(body)
        if not body:
            return [f"'{clause}': nothing to act on"], polarity is not Polarity.POSITIVE
        if not turning and self._add_item_reference(body, polarity, side, turn):
            return [], False
        rest, year_range = _extract_year_range(body)
        if turning:
            reason = f"'{clause}': '{turning[0]}' may turn the wish around, which the rules do not read"
            return [reason], not self._has_object(rest)
        if year_range is not None:
            side.year_range = year_range
        unparsed = []
        for term in filter(None, (_strip_fillers(t) for t in TERM_SPLIT.split(rest))):
            if not self._add_term(term, polarity, side, turn):
                unparsed.append(self._why_not(turn.unshield(term), clause))
        # "westerns - not tonight": a negation of nothing in its clause may be about another one
        alone = bool(unparsed) and polarity is not Polarity.POSITIVE and not self._has_object(rest)
        return unparsed, alone

    def _add_item_reference(self, body: str, polarity: Polarity, side: Side, turn: _Turn) -> bool:
        """'like X' is soft; a bare title is hard (exclusion, or lifting one) — never a guess."""
        like = LIKE.match(body)
        if like:
            title = turn.unshield(like["title"])
            item = self.index.resolve_title(title, turn.prefer)
            if item is None:
                item = self.index.resolve_title(_strip_fillers(title), turn.prefer)
            if item is not None:
                side.soft.append(SoftPreference(text=self.index.catalog.item(item).title, item=item))
                return True
            # else maybe a title that starts with "like" ("Like Water for Chocolate")
        if polarity is Polarity.POSITIVE or self._genres(body, names=False):
            return False  # "more Toy Story" is not a constraint; genre words win over titles
        ids = self.index.ids_for_title(turn.unshield(body))
        side.items.extend(i for i in ids if i not in side.items)
        return bool(ids)

    def _add_term(self, term: str, polarity: Polarity, side: Side, turn: _Turn) -> bool:
        genres = self._genres(term)
        if genres:
            side.genres.extend(genres)
            return True
        if term in RULE_MOOD_WORDS:
            side.soft.append(SoftPreference(text=MOOD_WORDS[word_key(term)]))
            return True
        if term in RULE_OLD_WORDS:  # "classic": the labelling contract's old era
            side.year_range = YearRange(end=OLD_END)
            return True
        return self._add_looked_up_genres(term, polarity, side) or (
            polarity is not Polarity.POSITIVE and self._add_item_reference(term, polarity, side, turn)
        )

    def _add_looked_up_genres(self, term: str, polarity: Polarity, side: Side) -> bool:
        """Genres named in any phrasing the look-up reads ("surprise me with a thriller", "no scary
        flicks tonight"), when every other word of the term is one that carries no wish of its own
        (and, for a wanted genre, one that asks for it): words outside those lists may judge it
        ("zero horror", "I'm good on animation", "my wife hates horror")."""
        if not re.fullmatch(r"[0-9a-z' -]+", term):
            return False  # "❌ documentaries": a symbol may say which way
        mentions = self.finder.word_mentions(term)
        genres = [m for m in mentions if m.kind == "genre"]
        if not genres or len(genres) != len(mentions):
            return False
        allowed = RULE_NEUTRAL_WORDS | (RULE_WISH_WORDS if polarity is Polarity.POSITIVE else frozenset())
        others = "".join(
            " " if any(m.start <= i < m.end for m in genres) else ch for i, ch in enumerate(term)
        )
        if any(word not in allowed for word in _words(others)):
            return False
        side.genres.extend(g for m in genres for g in m.genres if g not in side.genres)
        return True

    def _opens_exception(self, clause: str) -> bool:
        """Whether "but" after this clause says "except": "anything but", "I'll take any era but"
        (a quantifier, and nothing named the exception could be a contrast to)."""
        words = _words(clause)
        if words and words[-1] in RULE_EXCEPTION_LEADS:
            return True
        return any(word in RULE_EXCEPTION_LEADS for word in words) and not self._has_object(clause)

    def _has_object(self, text: str) -> bool:
        """Whether the text names something a wish can be about (a genre, a year, a mood, a title)."""
        words = " ".join(w for w in _words(text) if w not in RULE_TURNING_WORDS)
        return bool(self.finder.word_mentions(words)) or bool(self.index.ids_for_title(words))

    def _genres(self, term: str, *, names: bool = True) -> list[str]:
        """The catalog genres a genre word of the rules' reach stands for ("romcom": Comedy and
        Romance), all of them or none; else, with ``names``, the catalog genre the term names."""
        if term in RULE_GENRE_WORDS:
            wanted: tuple[str, ...] = GENRE_WORDS[word_key(term)]
        elif names:
            wanted = (term,)
        else:
            return []
        found = [self.index.canonical_genre(name) for name in wanted]
        return [genre for genre in found if genre is not None] if all(found) else []

    def _why_not(self, term: str, clause: str) -> str:
        if term in RULE_GENRE_WORDS and not self.index.genres:
            return f"'{term}' (in '{clause}'): this catalog has no genres"
        if self.index.ids_for_title(term):
            return f"'{term}' (in '{clause}'): say 'more like {term}' or 'not {term}'"
        return f"'{term}' (in '{clause}'): not a known genre, year, mood or catalog title"


_SHIELD = re.compile(r"\u27e8(\d+)\u27e9")  # ⟨n⟩ stands for the n-th shielded title of a command


def _shield_titles(command: str, fragile: Sequence[str]) -> tuple[str, list[str]]:
    """Replace whole-word mentions of fragile titles by ⟨n⟩ so splitting leaves them intact."""
    shielded: list[str] = []
    for title in fragile:
        if title not in command:
            continue
        pattern = re.compile(r"(?<![0-9a-z])" + re.escape(title) + r"(?![0-9a-z])")
        if pattern.search(command):
            command = pattern.sub(f"\u27e8{len(shielded)}\u27e9", command)
            shielded.append(title)
    return command, shielded


def _polarity(clause: str) -> tuple[Polarity, str]:
    for pattern in (LIFT_SUFFIX, LIFT_PREFIX):
        found = pattern.match(clause)
        if found:
            return Polarity.LIFT, found["body"]
    for prefixes, polarity in (
        (NEGATIVE_PREFIXES, Polarity.NEGATIVE),
        (POSITIVE_PREFIXES, Polarity.POSITIVE),
    ):
        for prefix in prefixes:
            if clause == prefix:
                return polarity, ""
            if clause.startswith(prefix + " "):
                return polarity, clause[len(prefix) + 1 :]
    return Polarity.POSITIVE, clause


def _merge(update: PreferenceUpdate, read: PreferenceUpdate) -> None:
    """Add one clause's reading to the command's (a later year range replaces an earlier one)."""
    for mine, theirs in ((update.positive, read.positive), (update.negative, read.negative),
                         (update.lift, read.lift)):  # fmt: skip
        mine.genres.extend(g for g in theirs.genres if g not in mine.genres)
        mine.items.extend(i for i in theirs.items if i not in mine.items)
        mine.soft.extend(theirs.soft)
        if theirs.year_range is not None:
            mine.year_range = theirs.year_range


def _drop_contradictions(update: PreferenceUpdate, withheld: Sequence[Mention]) -> list[str]:
    """A genre, title or year range read on two sides, or also named in a clause not read ("war movies
    ... no war and nothing depressing"), is dropped from every side: which side the user meant is not
    the rules' to guess."""
    sides = (update.positive, update.negative, update.lift)
    dropped: list[str] = []
    unread: dict[str, set] = {"genres": {g for m in withheld for g in m.genres}, "items": set()}
    for name in ("genres", "items"):
        seen = [set(getattr(side, name)) for side in sides]
        twice = {v for i, a in enumerate(seen) for b in seen[i + 1 :] for v in a & b}
        twice |= unread[name] & set().union(*seen)
        for side in sides:
            setattr(side, name, [v for v in getattr(side, name) if v not in twice])
        dropped += [
            f"{name[:-1]} {v!r}: said twice, one way not read; dropped" for v in sorted(twice, key=str)
        ]
    ranges = [side.year_range for side in sides if side.year_range is not None]
    if ranges and (len(ranges) > 1 or any(m.kind == "year" for m in withheld)):
        for side in sides:
            side.year_range = None
        dropped.append("a year range said twice, one way not read; dropped")
    return dropped


def _words(text: str) -> list[str]:
    """The words of a clause as the turning-word table spells them ("don't" is one word)."""
    return re.findall(r"[0-9a-z]+(?:'[a-z]+)?", fold(text))


def _strip_discourse(clause: str) -> str:
    previous = None
    while previous != clause:
        previous, clause = clause, DISCOURSE_START.sub("", clause)
    return clause


def _strip_fillers(text: str) -> str:
    previous = None
    while previous != text:
        previous = text
        text = FILLER_END.sub("", FILLER_START.sub("", text.strip())).strip()
    return text


def _extract_year_range(body: str) -> tuple[str, YearRange | None]:
    """Pull one year expression out of ``body``; returns the rest and the range."""
    if found := RULE_BETWEEN.search(body):
        years = [int(y) for y in found.groups() if y]
        low, high = sorted(years)
        return _rest(body, found), YearRange(start=low, end=high)
    if found := RULE_BEFORE.search(body):
        year = int(found[2])
        end = year - 1 if found[1] in {"before", "older than", "earlier than", "prior to"} else year
        return _rest(body, found), YearRange(end=end)
    if found := RULE_AFTER.search(body):
        year = int(found[2])
        if found[1] == "from" and not found[3]:  # "from 1995" means released in 1995
            return _rest(body, found), YearRange(start=year, end=year)
        start = year + 1 if found[1] in {"after", "newer than", "later than"} else year
        return _rest(body, found), YearRange(start=start)
    if found := RULE_DECADE.search(body):
        return _rest(body, found), _decade_range(found)
    if found := RULE_IN_YEAR.search(body):
        year = int(found[1])
        return _rest(body, found), YearRange(start=year, end=year)
    return body, None


def _decade_range(found: re.Match[str]) -> YearRange:
    four_digit, two_digit, word = found.groups()
    if four_digit:
        start = int(four_digit)
    elif word:
        start = DECADE_NAMES[word]
    else:
        short = int(two_digit)  # '90s -> 1990; '00s and '10s -> this century
        start = 1900 + short if short >= 20 else 2000 + short
    return YearRange(start=start, end=start + 9)


def _rest(body: str, found: re.Match[str]) -> str:
    rest = body[: found.start()] + " " + body[found.end() :]
    rest = RULE_YEAR_FILLER.sub(" ", rest)
    return re.sub(r"\s+", " ", rest).strip()
