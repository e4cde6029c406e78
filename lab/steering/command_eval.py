"""`recloop eval commands`: simulated natural-language commands on held-out next items.

For each evaluation row, commands are derived from the target (RecBot-style simulation):

- ``genre_include``: one of the target's genres ("more <genre>");
- ``genre_exclude``: a genre absent from the history and the target ("no <genre>");
- ``decade``: the target's release decade ("from the <decade>s");
- ``more_like``: the history item sharing most genres with the target ("more like <title>").

Each command is parsed from text (a fresh memory per command), then:

- command-satisfaction rate (CSR@k): the share of the top-k *steered* recommendations -- the
  candidate list the loop would work on, from the whole unseen catalog -- that satisfy the
  command (for ``more_like``: share a genre with the named item, a checkable proxy);
- HR@1 and Recall@10 of the target among the LLaRA protocol's 20 candidates (target + 19
  sampled), ranked by the rec model alone (before) and by the planner under the parsed
  preferences (after);
- parser failures: commands not understood or parsed to something other than intended.
"""

from __future__ import annotations

import random
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from lab.eval.common import CandidateRow, markdown_table, sampled_candidate_rows
from lab.eval.plots import Chart, Series, mean_estimate
from recmodels.dataset import Dataset, Item
from recmodels.scorer import Scorer
from steering.parsing import CommandParser
from steering.planner import PlanWeights, run_plan, steer_candidates
from steering.preferences import (
    Preferences,
    PreferenceUpdate,
    Side,
    SoftPreference,
    YearRange,
    consolidate,
)
from steering.similarity import Similarity

CommandKind = Literal["genre_include", "genre_exclude", "decade", "more_like"]
COMMAND_KINDS: tuple[CommandKind, ...] = ("genre_include", "genre_exclude", "decade", "more_like")
CSR_CUTOFFS = (1, 10, 20)
UNKNOWN_GENRE = "unknown"  # MovieLens' placeholder flag: nobody asks for it


class CommandEvalError(ValueError):
    pass


@dataclass(frozen=True)
class SimulatedCommand:
    """One command a simulated user issues, with what it should parse to and how to check it."""

    kind: CommandKind
    text: str
    expected: PreferenceUpdate
    satisfied: Callable[[Item], bool]


@dataclass(frozen=True)
class CommandOutcome:
    row_id: int
    kind: CommandKind
    text: str
    parser_failed: bool
    csr: dict[int, float]
    hit1_before: bool
    hit1_after: bool
    recall10_before: bool
    recall10_after: bool
    parser_fallback: bool = False
    """The LLM parser's answer was unusable and the offline parser answered."""
    usage: dict[str, Any] = field(default_factory=dict)
    """The parse's LLM usage (zeros offline)."""

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "csr": {str(k): v for k, v in self.csr.items()}}


def simulate_commands(row: CandidateRow, catalog: Dataset, rng: random.Random) -> list[SimulatedCommand]:
    """The commands a user with this row's held-out target would issue (some kinds may not apply)."""
    target = catalog.item(row.target)
    seen = [catalog.item(i) for i in row.history]
    commands = [
        _genre_include(target, rng),
        _genre_exclude(target, seen, _genre_counts(catalog)),
        _decade(target),
        _more_like(target, seen),
    ]
    return [c for c in commands if c is not None]


def _genre_include(target: Item, rng: random.Random) -> SimulatedCommand | None:
    genres = [g for g in target.genres if g != UNKNOWN_GENRE]
    if not genres:
        return None
    genre = rng.choice(genres)
    return SimulatedCommand(
        "genre_include",
        f"more {genre.lower()}",
        PreferenceUpdate(positive=Side(genres=[genre])),
        lambda item: genre in item.genres,
    )


def _genre_exclude(target: Item, seen: Sequence[Item], counts: Counter[str]) -> SimulatedCommand | None:
    watched = {g for item in (target, *seen) for g in item.genres}
    # The most common genre this user never watched: the exclusion that changes the most.
    unwatched = [g for g, _n in counts.most_common() if g not in watched and g != UNKNOWN_GENRE]
    if not unwatched:
        return None
    genre = unwatched[0]
    return SimulatedCommand(
        "genre_exclude",
        f"no {genre.lower()}",
        PreferenceUpdate(negative=Side(genres=[genre])),
        lambda item: genre not in item.genres,
    )


