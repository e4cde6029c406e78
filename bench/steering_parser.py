"""Latency of one steering-command parse, per parser, with the model loaded once.

    python -m bench.steering_parser --dataset movielens [--set tests/data/steering_natural/movielens.jsonl]

Commands: a natural-command set when given, else simulated commands from the held-out phrasings.
Each parser warms up on the first commands, then every command is parsed once and timed
(wall clock, one torch thread). Prints a table and, with --json, one JSON line:
{parser: {"p50_ms", "p99_ms", "mean_ms", "cpu_p50_ms", "cpu_p99_ms", "n"}, "load_average_1m": ...}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from pathlib import Path

import torch

from app.settings import get_settings
from lab.steering.scoring import percentile, read_natural_set
from lab.steering.simulator import simulate
from recmodels.dataset import Dataset
from steering.catalog_index import CatalogIndex
from steering.choice import PARSER_KINDS, build_parser
from steering.preferences import Preferences

WARM_UP = 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--set", type=Path, default=None, help="Natural-command set (JSON lines).")
    parser.add_argument("--parsers", default="offline,learned")
    parser.add_argument("--n", type=int, default=300, help="Simulated commands when no --set.")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    settings = get_settings()
    torch.set_num_threads(settings.torch_threads)
    catalog = Dataset.open(settings.datasets_dir, args.dataset)
    if args.set is not None:
        texts = [c.text for c in read_natural_set(args.set)]
    else:
        texts = [c.text for c in simulate(CatalogIndex(catalog), args.n, split="val", seed=7)]
    results = {}
    for kind in (k.strip() for k in args.parsers.split(",")):
        if kind not in PARSER_KINDS:
            raise SystemExit(f"--parsers: {kind!r} is not one of {', '.join(PARSER_KINDS)}")
        command_parser = build_parser(kind, catalog, settings.parser_config(), catalog.name)  # type: ignore[arg-type]
        for text in texts[:WARM_UP]:
            asyncio.run(command_parser.parse(text, memory=Preferences()))
        timings, cpu = [], []
        for text in texts:
            started, cpu_started = time.perf_counter(), time.process_time()
            asyncio.run(command_parser.parse(text, memory=Preferences()))
            timings.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - cpu_started) * 1000)
        results[kind] = {
            "n": len(timings),
            "p50_ms": round(percentile(timings, 50), 2),
            "p99_ms": round(percentile(timings, 99), 2),
            "mean_ms": round(statistics.fmean(timings), 2),
            # CPU time of the one thread: what a parse costs when the box is not shared
            "cpu_p50_ms": round(percentile(cpu, 50), 2),
            "cpu_p99_ms": round(percentile(cpu, 99), 2),
        }
    # The box is shared: the load beside the run says how far the timings are from an idle machine's.
    results["load_average_1m"] = round(os.getloadavg()[0], 2)  # type: ignore[assignment]
    print(f"load average (1 min): {results['load_average_1m']}")
    print("| parser | n | p50 ms | p99 ms | mean ms | CPU p50 ms | CPU p99 ms |")
    print("|---|---|---|---|---|---|---|")
    for kind, r in results.items():
        if not isinstance(r, dict):
            continue
        print(
            f"| {kind} | {r['n']} | {r['p50_ms']} | {r['p99_ms']} | {r['mean_ms']} "
            f"| {r['cpu_p50_ms']} | {r['cpu_p99_ms']} |"
        )
    if args.json:
        print(json.dumps(results, sort_keys=True))


if __name__ == "__main__":
    main()
