"""bench.service's load on two checkouts side by side: is a change within N % of the code before it?

    git worktree add --detach ../base <commit>
    python -m bench.service_ab ../base . --slices 8 --duration 15 --concurrency 4

One uvicorn server per checkout (its own code on PYTHONPATH, its own database migrated by that
code, the same models and load generator), slices in ABBA order so that the shared machine's load
swings hit both alike. Per slice: requests/s and the server's CPU seconds (from /proc; uvicorn
with one worker is one process). Prints one JSON line per slice, then the paired ratios (new /
base) with a 95 % t-interval over slices, as one JSON object last.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

from app.settings import Settings
from bench.service import _bench_data_dir, _create_database, _drop_database, _load, start_server
from bench.slow_disk import free_port

PREP = """
import sys
from app.db.migrate import migrate_all
from app.services.bootstrap import new_key
from app.settings import Settings
url, data_dir = sys.argv[1], sys.argv[2]
settings = Settings(data_dir=data_dir, database_url=url, _env_file=None)
migrate_all(url, settings.checkpoint_schema)
print(new_key(url, settings, owner="bench").secret)
"""


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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
    p.add_argument("base")
    p.add_argument("new")
    p.add_argument("--slices", type=int, default=8)
    p.add_argument("--duration", type=float, default=15.0)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--server-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    args = p.parse_args()
    args.warmup, args.max_rounds, args.accept_top_k, args.reward_model = 2.0, 4, 1, "gru4rec"
    settings = Settings()
    data_dir = _bench_data_dir(settings, (settings.rec_model, args.reward_model), print)
    servers = {}
    try:
        for name, code in (("base", args.base), ("new", args.new)):
            url = _create_database(args.server_url)
            env = {**os.environ, "PYTHONPATH": code}
            key = (
                subprocess.run(
                    [sys.executable, "-c", PREP, url, str(data_dir)],
                    env=env,
                    cwd=code,
                    check=True,
                    stdout=subprocess.PIPE,
                    text=True,
                )
                .stdout.strip()
                .splitlines()[-1]
            )
            port = free_port()
            server_env = {
                "PYTHONPATH": code,
                "RECLOOP_DATA_DIR": str(data_dir),
                "RECLOOP_DATABASE_URL": url,
                "RECLOOP_ACCEPT_TOP_K": "1",
                "RECLOOP_REWARD_MODEL": "gru4rec",
                "RECLOOP_LOCK_POOL_SIZE": str(args.concurrency + 2),
                "RECLOOP_DB_POOL_SIZE": "3",
                "RECLOOP_CHECKPOINT_POOL_SIZE": "4",
                "RECLOOP_RATE_LIMIT_PER_MINUTE": "100000000",
                "RECLOOP_CHECKPOINTER": "postgres",
                "RECLOOP_CHECKPOINT_WRITE_BEHIND": "true",
            }
            cwd = os.getcwd()
            os.chdir(code)
            try:
                proc = start_server(server_env, port, 1)
            finally:
                os.chdir(cwd)
            servers[name] = (url, key, port, proc)
            print(f"{name}: {code} on port {port}", flush=True)
        rows = []
        for turn in range(args.slices):
            order = ["base", "new"] if turn % 4 in (0, 3) else ["new", "base"]  # ABBA BAAB
            for name in order:
                url, key, port, proc = servers[name]
                before = cpu_s(proc.pid)
                piece = _load(port, key, args.concurrency, args.duration, args)
                cpu = cpu_s(proc.pid) - before  # includes the warm-up's requests
                n = len(piece["latencies_ms"])
                row = {
                    "turn": turn,
                    "build": name,
                    "rps": piece["throughput_rps"],
                    "requests": n,
                    "errors": piece["errors"],
                    "cpu_s": round(cpu, 2),
                    "mean_rounds": sum(piece["rounds"]) / max(len(piece["rounds"]), 1),
                    "load": Path("/proc/loadavg").read_text().split()[0],
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
        print(json.dumps(paired(rows)))
    finally:
        for url, _, _, proc in servers.values():
            proc.terminate()
            proc.wait(timeout=30)
            _drop_database(args.server_url, url)


if __name__ == "__main__":
    main()