def _decade(target: Item) -> SimulatedCommand | None:
    if target.year is None:
        return None
    start = target.year - target.year % 10
    years = YearRange(start=start, end=start + 9)
    return SimulatedCommand(
        "decade",
        f"from the {start}s",
        PreferenceUpdate(positive=Side(year_range=years)),
        lambda item: item.year is not None and years.contains(item.year),
    )


def _more_like(target: Item, seen: Sequence[Item]) -> SimulatedCommand | None:
    named = [i for i in seen if i.title]
    if not named:
        return None
    target_genres = set(target.genres)
    # Most shared genres with the target; the most recent item wins ties (max keeps the first).
    anchor = max(reversed(named), key=lambda i: len(target_genres & set(i.genres)))
    anchor_genres = set(anchor.genres)
    return SimulatedCommand(
        "more_like",
        f"more like {anchor.title}",
        PreferenceUpdate(positive=Side(soft=[SoftPreference(text=anchor.title, item=anchor.id)])),
        lambda item: bool(anchor_genres & set(item.genres)),
    )


def _genre_counts(catalog: Dataset) -> Counter[str]:
    return Counter(g for item in catalog.items for g in item.genres)


async def evaluate_command(
    row: CandidateRow,
    command: SimulatedCommand,
    *,
    parser: CommandParser,
    scorer: Scorer,
    catalog: Dataset,
    similarity: Similarity | None,
    weights: PlanWeights,
) -> CommandOutcome:
    result = await parser.parse(command.text, memory=Preferences(), recommendations=row.candidates)
    preferences = consolidate(Preferences(), result.update)
    failed = not result.understood or not _same_intent(result.update, command.expected, catalog)
    steered = steer_candidates(
        preferences, row.history, scorer, catalog, k=max(CSR_CUTOFFS), similarity=similarity, weights=weights
    )
    csr = {k: _share(steered[:k], command.satisfied, catalog, k) for k in CSR_CUTOFFS}
    before = scorer.rank(row.history, row.candidates)
    after = run_plan(
        preferences, row.candidates, row.history, scorer, catalog, len(row.candidates),
        similarity=similarity, weights=weights,
    ).items  # fmt: skip
    return CommandOutcome(
        row_id=row.row_id,
        kind=command.kind,
        text=command.text,
        parser_failed=failed,
        csr=csr,
        hit1_before=before[:1] == [row.target],
        hit1_after=after[:1] == [row.target],
        recall10_before=row.target in before[:10],
        recall10_after=row.target in after[:10],
        parser_fallback=result.fallback,
        usage=dict(result.usage),
    )


def _same_intent(parsed: PreferenceUpdate, expected: PreferenceUpdate, catalog: Dataset) -> bool:
    """Equal, except that a soft anchor may be any catalog copy of the intended title."""

    def canonical(update: PreferenceUpdate) -> PreferenceUpdate:
        copy = update.model_copy(deep=True)
        for side in (copy.positive, copy.negative, copy.lift):
            side.soft = [
                SoftPreference(text=catalog.item(p.item).title.casefold(), item=None)
                if p.item is not None
                else p
                for p in side.soft
            ]
        return copy

    return canonical(parsed) == canonical(expected)


def _share(items: Sequence[int], satisfied: Callable[[Item], bool], catalog: Dataset, k: int) -> float:
    """Satisfying items among the top k; missing slots (fewer than k items qualify) count as unsatisfying."""
    return sum(satisfied(catalog.item(i)) for i in items) / k


def evaluation_rows(
    catalog: Dataset, split: str, seed: int, n_candidates: int, max_rows: int | None
) -> list[CandidateRow]:
    if not any(item.genres for item in catalog.items):
        raise CommandEvalError(
            f"{catalog.root}/items.jsonl: no item has 'genres'; simulated commands need MovieLens-style "
            "genre and year attributes"
        )
    rows, _dropped = catalog.eval_rows(split)
    return sampled_candidate_rows(rows[:max_rows], catalog.n_items, seed, n_candidates)


