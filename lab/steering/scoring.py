"""Scoring a parser's reading of a command against its intended update (the labelling contract of
tests/data/steering_natural/README.md), and reading the frozen natural-command sets.

- *exact*: reset, every hard field on every side (genres as case-folded sets, the year range,
  items as sets) and the set of (side, soft item-or-None) all match; an abstention (a neutral
  update) is right only when the expected update is null, and a null is read right only by one;
- *per-field F1*: micro-averaged over (side, value) pairs per field -- genres, years, items,
  soft (side, item-or-None), reset;
- *polarity inversions*: a hard constraint of the expected update that the parser put on the
  opposite side (positive <-> negative), or a lift read as an addition.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from steering.facts import FIELDS, facts
from steering.preferences import PreferenceUpdate

_OPPOSITE = {"positive": "negative", "negative": "positive"}


class NaturalSetError(ValueError):
    pass


@dataclass(frozen=True)
class NaturalCommand:
    id: str
    text: str
    expected: PreferenceUpdate | None
    tags: tuple[str, ...] = ()


def read_natural_set(path: Path) -> list[NaturalCommand]:
    """One JSON object a line: {"id", "text", "expected": PreferenceUpdate | null, "tags"}."""
    if not path.is_file():
        raise NaturalSetError(f"{path}: no such natural-command set")
    commands = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            expected = raw.get("expected")
            commands.append(
                NaturalCommand(
                    id=str(raw["id"]),
                    text=str(raw["text"]),
                    expected=None if expected is None else PreferenceUpdate.model_validate(expected),
                    tags=tuple(raw.get("tags") or ()),
                )
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise NaturalSetError(f"{path}:{number}: {exc}") from exc
    return commands


@dataclass(frozen=True)
class CommandScore:
    exact: bool
    abstained: bool
    inversions: int
    counts: dict[str, tuple[int, int, int]]  # field -> (true positives, false positives, false negatives)


def score_command(expected: PreferenceUpdate | None, parsed: PreferenceUpdate) -> CommandScore:
    abstained = parsed.is_neutral()
    want = facts(expected) if expected is not None else {name: set() for name in FIELDS}
    got = facts(parsed)
    counts = {name: (len(want[name] & got[name]), len(got[name] - want[name]), len(want[name] - got[name]))
              for name in FIELDS}  # fmt: skip
    exact = abstained if expected is None else all(want[name] == got[name] for name in FIELDS)
    return CommandScore(exact, abstained, _inversions(want, got), counts)


def _inversions(want: dict[str, set[tuple]], got: dict[str, set[tuple]]) -> int:
    flipped = 0
    for name in ("genres", "years", "items"):
        for side, *value in want[name]:
            if side in _OPPOSITE:
                flipped += (_OPPOSITE[side], *value) in got[name]
            else:  # a lift read as an addition
                flipped += any((other, *value) in got[name] for other in _OPPOSITE)
    return flipped


@dataclass
class SetScore:
    n: int = 0
    exact: int = 0
    abstained: int = 0
    inversions: int = 0
    commands_with_inversion: int = 0
    counts: Counter = field(default_factory=Counter)

    def add(self, score: CommandScore) -> None:
        self.n += 1
        self.exact += score.exact
        self.abstained += score.abstained
        self.inversions += score.inversions
        self.commands_with_inversion += score.inversions > 0
        for name, (tp, fp, fn) in score.counts.items():
            self.counts[name, "tp"] += tp
            self.counts[name, "fp"] += fp
            self.counts[name, "fn"] += fn

    def f1(self, name: str) -> float | None:
        tp, fp, fn = (self.counts[name, k] for k in ("tp", "fp", "fn"))
        if tp + fp + fn == 0:
            return None
        return round(2 * tp / (2 * tp + fp + fn), 4)

    def summary(self) -> dict[str, object]:
        low, high = wilson_interval(self.exact, self.n)
        return {
            "n": self.n,
            "exact": round(self.exact / self.n, 4) if self.n else None,
            "exact_ci95": [low, high],
            "abstained": self.abstained,
            "inversions": self.inversions,
            "commands_with_inversion": self.commands_with_inversion,
            "f1": {name: self.f1(name) for name in FIELDS},
        }


def score_all(pairs: Iterable[tuple[PreferenceUpdate | None, PreferenceUpdate]]) -> SetScore:
    total = SetScore()
    for expected, parsed in pairs:
        total.add(score_command(expected, parsed))
    return total


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float | None, float | None]:
    """The 95 % Wilson score interval of a proportion (sound at 0 % and 100 % too)."""
    if n == 0:
        return None, None
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[rank]
