"""The command simulator: structured preference updates and many natural phrasings of each.

It works from the catalog's metadata only (genres and years where the catalog has them, its
titles, and a vocabulary of moods and music styles): it draws what a user wants (one to three
clauses: a genre, an era, a title to exclude or to compare to, a mood, a reset), then writes it
the way people talk -- hedges, idioms, indirect wishes, exclusions phrased as inclusions
("nothing older than 1990"), negation scope over several clauses, decades and eras in words,
casing noise and misspellings -- and knows exactly which span means what. Off-topic chat,
gibberish and wishes no field can hold are drawn too, labelled "nothing to apply".

Templates are split into a training share and a held-out share (every fourth), so validation
measures phrasings the student never saw, not memorised ones. The templates are
:mod:`lab.steering.phrasings`; the genre, mood, style and era words are the lexicon's
(:mod:`steering.lexicon`), so the simulator writes each word with the meaning every parser reads.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from lab.steering import phrasings
from steering.catalog_index import CatalogIndex
from steering.lexicon import (
    DECADE_NAMES,
    GENRE_WORDS,
    MOOD_WORDS,
    OLD_END,
    OLD_WORDS,
    RECENT_SPAN,
    RECENT_WORDS,
    STYLE_WORDS,
    fold,
)
from steering.mentions import Mention, overlaps
from steering.preferences import PreferenceUpdate, YearRange
from steering.reading import Reading, Role, assemble

Split = Literal["train", "val"]


@dataclass(frozen=True)
class Planted:
    """A span the simulator wrote and what it means."""

    mention: Mention
    role: Role


@dataclass(frozen=True)
class SimulatedCommand:
    text: str
    planted: tuple[Planted, ...]
    reset: bool = False
    soft_positive: bool = False
    soft_negative: bool = False
    expected: PreferenceUpdate | None = None
    """None: nothing in the text can be applied (a correct parser abstains)."""
    soft_spans: tuple[tuple[int, int, Role], ...] = ()
    """Free-text wish clauses (start, end, the side's role): a mood word the look-up finds in one
    ("no gore", "summery stuff") is meant on that clause's side."""


@dataclass
class _Clause:
    text: str
    planted: list[tuple[int, int, Mention, Role]] = field(default_factory=list)
    reset: bool = False
    soft_positive: bool = False
    soft_negative: bool = False


class CommandSimulator:
    """Draws commands over one catalog; ``split`` picks the template share."""

    def __init__(self, index: CatalogIndex, *, split: Split, seed: int):
        self.index = index
        self.rng = random.Random(seed)
        self.split = split
        self.genres = [g for g in index.genres if g.casefold() != "unknown"]
        years = [item.year for item in index.catalog.items if item.year]
        self.years = (min(years), max(years)) if years else None
        self.titled = [item for item in index.catalog.items if item.title and len(item.title) > 1]
        self._genre_surfaces = {g: [w for w, gs in GENRE_WORDS.items() if gs == (g,)] for g in self.genres}
        self._pair_surfaces = [
            (w, gs) for w, gs in GENRE_WORDS.items() if len(gs) == 2 and all(g in self.genres for g in gs)
        ]
        moods = sorted(
            {w for w in MOOD_WORDS if " " not in w} | ({"rock", "jazz", "pop"} if not self.genres else set())
        )
        # qualifiers and themes that would be read as a genre or mood of their own are left out
        looked_up = {fold(w) for w in (*GENRE_WORDS, *MOOD_WORDS)}
        self._qualifiers_before = [
            q for q in phrasings.GENRE_QUALIFIERS_BEFORE if not set(q.split()) & looked_up
        ]
        self._themes = [x for x in phrasings.GENRE_THEMES if not set(x.split()) & looked_up]
        no_fields = list(STYLE_WORDS) if not self.genres else []
        self.moods = (
            moods + no_fields + (["80s", "90s", "70s", "60s", "the eighties"] if not self.years else [])
        )

    def _pick(self, templates: Sequence[str]) -> str:
        held_out = self.split == "val"
        share = [t for i, t in enumerate(templates) if (i % 4 == 3) == held_out]
        return self.rng.choice(share or list(templates))

    def draw(self) -> SimulatedCommand:
        rng = self.rng
        if rng.random() < 0.09:
            return self._nothing()
        n = rng.choices((1, 2, 3), weights=(0.45, 0.4, 0.15))[0]
        clauses = []
        if rng.random() < 0.07:
            clauses.append(_Clause(self._pick(phrasings.RESET), reset=True))
            n = rng.choice((0, 1, 1))
        used: set[object] = set()
        for _ in range(n):
            clause = self._clause(used)
            if clause is not None:
                clauses.append(clause)
        if not clauses:
            return self._nothing()
        return self._join(clauses)

    # --- clauses -------------------------------------------------------------------------------

    def _clause(self, used: set[object]) -> _Clause | None:
        rng = self.rng
        kinds = ["item", "mood", "free", "topic"]
        weights = [0.3, 0.15, 0.08, 0.1]
        if self.genres:
            kinds.append("genre")
            weights.append(0.45)
        if self.years:
            kinds.append("year")
            weights.append(0.28)
        kind = rng.choices(kinds, weights=weights)[0]
        if kind == "genre":
            if self.years and rng.random() < 0.15:
                return self._genre_year_clause(used)
            if rng.random() < 0.06:
                return self._genre_anchor_clause(used)
            if rng.random() < 0.08:
                return self._qualified_genre_clause(used)
            return self._genre_clause(used)
        if kind == "year":
            return self._year_clause()
        if kind == "item":
            if not self.genres and rng.random() < 0.15:
                return self._artist_list_clause(used)
            return self._item_clause(used)
        if kind == "mood":
            return self._mood_clause(used)
        if kind == "topic":
            return self._topic_clause(used)
        return self._free_clause()

    def _role(self, weights: tuple[float, float, float] = (0.42, 0.43, 0.15)) -> Role:
        return self.rng.choices((Role.POSITIVE, Role.NEGATIVE, Role.LIFT), weights=weights)[0]

    def _templates(self, role: Role) -> Sequence[str]:
        return {
            Role.POSITIVE: phrasings.POSITIVE,
            Role.NEGATIVE: phrasings.NEGATIVE,
            Role.LIFT: phrasings.LIFT,
        }[role]

    def _unused_genre(self, used: set[object]) -> tuple[str, str] | None:
        """A genre no other clause of the command names, marked used, and a word for it."""
        genre = self.rng.choice(self.genres)
        if genre in used or not self._genre_surfaces[genre]:
            return None
        used.add(genre)
        return genre, self.rng.choice(self._genre_surfaces[genre])

    def _genre_clause(self, used: set[object]) -> _Clause | None:
        rng = self.rng
        role = self._role()
        objects: list[tuple[str, tuple[str, ...]]] = []
        if self._pair_surfaces and rng.random() < 0.08:
            objects.append(rng.choice(self._pair_surfaces))
        else:
            for _ in range(rng.choices((1, 2), weights=(0.8, 0.2))[0]):
                drawn = self._unused_genre(used)
                if drawn is not None:
                    objects.append((drawn[1], (drawn[0],)))
        if not objects:
            return None
        noun = rng.choice(phrasings.GENRE_NOUNS)
        parts = [(self._noise(word), genres) for word, genres in objects]
        # "crime dramas", "action comedies": two genre words side by side want both
        joiner = rng.choice((" and ", " or ", ", ", " & ", " ", " + ", " or ")) if len(parts) > 1 else ""
        template = self._pick(self._templates(role))
        pieces: list[tuple[str, tuple[str, ...] | None]] = []
        for i, (word, genres) in enumerate(parts):
            if i:
                pieces.append((joiner, None))
            pieces.append((word, genres))
        pieces.append((noun, None))
        return self._fill(template, pieces, _genre_mention, role)

    def _year_clause(self) -> _Clause:
        rng = self.rng
        role = self._role((0.5, 0.35, 0.15))
        surface, years, form = self._year_surface()
        before, after = "", ""
        if form in ("recent", "old"):
            after = rng.choice((" movies", " films", " stuff", " ones", ""))
        elif form in ("before", "after", "since", "between"):
            before = rng.choice(
                ("", "movies ", "films ", "something ", "anything ", "stuff ", "movies made ")
            )
        elif rng.random() < 0.45:  # "90s movies", "80s stuff": the bare decade as an adjective
            after = rng.choice((" movies", " films", " stuff", " flicks", ""))
        else:
            before = rng.choice(("from ", "movies from ", "films from ", "stuff from ", "something from "))
        template = self._pick(self._templates(role))
        pieces = [(before, None), (surface, years), (after, None)]
        return self._fill(template, pieces, lambda y, s, e, t: Mention("year", s, e, t, years=y), role)

    def _artist_list_clause(self, used: set[object]) -> _Clause | None:
        """Two or three artists named together ("Amy Winehouse and Adele", "oasis or blur, either"):
        on a music catalog, each is wanted itself."""
        rng = self.rng
        items = rng.sample(self.titled, rng.choice((2, 2, 3)))
        if any(item.id in used for item in items):
            return None
        used |= {item.id for item in items}
        lower = rng.random() < 0.4
        pieces: list[tuple[str, tuple[int, ...] | None]] = [
            (rng.choice(("", "", "more ", "some ", "play ")), None)
        ]
        for i, item in enumerate(items):
            if i:
                last = i == len(items) - 1
                pieces.append(
                    (rng.choice((" and ", " or ", " & ")) if last else rng.choice((", ", " ")), None)
                )
            pieces.append((item.title.lower() if lower else item.title, (item.id,)))
        pieces.append((rng.choice(("", "", ", either", " please", " all day", " tonight")), None))
        return self._fill(
            "{x}", pieces, lambda ids, s, e, t: Mention("item", s, e, t, items=ids), Role.POSITIVE
        )

    def _genre_anchor_clause(self, used: set[object]) -> _Clause | None:
        """A wanted genre anchored on a title ("westerns like Unforgiven", "comedies like Clueless",
        "a Fargo-type crime movie"): the genre is hard, the title a taste anchor."""
        rng = self.rng
        genre, item = rng.choice(self.genres), rng.choice(self.titled)
        if genre in used or item.id in used or not self._genre_surfaces[genre]:
            return None
        used |= {genre, item.id}
        word = self._noise(rng.choice(self._genre_surfaces[genre]))
        title = item.title.lower() if rng.random() < 0.3 else item.title
        g, t = (word, ("genre", (genre,))), (title, ("item", (item.id,)))
        noun = rng.choice(("", "", " movies", " films"))
        shape = rng.randrange(5)
        if shape == 0:
            pieces = [g, (noun + " like ", None), t]
        elif shape == 1:
            pieces = [("more ", None), g, (noun + " like ", None), t]
        elif shape == 2:
            pieces = [("a ", None), t, ("-type ", None), g]
        elif shape == 3:
            pieces = [("something like ", None), t, (" but ", None), g]
        else:
            pieces = [g, (" in the style of ", None), t]
        text, planted = "", []
        for piece, value in pieces:
            if value is not None:
                kind, v = value
                end = len(text) + len(piece)
                if kind == "genre":
                    mention, role = Mention("genre", len(text), end, piece, genres=v), Role.POSITIVE
                else:
                    mention, role = Mention("item", len(text), end, piece, items=v), Role.SOFT_POSITIVE
                planted.append((len(text), end, mention, role))
            text += piece
        return _Clause(text, planted)

    def _qualified_genre_clause(self, used: set[object]) -> _Clause | None:
        """A wanted genre narrowed by what no field holds ("british comedies", "black and white
        westerns", "documentaries about nature"): the genre hard, the whole phrase a soft wish."""
        rng = self.rng
        drawn = self._unused_genre(used)
        if drawn is None:
            return None
        genre, word = drawn[0], self._noise(drawn[1])
        noun = rng.choice(phrasings.GENRE_NOUNS)
        lead = rng.choice(("", "", "some ", "i want ", "any ", "more "))
        if rng.random() < 0.4:
            pieces = [(f"{lead}{self._pick(self._qualifiers_before)} ", None), (word, (genre,)), (noun, None)]
        else:
            after = self._pick(phrasings.GENRE_QUALIFIERS_AFTER).replace("{x}", self._pick(self._themes))
            pieces = [(lead, None), (word, (genre,)), (f"{noun} {after}", None)]
        clause = self._fill("{x}", pieces, _genre_mention, Role.POSITIVE)
        clause.soft_positive = True
        return clause

    def _genre_year_clause(self, used: set[object]) -> _Clause | None:
        """A genre and an era in one phrase ("90s comedies", "old westerns", "dramas from the 80s"):
        both wanted (a refusal of the pair, "no old westerns", is not a refusal of either alone)."""
        rng = self.rng
        drawn = self._unused_genre(used)
        if drawn is None:
            return None
        genre, word = drawn[0], self._noise(drawn[1])
        surface, years, form = self._year_surface()
        if form not in ("decade", "modified", "recent", "old", "pair"):
            return None
        noun = rng.choice(("", "", " movies", " films", " stuff"))
        role = rng.choices((Role.POSITIVE, Role.LIFT), weights=(0.93, 0.07))[0]
        template = self._pick(self._templates(role))
        genre_piece = (word, ("genre", (genre,)))
        year_piece = (surface, ("year", years))
        if form in ("recent", "old") or rng.random() < 0.5:
            pieces = [year_piece, (" ", None), genre_piece, (noun, None)]
        else:
            pieces = [genre_piece, (noun + " from ", None), year_piece]

        def make(value, s, e, t):
            kind, v = value
            if kind == "genre":
                return Mention("genre", s, e, t, genres=v)
            return Mention("year", s, e, t, years=v)

        return self._fill(template, pieces, make, role)

    def _year_surface(self) -> tuple[str, YearRange, str]:
        rng = self.rng
        low, high = self.years or (1930, 1998)
        decade = rng.choice([d for d in range(max(1920, low - low % 10), high + 1, 10)])
        short = str(decade)[2:]
        names = {start: name for name, start in DECADE_NAMES.items()}
        year = rng.randint(max(low, 1940), high - 1)
        form = rng.choices(
            ["decade", "modified", "pair", "before", "after", "since", "between", "recent", "old", "year"],
            weights=[0.3, 0.08, 0.06, 0.1, 0.1, 0.08, 0.06, 0.09, 0.09, 0.04],
        )[0]
        decade_words = [f"the {short}s", f"the '{short}s", f"{decade}s", f"the {decade}s", f"{short}s"]
        if decade in names:
            decade_words.append(f"the {names[decade]}")
        if form == "decade":
            return rng.choice(decade_words), YearRange(start=decade, end=decade + 9), form
        if form == "modified":
            mod = rng.choice(("early", "late"))
            word = rng.choice([f"{short}s", names.get(decade, f"{short}s")])
            years = (
                YearRange(start=decade, end=decade + 4)
                if mod == "early"
                else YearRange(start=decade + 5, end=decade + 9)
            )
            return f"the {mod} {word}", years, form
        if form == "pair" and decade + 10 <= high:
            nxt = str(decade + 10)[2:]
            return (
                f"the {short}s {rng.choice(('or', 'and'))} {nxt}s",
                YearRange(start=decade, end=decade + 19),
                form,
            )
        if form == "before":
            word = rng.choice(("before", "older than", "pre-", "earlier than"))
            return (f"{word}{year}" if word == "pre-" else f"{word} {year}"), YearRange(end=year - 1), form
        if form == "after":
            word = rng.choice(("after", "newer than", "later than"))
            return f"{word} {year}", YearRange(start=year + 1), form
        if form == "since":
            return (
                rng.choice((f"since {year}", f"from {year} on", f"{year} or later", f"{year} onwards")),
                YearRange(start=year),
                form,
            )
        if form == "between":
            a, b = sorted(rng.sample(range(max(low, 1940), high + 1), 2))
            return (
                rng.choice((f"between {a} and {b}", f"{a}-{b}", f"from {a} to {b}")),
                YearRange(start=a, end=b),
                form,
            )
        if form == "recent":
            return rng.choice(RECENT_WORDS), YearRange(start=high - RECENT_SPAN), form
        if form == "old":
            return rng.choice(OLD_WORDS), YearRange(end=OLD_END), form
        return str(year), YearRange(start=year, end=year), form

    def _item_clause(self, used: set[object]) -> _Clause | None:
        rng = self.rng
        item = rng.choice(self.titled)
        if item.id in used:
            return None
        used.add(item.id)
        roles = [Role.NEGATIVE, Role.LIFT, Role.SOFT_POSITIVE, Role.SOFT_NEGATIVE, Role.POSITIVE]
        music = not self.genres
        weights = [0.25, 0.08, 0.32, 0.08, 0.27 if music else 0.15]
        role = rng.choices(roles, weights=weights)[0]
        # The contract: on a music catalog "more X" / "play X" / a bare name want the artist itself; on
        # a film catalog asking for a title wants it, and "more X" / "X vibes" use it as a taste anchor.
        templates = {
            Role.NEGATIVE: phrasings.ITEM_NEGATIVE + (phrasings.ARTIST_NEGATIVE_EXTRA if music else ()),
            Role.LIFT: phrasings.LIFT,
            Role.SOFT_POSITIVE: phrasings.ITEM_SOFT_POSITIVE
            + (phrasings.ARTIST_SOFT_POSITIVE_EXTRA if music else phrasings.MOVIE_SOFT_POSITIVE),
            Role.SOFT_NEGATIVE: phrasings.ITEM_SOFT_NEGATIVE,
            Role.POSITIVE: (phrasings.ITEM_POSITIVE + phrasings.ARTIST_POSITIVE_EXTRA)
            if music
            else phrasings.MOVIE_POSITIVE,
        }[role]
        title = item.title
        if rng.random() < 0.25:
            title = title.lower()
        template = self._pick(templates)
        pieces = [(title, (item.id,)), ("", None)]
        return self._fill(template, pieces, lambda ids, s, e, t: Mention("item", s, e, t, items=ids), role)

    def _mood_clause(self, used: set[object]) -> _Clause | None:
        rng = self.rng
        word = rng.choice(self.moods)
        if word in used:
            return None
        used.add(word)
        role = rng.choices((Role.POSITIVE, Role.NEGATIVE), weights=(0.6, 0.4))[0]
        templates = phrasings.MOOD_POSITIVE if role is Role.POSITIVE else phrasings.MOOD_NEGATIVE
        mood = MOOD_WORDS.get(word, word)
        template = self._pick(templates)
        pieces = [(word, mood), ("", None)]
        return self._fill(template, pieces, lambda m, s, e, t: Mention("mood", s, e, t, mood=m), role)

    def _topic_clause(self, used: set[object]) -> _Clause | None:
        """A person, theme or quality the catalog has no field for, wanted or not ("anything w/ tom
        hanks", "no jump scares", "less autotune"): soft text on its side, nothing hard."""
        rng = self.rng
        topic = rng.choice(phrasings.MUSIC_TOPICS if not self.genres else phrasings.MOVIE_TOPICS)
        if topic in used:
            return None
        used.add(topic)
        positive = rng.random() < 0.55
        template = self._pick(phrasings.TOPIC_POSITIVE if positive else phrasings.TOPIC_NEGATIVE)
        text = template.replace("{x}", topic)
        return _Clause(text, soft_positive=positive, soft_negative=not positive)

    def _free_clause(self) -> _Clause:
        if self.rng.random() < 0.7:
            return _Clause(self.rng.choice(phrasings.FREE_SOFT_POSITIVE), soft_positive=True)
        return _Clause(self.rng.choice(phrasings.FREE_SOFT_NEGATIVE), soft_negative=True)

    def _fill(self, template: str, pieces, make, role: Role) -> _Clause:
        head, tail = template.split("{x}")
        text, planted = head, []
        for piece, value in pieces:
            if value is not None:
                planted.append(
                    (
                        len(text),
                        len(text) + len(piece),
                        make(value, len(text), len(text) + len(piece), piece),
                        role,
                    )
                )
            text += piece
        return _Clause(text + tail, planted)

    def _noise(self, word: str) -> str:
        """A misspelling now and then (a letter dropped, doubled or swapped)."""
        rng = self.rng
        if len(word) < 6 or " " in word or rng.random() > 0.06:
            return word
        i = rng.randrange(1, len(word) - 1)
        op = rng.choice(("drop", "double", "swap"))
        if op == "drop":
            return word[:i] + word[i + 1 :]
        if op == "double":
            return word[:i] + word[i] + word[i:]
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]

    # --- whole commands --------------------------------------------------------------------------

    def _nothing(self) -> SimulatedCommand:
        if self.rng.random() < 0.3:
            return self._question()
        return SimulatedCommand(self._case(self._pick(phrasings.NOTHING)), ())

    def _question(self) -> SimulatedCommand:
        """A question about a title names it without wanting it: the title's span has no role."""
        item = self.rng.choice(self.titled)
        title = item.title.lower() if self.rng.random() < 0.25 else item.title
        template = self._pick(phrasings.ITEM_QUESTIONS if self.genres else phrasings.ARTIST_QUESTIONS)
        pieces = [(title, (item.id,)), ("", None)]
        clause = self._fill(
            template, pieces, lambda ids, s, e, t: Mention("item", s, e, t, items=ids), Role.NONE
        )
        planted = tuple(Planted(m, role) for _s, _e, m, role in clause.planted)
        return SimulatedCommand(self._case(clause.text), planted)

    def _join(self, clauses: list[_Clause]) -> SimulatedCommand:
        rng = self.rng
        text = rng.choice(phrasings.PREFIXES) if rng.random() < 0.25 else ""
        planted: list[Planted] = []
        soft_spans: list[tuple[int, int, Role]] = []
        for i, clause in enumerate(clauses):
            if i:
                text += (
                    ": " if clauses[i - 1].reset and rng.random() < 0.4 else rng.choice(phrasings.CONNECTORS)
                )
            offset = len(text)
            text += clause.text
            if clause.soft_positive or clause.soft_negative:
                side = Role.POSITIVE if clause.soft_positive else Role.NEGATIVE
                soft_spans.append((offset, len(text), side))
            for start, end, mention, role in clause.planted:
                moved = Mention(
                    mention.kind, start + offset, end + offset, mention.text, mention.genres, mention.years,
                    mention.items, mention.mood,
                )  # fmt: skip
                planted.append(Planted(moved, role))
        if rng.random() < 0.2:
            text += rng.choice(phrasings.SUFFIXES)
        text = self._case(text)
        reset = any(c.reset for c in clauses)
        soft_pos, soft_neg = any(c.soft_positive for c in clauses), any(c.soft_negative for c in clauses)
        reading = Reading(
            [p.mention for p in planted], [p.role for p in planted], reset=reset,
            soft_positive=clauses_text(clauses, "positive"), soft_negative=clauses_text(clauses, "negative"),
        )  # fmt: skip
        expected = assemble(reading, self.index)
        return SimulatedCommand(text, tuple(planted), reset, soft_pos, soft_neg, expected, tuple(soft_spans))

    def _case(self, text: str) -> str:
        """Casing as people type: as is, a capital first letter, Title Case now and then, rarely CAPS."""
        r = self.rng.random()
        if r < 0.35:
            return text[:1].upper() + text[1:]
        if r < 0.42:
            return text.title()
        if r < 0.45:
            return text.upper()
        return text