async def run_command_eval(
    rows: Sequence[CandidateRow],
    *,
    parser: CommandParser,
    scorer: Scorer,
    catalog: Dataset,
    similarity: Similarity | None,
    weights: PlanWeights = PlanWeights(),
    seed: int = 0,
    on_row: Callable[[], None] | None = None,
) -> list[CommandOutcome]:
    rng = random.Random(seed)
    outcomes = []
    for row in rows:
        for command in simulate_commands(row, catalog, rng):
            outcomes.append(
                await evaluate_command(
                    row, command, parser=parser, scorer=scorer, catalog=catalog, similarity=similarity,
                    weights=weights,
                )
            )  # fmt: skip
        if on_row is not None:
            on_row()
    return outcomes


def summarize(outcomes: Sequence[CommandOutcome]) -> dict[str, float | int]:
    """The --json contract: csr1/10/20, hr1/recall10 before and after, parser_failure_rate, n_commands."""
    if not outcomes:
        raise CommandEvalError("no commands could be simulated for these rows")

    def mean(values: Sequence[float]) -> float:
        return round(statistics.fmean(values), 4)

    return {
        **{f"csr{k}": mean([o.csr[k] for o in outcomes]) for k in CSR_CUTOFFS},
        "hr1_before": mean([o.hit1_before for o in outcomes]),
        "hr1_after": mean([o.hit1_after for o in outcomes]),
        "recall10_before": mean([o.recall10_before for o in outcomes]),
        "recall10_after": mean([o.recall10_after for o in outcomes]),
        "parser_failure_rate": mean([o.parser_failed for o in outcomes]),
        "parser_fallback_rate": mean([o.parser_fallback for o in outcomes]),
        "n_commands": len(outcomes),
    }


def report(outcomes: Sequence[CommandOutcome], header: str) -> tuple[str, dict[str, dict[str, float | int]]]:
    """Markdown report and the per-kind summaries (overall under "all")."""
    by_kind = {kind: [o for o in outcomes if o.kind == kind] for kind in COMMAND_KINDS}
    summaries = {kind: summarize(group) for kind, group in by_kind.items() if group}
    summaries["all"] = summarize(outcomes)
    columns = ["command", "n", "CSR@1", "CSR@10", "CSR@20", "HR@1 before", "HR@1 after", "R@10 before",
               "R@10 after", "parser failures"]  # fmt: skip
    table = markdown_table(
        columns,
        [
            [
                kind,
                s["n_commands"],
                s["csr1"],
                s["csr10"],
                s["csr20"],
                s["hr1_before"],
                s["hr1_after"],
                s["recall10_before"],
                s["recall10_after"],
                s["parser_failure_rate"],
            ]
            for kind, s in summaries.items()
        ],  # fmt: skip
    )
    return f"{header}\n\n{table}\n", summaries


CHARTED: tuple[tuple[str, Callable[[CommandOutcome], float]], ...] = (
    ("CSR@10", lambda o: o.csr[10]),
    ("HR@1 before", lambda o: float(o.hit1_before)),
    ("HR@1 after", lambda o: float(o.hit1_after)),
    ("parser failures", lambda o: float(o.parser_failed)),
)


def commands_chart(outcomes: Sequence[CommandOutcome], caption: str) -> Chart:
    """Per command kind (and all): CSR@10, HR@1 before/after and the parser's failure rate, each
    a mean over the simulated users (a user's commands of that kind averaged first) with its
    bootstrap interval over the users."""
    groups = {kind: [o for o in outcomes if o.kind == kind] for kind in COMMAND_KINDS}
    groups = {kind: group for kind, group in groups.items() if group} | {"all": list(outcomes)}
    series = []
    for label, metric in CHARTED:
        estimates = []
        for kind, group in groups.items():
            by_row: dict[int, list[float]] = {}
            for o in group:
                by_row.setdefault(o.row_id, []).append(metric(o))
            estimates.append(mean_estimate(kind, [sum(v) / len(v) for v in by_row.values()]))
        series.append(Series(label, tuple(estimates)))
    return Chart(
        name="commands",
        title="Natural-language commands: satisfaction and accuracy",
        xlabel="command kind",
        ylabel="rate",
        series=tuple(series),
        caption=caption,
        paper_note="AFL/FLOW has no steering experiment: no paper values drawn.",
        y_max=1.0,
    )
