"""Structured preferences P = {P+, P-} and memory consolidation (RecBot, arXiv 2509.21317).

Each side holds *hard* constraints, which a filter can check (genres, a release-year range,
specific items), and *soft* preferences, which only a similarity can score ("lighter",
"like Toy Story"). A parsed command is a :class:`PreferenceUpdate` (a delta), and
:func:`consolidate` folds it into the session's memory:

- compatible additions are merged in;
- a conflicting addition replaces what it contradicts ("actually, horror is fine again",
  or "more horror" after "no horror");
- an empty update (a neutral turn) leaves memory unchanged;
- ``reset`` empties memory before the rest of the update is applied.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class YearRange(BaseModel):
    """Inclusive release-year bounds; either end may be open."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    start: int | None = Field(None, ge=1800, le=2200, description="First year included; None = open.")
    end: int | None = Field(None, ge=1800, le=2200, description="Last year included; None = open.")

    @model_validator(mode="after")
    def _ordered(self) -> YearRange:
        if self.start is None and self.end is None:
            raise ValueError("year_range: at least one of start/end must be set")
        if self.start is not None and self.end is not None and self.start > self.end:
            raise ValueError(f"year_range: start {self.start} is after end {self.end}")
        return self

    def contains(self, year: int) -> bool:
        return (self.start is None or year >= self.start) and (self.end is None or year <= self.end)

    def overlaps(self, other: YearRange) -> bool:
        low = max(self.start or -(10**9), other.start or -(10**9))
        high = min(self.end or 10**9, other.end or 10**9)
        return low <= high

    def describe(self) -> str:
        if self.start is not None and self.end is not None:
            return f"{self.start}-{self.end}"
        return f"from {self.start}" if self.start is not None else f"up to {self.end}"


class SoftPreference(BaseModel):
    """A semantic preference: free text, optionally anchored on a catalog item ("like Toy Story")."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str = Field(min_length=1, description="What the user said, e.g. 'lighter' or 'Toy Story'.")
    item: int | None = Field(None, ge=0, description="Catalog item the text refers to, if any.")


class Side(BaseModel):
    """One side of the preferences (what the user wants, or what they do not want)."""

    model_config = ConfigDict(extra="forbid")

    genres: list[str] = Field(default_factory=list, description="Hard: catalog genre names.")
    year_range: YearRange | None = Field(None, description="Hard: release years.")
    items: list[int] = Field(default_factory=list, description="Hard: specific item ids.")
    soft: list[SoftPreference] = Field(default_factory=list, description="Soft: semantic preferences.")

    def is_empty(self) -> bool:
        return not (self.genres or self.year_range or self.items or self.soft)

    def has_hard(self) -> bool:
        return bool(self.genres or self.year_range or self.items)


class Preferences(BaseModel):
    """The session's preference memory: P+ (positive) and P- (negative)."""

    model_config = ConfigDict(extra="forbid")

    positive: Side = Field(default_factory=Side)
    negative: Side = Field(default_factory=Side)

    def is_empty(self) -> bool:
        return self.positive.is_empty() and self.negative.is_empty()

    def has_hard(self) -> bool:
        return self.positive.has_hard() or self.negative.has_hard()


class PreferenceUpdate(BaseModel):
    """What one command changes: additions to each side and constraints it lifts."""

    model_config = ConfigDict(extra="forbid")

    reset: bool = Field(False, description="Forget every earlier preference first.")
    positive: Side = Field(default_factory=Side, description="Added to P+.")
    negative: Side = Field(default_factory=Side, description="Added to P-.")
    lift: Side = Field(
        default_factory=Side,
        description="Removed from both sides without adding the opposite ('horror is fine again').",
    )

    def is_neutral(self) -> bool:
        return (
            not self.reset and self.positive.is_empty() and self.negative.is_empty() and self.lift.is_empty()
        )


def consolidate(memory: Preferences, update: PreferenceUpdate) -> Preferences:
    """The memory after ``update``; ``memory`` itself is not modified."""
    if update.is_neutral():
        return memory.model_copy(deep=True)
    result = Preferences() if update.reset else memory.model_copy(deep=True)
    _lift(result.positive, update.lift)
    _lift(result.negative, update.lift)
    _add(result.positive, opposite=result.negative, added=update.positive)
    _add(result.negative, opposite=result.positive, added=update.negative)
    return result


def _add(side: Side, *, opposite: Side, added: Side) -> None:
    """Merge ``added`` into ``side``; whatever it contradicts on ``opposite`` is dropped (newest wins)."""
    for genre in added.genres:
        _append_unique(side.genres, genre)
        _remove_casefold(opposite.genres, genre)
    for item in added.items:
        _append_unique(side.items, item)
        if item in opposite.items:
            opposite.items.remove(item)
    if added.year_range is not None:
        side.year_range = added.year_range  # a new range on the same side replaces the old one
        if opposite.year_range is not None and opposite.year_range.overlaps(added.year_range):
            opposite.year_range = None
    for pref in added.soft:
        _append_unique(side.soft, pref)
        opposite.soft[:] = [p for p in opposite.soft if not _same_soft(p, pref)]


def _lift(side: Side, lifted: Side) -> None:
    for genre in lifted.genres:
        _remove_casefold(side.genres, genre)
    side.items[:] = [i for i in side.items if i not in lifted.items]
    lifted_range, own_range = lifted.year_range, side.year_range
    if lifted_range is not None and own_range is not None and own_range.overlaps(lifted_range):
        side.year_range = None
    side.soft[:] = [p for p in side.soft if not any(_same_soft(p, q) for q in lifted.soft)]


def _append_unique(values: list, value: object) -> None:
    if isinstance(value, str):
        if value.casefold() not in {v.casefold() for v in values}:
            values.append(value)
    elif isinstance(value, SoftPreference):
        if not any(_same_soft(v, value) for v in values):
            values.append(value)
    elif value not in values:
        values.append(value)


def _remove_casefold(values: list[str], value: str) -> None:
    values[:] = [v for v in values if v.casefold() != value.casefold()]


def _same_soft(a: SoftPreference, b: SoftPreference) -> bool:
    if a.item is not None and b.item is not None:
        return a.item == b.item
    return a.text.strip().casefold() == b.text.strip().casefold()


def as_preferences(value: Preferences | Mapping[str, Any] | None) -> Preferences | None:
    """Preferences from the graph state's plain dict (or None when there are none)."""
    if value is None or isinstance(value, Preferences):
        return value
    return Preferences.model_validate(value)


def steered(value: Preferences | Mapping[str, Any] | None) -> Preferences | None:
    """The preferences a loop works under and shows both agents: None when there are none (the user
    never steered, or lifted or reset everything)."""
    preferences = as_preferences(value)
    return None if preferences is None or preferences.is_empty() else preferences


def describe(preferences: Preferences) -> str:
    """One line for agent prompts and reasons, e.g. 'wants: Comedy; 1990-1999 | avoids: Horror'."""
    parts = []
    for label, side in (("wants", preferences.positive), ("avoids", preferences.negative)):
        bits = [*side.genres]
        if side.year_range is not None:
            bits.append(f"released {side.year_range.describe()}")
        bits += [f"item #{i}" for i in side.items]
        bits += [f"like '{p.text}'" for p in side.soft]
        if bits:
            parts.append(f"{label}: {', '.join(bits)}")
    return " | ".join(parts) if parts else "no stated preferences"