def _genre_mention(genres: tuple[str, ...], start: int, end: int, text: str) -> Mention:
    return Mention("genre", start, end, text, genres=genres)


def clauses_text(clauses: Sequence[_Clause], side: str) -> str | None:
    wanted = [c.text for c in clauses if (c.soft_positive if side == "positive" else c.soft_negative)]
    return "; ".join(wanted) or None


def label_roles(found: Sequence[Mention], command: SimulatedCommand) -> list[Role]:
    """Each found mention gets the role of the planted span it overlaps (of the same kind); a mood
    word inside a free-text wish gets that wish's side; anything else none."""
    roles = []
    for mention in found:
        role = Role.NONE
        for p in command.planted:
            same_kind = p.mention.kind == mention.kind or {p.mention.kind, mention.kind} == {"year", "mood"}
            if same_kind and overlaps(mention, p.mention):
                role = p.role
                break
        else:
            if mention.kind == "mood":
                role = next(
                    (r for s, e, r in command.soft_spans if s <= mention.start and mention.end <= e), role
                )
        roles.append(role)
    return roles


def simulate(index: CatalogIndex, n: int, *, split: Split, seed: int) -> list[SimulatedCommand]:
    simulator = CommandSimulator(index, split=split, seed=seed)
    return [simulator.draw() for _ in range(n)]


__all__ = ["CommandSimulator", "Planted", "SimulatedCommand", "label_roles", "simulate"]
