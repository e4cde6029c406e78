"""`recloop eval parser`: parsers side by side on a frozen natural-command set.

For each parser: exact reading (with a 95 % Wilson interval), per-field F1, polarity inversions
on hard constraints, abstentions, and the latency of one parse (p50/p99, the model loaded once).
The scoring is :mod:`lab.steering.scoring` (the labelling contract of the set's README).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lab.eval.common import markdown_table
from lab.steering.scoring import NaturalCommand, SetScore, percentile, score_command
from steering.facts import FIELDS
from steering.parsing import CommandParser
from steering.preferences import Preferences


@dataclass
class ParserRun:
    parser: str
    score: SetScore
    latencies_ms: list[float]
    rows: list[dict[str, Any]]

    def summary(self) -> dict[str, Any]:
        return {
            **self.score.summary(),
            "p50_ms": round(percentile(self.latencies_ms, 50), 2),
            "p99_ms": round(percentile(self.latencies_ms, 99), 2),
        }


async def run_parser(
    parser: CommandParser, commands: Sequence[NaturalCommand], *, on_command: Callable[[], None] | None = None
) -> ParserRun:
    score, latencies, rows = SetScore(), [], []
    for command in commands:
        started = time.perf_counter()
        result = await parser.parse(command.text, memory=Preferences())
        latencies.append((time.perf_counter() - started) * 1000)
        scored = score_command(command.expected, result.update)
        score.add(scored)
        rows.append(
            {
                "id": command.id,
                "exact": scored.exact,
                "inversions": scored.inversions,
                "parsed": result.update.model_dump(mode="json", exclude_defaults=True),
                "unparsed": result.unparsed,
            }
        )
        if on_command is not None:
            on_command()
    return ParserRun(parser.name, score, latencies, rows)


def report(runs: Sequence[ParserRun], header: str) -> str:
    columns = ["parser", "n", "exact", "95% CI", "inversions (commands)", "abstained",
               *[f"F1 {name}" for name in FIELDS], "p50 ms", "p99 ms"]  # fmt: skip
    rows = []
    for run in runs:
        s = run.summary()
        low, high = s["exact_ci95"]
        rows.append(
            [run.parser, s["n"], s["exact"], f"{low}-{high}",
             f"{s['inversions']} ({s['commands_with_inversion']})",
             s["abstained"], *[s["f1"][name] if s["f1"][name] is not None else "-" for name in FIELDS],
             s["p50_ms"], s["p99_ms"]]
        )  # fmt: skip
    return f"{header}\n\n{markdown_table(columns, rows)}\n"
