"""Every natural-command set at once, per parser: exact reading, abstentions and inversion commands.

    python -m bench.steering_sets [--parsers offline,learned] [--datasets movielens,lastfm]
        [--rows rows.json] [--baseline old_rows.json] [--json]

Reads each ``tests/data/steering_natural*/D.jsonl`` (the frozen set and the retired ones) over the
catalog D of the configured data directory and scores it as `recloop eval parser` does. ``--rows``
keeps every command's exactness so a later run can be paired against it (``--baseline``: the
exact-reading difference with its 95 % interval, and the commands gained and lost).
Prints one table and, with --json, one JSON line: {"D/set/parser": {n, exact, exact_ci95, abstained,
commands_with_inversion[, paired]}}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
from pathlib import Path
from typing import Any

import torch

from app.settings import get_settings
from lab.eval.common import markdown_table
from lab.steering.parser_eval import run_parser
from lab.steering.scoring import read_natural_set
from recmodels.dataset import Dataset
from steering.choice import PARSER_KINDS, build_parser

SETS_ROOT = Path(__file__).resolve().parent.parent / "tests" / "data"


def natural_sets() -> list[Path]:
    """The set directories, oldest first (v1 has no suffix)."""

    def version(path: Path) -> int:
        return int(path.name.rsplit("_v", 1)[1]) if "_v" in path.name else 1

    return sorted(SETS_ROOT.glob("steering_natural*"), key=version)


def paired(before: list[bool], after: list[bool]) -> dict[str, Any]:
    """Exact-reading difference of two readings of the same commands, with a 95 % normal interval."""
    diffs = [int(b) - int(a) for a, b in zip(before, after, strict=True)]
    n = len(diffs)
    mean = sum(diffs) / n
    var = sum((d - mean) ** 2 for d in diffs) / max(n - 1, 1)
    half = 1.96 * math.sqrt(var / n)
    return {
        "diff": round(mean, 4),
        "ci95": [round(mean - half, 4), round(mean + half, 4)],
        "gained": sum(d > 0 for d in diffs),
        "lost": sum(d < 0 for d in diffs),
    }


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--parsers", default="offline")
    cli.add_argument("--datasets", default="movielens,lastfm")
    cli.add_argument("--rows", type=Path, default=None, help="Write each command's exactness here.")
    cli.add_argument("--baseline", type=Path, default=None, help="A --rows file to pair against.")
    cli.add_argument("--json", action="store_true")
    args = cli.parse_args()
    settings = get_settings()
    torch.set_num_threads(settings.torch_threads)
    baseline = json.loads(args.baseline.read_text()) if args.baseline else {}
    summary: dict[str, Any] = {}
    rows_out: dict[str, dict[str, bool]] = {}
    table = []
    for dataset in args.datasets.split(","):
        catalog = Dataset.open(settings.datasets_dir, dataset)
        for kind in args.parsers.split(","):
            if kind not in PARSER_KINDS:
                raise SystemExit(f"--parsers: {kind!r} is not one of {', '.join(PARSER_KINDS)}")
            parser = build_parser(kind, catalog, settings.parser_config(), catalog.name)  # type: ignore[arg-type]
            for directory in natural_sets():
                path = directory / f"{dataset}.jsonl"
                if not path.is_file():
                    continue
                run = asyncio.run(run_parser(parser, read_natural_set(path)))
                key = f"{dataset}/{directory.name}/{kind}"
                exact = {row["id"]: bool(row["exact"]) for row in run.rows}
                rows_out[key] = exact
                s = run.score.summary()
                entry = {
                    k: s[k] for k in ("n", "exact", "exact_ci95", "abstained", "commands_with_inversion")
                }
                if key in baseline:
                    ids = sorted(exact)
                    entry["paired"] = paired([baseline[key][i] for i in ids], [exact[i] for i in ids])
                summary[key] = entry
                pair = entry.get("paired")
                table.append([
                    dataset, directory.name, kind, s["n"], s["exact"], s["abstained"],
                    s["commands_with_inversion"],
                    f"{pair['diff']:+.3f} [{pair['ci95'][0]:+.3f}, {pair['ci95'][1]:+.3f}] "
                    f"{pair['gained']}/{pair['lost']}" if pair else "-",
                ])  # fmt: skip
    columns = [
        "dataset",
        "set",
        "parser",
        "n",
        "exact",
        "abstained",
        "inversion commands",
        "paired (gained/lost)",
    ]
    print(markdown_table(columns, table))
    if args.rows:
        args.rows.write_text(json.dumps(rows_out))
    if args.json:
        print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    main()
