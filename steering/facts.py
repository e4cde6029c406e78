"""A preference update as facts: (side, value) pairs per field, the terms in which two readings of a
command are compared (the labelling contract of tests/data/steering_natural/README.md).

The learned parser compares its reading of a span with the rule parser's in these terms when it
serves a command; the lab scores parsers against labelled sets with them (``lab.steering.scoring``).
"""

from __future__ import annotations

from steering.preferences import PreferenceUpdate, Side

SIDES = ("positive", "negative", "lift")
FIELDS = ("genres", "years", "items", "soft", "reset")


def hard_facts(update: PreferenceUpdate) -> set[tuple]:
    """(field, side, value) of the update's hard constraints: genres, year ranges, items."""
    found = facts(update)
    return {(name, *fact) for name in ("genres", "years", "items") for fact in found[name]}


def facts(update: PreferenceUpdate) -> dict[str, set[tuple]]:
    """(side, value) pairs per field."""
    found: dict[str, set[tuple]] = {name: set() for name in FIELDS}
    for name in SIDES:
        side: Side = getattr(update, name)
        found["genres"] |= {(name, g.casefold()) for g in side.genres}
        if side.year_range is not None:
            found["years"].add((name, side.year_range.start, side.year_range.end))
        found["items"] |= {(name, i) for i in side.items}
        found["soft"] |= {(name, p.item) for p in side.soft}
    if update.reset:
        found["reset"].add(("reset",))
    return found
