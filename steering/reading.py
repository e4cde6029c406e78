"""From mentions and their roles to a :class:`PreferenceUpdate`: one function for the simulator's
labels and the learned parser's answers, so both mean the same thing by a role.

A role says which way a mention is meant: wanted (``positive``), unwanted (``negative``), an
earlier constraint withdrawn (``lift``), a taste anchor (``soft_positive`` "more like X",
``soft_negative`` "less like X"), or not a request at all (``none``).

An exclusion phrased as an inclusion is labelled by what it leaves: a one-sided unwanted year
range ("nothing older than 1990", "no old movies") becomes the wanted range on the other side
(from 1990; from 1970), which a filter checks the same way and a reader understands better.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import IntEnum

from steering.catalog_index import CatalogIndex
from steering.mentions import Mention
from steering.preferences import PreferenceUpdate, Side, SoftPreference, YearRange

SOFT_TEXT_MAX_CHARS = 100


class Role(IntEnum):
    NONE = 0
    POSITIVE = 1
    NEGATIVE = 2
    LIFT = 3
    SOFT_POSITIVE = 4
    SOFT_NEGATIVE = 5


N_ROLES = len(Role)
HARD_ROLES = (Role.POSITIVE, Role.NEGATIVE, Role.LIFT)
# Which roles a mention kind can take: only a title can be a taste anchor.
ALLOWED_ROLES: dict[str, tuple[Role, ...]] = {
    "genre": (Role.NONE, *HARD_ROLES),
    "year": (Role.NONE, *HARD_ROLES),
    "mood": (Role.NONE, *HARD_ROLES),
    "item": tuple(Role),
}


@dataclass(frozen=True)
class Reading:
    """Roles of a command's mentions and its sentence-level flags."""

    mentions: Sequence[Mention]
    roles: Sequence[Role]
    reset: bool = False
    soft_positive: str | None = None
    """A wish with no catalog field and no known mood word, on the wanted side (its text)."""
    soft_negative: str | None = None


def assemble(reading: Reading, index: CatalogIndex, prefer: Collection[int] = ()) -> PreferenceUpdate:
    update = PreferenceUpdate(reset=reading.reset)
    sides = {Role.POSITIVE: update.positive, Role.NEGATIVE: update.negative, Role.LIFT: update.lift}
    for mention, role in zip(reading.mentions, reading.roles, strict=True):
        if role is Role.NONE:
            continue
        if mention.kind == "genre":
            side = sides[role]
            side.genres.extend(g for g in mention.genres if g not in side.genres)
        elif mention.kind == "year" and mention.years is not None:
            _add_years(update, role, mention.years)
        elif mention.kind == "mood":
            _add_soft(sides[role], SoftPreference(text=mention.mood))
        elif mention.kind == "item" and mention.items:
            meant = (
                mention.items
                if mention.every
                else (next((i for i in mention.items if i in prefer), mention.items[0]),)
            )
            for item in meant:
                if role in HARD_ROLES:
                    side = sides[role]
                    if item not in side.items:
                        side.items.append(item)
                else:
                    side = update.positive if role is Role.SOFT_POSITIVE else update.negative
                    _add_soft(
                        side, SoftPreference(text=index.catalog.item(item).title or str(item), item=item)
                    )
    for text, side in ((reading.soft_positive, update.positive), (reading.soft_negative, update.negative)):
        if text and not any(p.item is None for p in side.soft):
            _add_soft(side, SoftPreference(text=text[:SOFT_TEXT_MAX_CHARS]))
    return update


def _add_years(update: PreferenceUpdate, role: Role, years: YearRange) -> None:
    if role is Role.NEGATIVE and (years.start is None) != (years.end is None):
        role, years = Role.POSITIVE, complement(years)
    side = {Role.POSITIVE: update.positive, Role.NEGATIVE: update.negative, Role.LIFT: update.lift}[role]
    if side.year_range is None:
        side.year_range = years
        return
    old = side.year_range
    # Two open ends that meet ("after 1975 and before 1985", "not before 1975 and not after 1985"):
    # both bounds hold, so the range is where they overlap.
    lower, upper = (old, years) if old.end is None else (years, old)
    if _meet(lower, upper):
        side.year_range = YearRange(start=lower.start, end=upper.end)
        return
    # Two ranges on one side ("the 80s, or the 90s"): their hull.
    start = None if old.start is None or years.start is None else min(old.start, years.start)
    end = None if old.end is None or years.end is None else max(old.end, years.end)
    side.year_range = YearRange(start=start, end=end) if start is not None or end is not None else old


def _meet(lower: YearRange, upper: YearRange) -> bool:
    """``lower`` is open above, ``upper`` open below, and they overlap."""
    return (
        lower.end is None
        and upper.start is None
        and lower.start is not None
        and upper.end is not None
        and lower.start <= upper.end
    )


def complement(years: YearRange) -> YearRange:
    """What a one-sided range leaves: "nothing older than 1990" wants 1990 on."""
    return YearRange(start=years.end + 1) if years.end is not None else YearRange(end=years.start - 1)


def _add_soft(side: Side, soft: SoftPreference) -> None:
    if not any(p.text.casefold() == soft.text.casefold() and p.item == soft.item for p in side.soft):
        side.soft.append(soft)
