"""Training commands from a labelled natural-command set: span roles derived from its expected update.

A natural set labels a whole command (a :class:`PreferenceUpdate`, or null to abstain), not its
spans. The student learns roles per mention, so each mention the look-up finds gets the role its
value has in the label: a genre on the wanted side is wanted, an excluded title unwanted, a title
among the wanted soft anchors a taste anchor, and so on. A command is kept only when the derived
roles rebuild its label exactly (through the same :func:`~steering.reading.assemble` the parser
uses); where the look-up misses a span or a label cannot be split into roles, nothing is taught.

Only sets marked retired (spent for development) may be trained on: a set whose README does not
say so is refused, so a frozen evaluation set cannot end up in a training run by a typo.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lab.steering.scoring import NaturalCommand, read_natural_set, score_command
from lab.steering.simulator import Planted, SimulatedCommand
from steering.catalog_index import CatalogIndex
from steering.mentions import Mention, MentionFinder
from steering.preferences import PreferenceUpdate, Side, YearRange
from steering.reading import Reading, Role, assemble, complement

RETIRED_MARK = "**Retired"
_SIDES: tuple[tuple[str, Role], ...] = (
    ("positive", Role.POSITIVE), ("negative", Role.NEGATIVE), ("lift", Role.LIFT),
)  # fmt: skip


class FrozenSetError(ValueError):
    """A natural set that is not marked retired was given for training."""


@dataclass(frozen=True)
class NaturalLabels:
    commands: list[SimulatedCommand]
    """The commands whose label the derived roles rebuild exactly."""
    dropped: int
    """Commands whose label the look-up and the roles cannot rebuild (not trained on)."""


def read_training_set(path: Path) -> list[NaturalCommand]:
    """A natural set for training: refused unless its directory's README marks it retired."""
    readme = Path(path).parent / "README.md"
    if not readme.is_file() or RETIRED_MARK not in readme.read_text(encoding="utf-8"):
        raise FrozenSetError(
            f"{path}: not marked retired ({RETIRED_MARK}...) in {readme}; a frozen set is never trained on"
        )
    return read_natural_set(path)


def derive(commands: Sequence[NaturalCommand], finder: MentionFinder, index: CatalogIndex) -> NaturalLabels:
    kept, dropped = [], 0
    for command in commands:
        labelled = label_command(command.text, command.expected, finder, index)
        if labelled is None:
            dropped += 1
        else:
            kept.append(labelled)
    return NaturalLabels(kept, dropped)


def label_command(
    text: str, expected: PreferenceUpdate | None, finder: MentionFinder, index: CatalogIndex
) -> SimulatedCommand | None:
    """The command as the simulator would have written it, or None when its label is not rebuilt."""
    found = finder.find(text)
    roles = [_role(m, expected) for m in found]
    if expected is None:
        soft_positive = soft_negative = False
    else:
        soft_positive = _free_soft(expected.positive) and not _mood_on(found, roles, Role.POSITIVE)
        soft_negative = _free_soft(expected.negative) and not _mood_on(found, roles, Role.NEGATIVE)
    reset = bool(expected is not None and expected.reset)
    reading = Reading(
        found, roles, reset=reset,
        soft_positive="wish" if soft_positive else None, soft_negative="wish" if soft_negative else None,
    )  # fmt: skip
    if not score_command(expected, assemble(reading, index)).exact:
        return None
    planted = tuple(Planted(m, r) for m, r in zip(found, roles, strict=True) if r is not Role.NONE)
    return SimulatedCommand(text, planted, reset, soft_positive, soft_negative, expected)


def _role(mention: Mention, expected: PreferenceUpdate | None) -> Role:
    if expected is None:
        return Role.NONE
    for name, role in _SIDES:
        side: Side = getattr(expected, name)
        if mention.kind == "genre" and mention.genres:
            if {g.casefold() for g in mention.genres} <= {g.casefold() for g in side.genres}:
                return role
        elif mention.kind == "year" and mention.years is not None:
            if side.year_range == mention.years or _within(mention.years, side.year_range):
                return role
        elif mention.kind == "item" and any(i in side.items for i in mention.items):
            return role
    years = mention.years if mention.kind == "year" else None
    # "nothing older than 1990" is labelled by what it leaves: the wanted range on the other side
    if years is not None and _one_sided(years) and expected.positive.year_range == complement(years):
        return Role.NEGATIVE
    if mention.kind == "item" and mention.items:
        for side, role in ((expected.positive, Role.SOFT_POSITIVE), (expected.negative, Role.SOFT_NEGATIVE)):
            if any(p.item in mention.items for p in side.soft):
                return role
    if mention.kind == "mood":
        sides = [role for name, role in _SIDES if _free_soft(getattr(expected, name))]
        if len(sides) == 1:
            return sides[0]
    return Role.NONE


def _within(years: YearRange, hull: YearRange | None) -> bool:
    """Two ranges on one side are labelled by their hull ("the 80s or the 90s"): each is in it."""
    if hull is None or hull.start is None or hull.end is None:
        return False
    return (
        years.start is not None
        and years.end is not None
        and hull.start <= years.start <= years.end <= hull.end
    )


def _one_sided(years: YearRange) -> bool:
    return (years.start is None) != (years.end is None)


def _free_soft(side: Side) -> bool:
    return any(p.item is None for p in side.soft)


def _mood_on(found: Sequence[Mention], roles: Sequence[Role], role: Role) -> bool:
    return any(m.kind == "mood" and r is role for m, r in zip(found, roles, strict=True))
