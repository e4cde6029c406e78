"""bench.service's load on two checkouts side by side: is a change within N % of the code before it?

    git worktree add --detach ../base <commit>
    python -m bench.service_ab ../base . --slices 8 --duration 15 --concurrency 4

One uvicorn server per checkout (bench.service's ``start_variant``: its own code on PYTHONPATH,
its own database migrated by that code, the same models and load generator), slices in ABBA order
so that the shared machine's load swings hit both alike. Per slice: requests/s and the server's
CPU seconds (the load generator's /proc reading of the server's process tree). Prints one JSON
line per slice, then the paired ratios (new / base) with a 95 % t-interval over slices, as one
JSON object last.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

from app.settings import Settings
from bench.service import _bench_data_dir, _load, start_variant, stop_variant


def _ratio(values: list[float]) -> dict[str, float]:
    """Geometric mean of paired ratios with a 95 % t-interval (on the log scale)."""
    logs = [math.log(v) for v in values]
    mean, half = statistics.fmean(logs), 0.0
    if len(logs) > 1:
        t95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}
        half = t95.get(len(logs) - 1, 2.0) * statistics.stdev(logs) / math.sqrt(len(logs))
    return {"ratio": round(math.exp(mean), 3), "low": round(math.exp(mean - half), 3),
            "high": round(math.exp(mean + half), 3)}  # fmt: skip


def paired(rows: list[dict]) -> dict:
    turns: dict[int, dict[str, dict]] = {}
    for row in rows:
        turns.setdefault(row["turn"], {})[row["build"]] = row
    pairs = [t for t in turns.values() if {"base", "new"} <= set(t)]
    cpu = [
        (t["new"]["cpu_s"] / t["new"]["requests"]) / (t["base"]["cpu_s"] / t["base"]["requests"])
        for t in pairs
    ]
    return {
        "pairs": len(pairs),
        "throughput_new_over_base": _ratio([t["new"]["rps"] / t["base"]["rps"] for t in pairs]),
        "cpu_per_request_new_over_base": _ratio(cpu),
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("base", type=Path)
    p.add_argument("new", type=Path)
    p.add_argument("--slices", type=int, default=8)
    p.add_argument("--duration", type=float, default=15.0)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--server-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    args = p.parse_args()
    args.warmup, args.max_rounds, args.accept_top_k, args.reward_model = 2.0, 4, 1, "gru4rec"
    args.workers = 1
    settings = Settings()
    data_dir = _bench_data_dir(settings, (settings.rec_model, args.reward_model), print)
    run = argparse.Namespace(**{**vars(args), "concurrency": [args.concurrency]})  # start_variant's shape
    servers = {}
    try:
        for build, code in (("base", args.base), ("new", args.new)):
            servers[build] = start_variant("postgres", args.server_url, data_dir, run, code.resolve())
            print(f"{build}: {code} on port {servers[build].port}", flush=True)
        rows = []
        for turn in range(args.slices):
            order = ["base", "new"] if turn % 4 in (0, 3) else ["new", "base"]  # ABBA BAAB
            for build in order:
                piece = _load(servers[build], args.concurrency, args.duration, args)
                row = {
                    "turn": turn,
                    "build": build,
                    "rps": piece["throughput_rps"],
                    "requests": len(piece["latencies_ms"]),
                    "errors": piece["errors"],
                    "cpu_s": piece["server_cpu_s"],  # includes the warm-up's requests
                    "mean_rounds": sum(piece["rounds"]) / max(len(piece["rounds"]), 1),
                    "load": Path("/proc/loadavg").read_text().split()[0],
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
        print(json.dumps(paired(rows)))
    finally:
        for server in servers.values():
            stop_variant(server, args.server_url)


if __name__ == "__main__":
    main()
