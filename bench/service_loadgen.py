"""Load generator for bench/service.py: a separate process driving the API over real HTTP.

Each of ``concurrency`` clients owns one session and sends recommendation requests back to
back for ``duration`` seconds (after a warm-up); prints one JSON line of results.

    python -m bench.service_loadgen --url http://127.0.0.1:8766 --key rl_... --concurrency 32
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import statistics
import time
from pathlib import Path

import httpx


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    index = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[index]


N_ITEMS = 1682  # MovieLens-100k
_TICKS = os.sysconf("SC_CLK_TCK")


def _process_cpu(pid: int | str) -> tuple[str, float]:
    """A process's name and its user + system CPU seconds (/proc/PID/stat, Linux)."""
    head, fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)
    values = fields.split()
    return head.split(" (", 1)[1], (int(values[11]) + int(values[12])) / _TICKS  # utime, stime (14, 15)


def _children(pid: int) -> list[int]:
    """The direct children of process ``pid`` (/proc/PID/task/*/children); none once it has exited."""
    try:
        return [
            int(c)
            for task in Path(f"/proc/{pid}/task").iterdir()
            for c in (task / "children").read_text().split()
        ]
    except (FileNotFoundError, ProcessLookupError):
        return []


def process_tree_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` and its live descendants (/proc, Linux).

    CPU time, not wall time: on a shared, loaded machine it is what a request costs the worker
    whatever else runs beside it."""
    total = 0.0
    stack = [pid]
    while stack:
        current = stack.pop()
        try:
            total += _process_cpu(current)[1]
        except (FileNotFoundError, ProcessLookupError):
            continue  # exited meanwhile
        stack.extend(_children(current))
    return total


def worker_cpu_s(pid: int) -> dict[int, float]:
    """CPU seconds of each direct child of ``pid`` (uvicorn's worker processes) and its descendants."""
    return {child: process_tree_cpu_s(child) for child in _children(pid)}


def postgres_cpu_s() -> float:
    """User + system CPU seconds of every PostgreSQL process on this machine (/proc, Linux): with
    the worker's and the load generator's own, where the machine's cores go per loop."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            name, cpu = _process_cpu(entry.name)
        except (FileNotFoundError, ProcessLookupError):
            continue  # exited meanwhile
        if name == "postgres":
            total += cpu
    return total


def own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _request_body(rng: random.Random, max_rounds: int, random_candidates: bool) -> dict:
    """Random candidates (as in the LLaRA protocol) make the two models disagree, so loops take rounds."""
    body: dict = {"max_rounds": max_rounds}
    if random_candidates:
        body["candidates"] = rng.sample(range(N_ITEMS), 20)
    return body


async def _client_loop(
    client: httpx.AsyncClient, session_id: str, options: dict, stop_at: float, record: bool, out: dict
) -> None:
    url = f"/v1/sessions/{session_id}/recommendations"
    rng = random.Random(session_id)
    while time.perf_counter() < stop_at:
        body = _request_body(rng, options["max_rounds"], options["random_candidates"])
        started = time.perf_counter()
        response = await client.post(url, json=body)
        elapsed = time.perf_counter() - started
        if not record:
            continue
        if response.status_code == 200:
            out["latencies"].append(elapsed)
            out["rounds"].append(len(response.json()["rounds"]))
        else:
            out["errors"].append(response.status_code)


async def run(
    url: str,
    key: str,
    concurrency: int,
    duration: float,
    warmup: float,
    max_rounds: int,
    random_candidates: bool,
    server_pid: int | None = None,
) -> dict:
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=60) as client:
        sessions = []
        for i in range(concurrency):
            history = [(i * 37 + k * 11) % 1600 for k in range(8)]
            created = await client.post("/v1/sessions", json={"user_id": f"bench-{i}", "history": history})
            created.raise_for_status()
            sessions.append(created.json()["id"])
        body = {"max_rounds": max_rounds, "random_candidates": random_candidates}
        warm: dict = {"latencies": [], "rounds": [], "errors": []}
        stop = time.perf_counter() + warmup
        await asyncio.gather(*(_client_loop(client, s, body, stop, False, warm) for s in sessions))
        out: dict = {"latencies": [], "rounds": [], "errors": []}
        load_before = os.getloadavg()[0]
        cpu_before = process_tree_cpu_s(server_pid) if server_pid else None
        postgres_before, client_before = postgres_cpu_s(), own_cpu_s()
        workers_before = worker_cpu_s(server_pid) if server_pid else {}
        started = time.perf_counter()
        stop = started + duration
        await asyncio.gather(*(_client_loop(client, s, body, stop, True, out) for s in sessions))
        wall = time.perf_counter() - started
        server_cpu = process_tree_cpu_s(server_pid) - cpu_before if cpu_before is not None else None
        postgres_cpu, client_cpu = postgres_cpu_s() - postgres_before, own_cpu_s() - client_before
        workers_after = worker_cpu_s(server_pid) if server_pid else {}
        # Each worker process's part of the work: how evenly its connections were spread.
        worker_cpu = sorted(
            (round(workers_after[w] - workers_before[w], 2) for w in workers_after if w in workers_before),
            reverse=True,
        )
        load_after = os.getloadavg()[0]
    lat = sorted(out["latencies"])
    return {
        "concurrency": concurrency,
        "requests": len(lat),
        "errors": len(out["errors"]),
        "error_statuses": {str(code): out["errors"].count(code) for code in sorted(set(out["errors"]))},
        "seconds": round(wall, 2),
        "throughput_rps": round(len(lat) / wall, 2),
        "p50_ms": round(percentile(lat, 0.50) * 1000, 1),
        "p99_ms": round(percentile(lat, 0.99) * 1000, 1),
        "mean_rounds": round(statistics.fmean(out["rounds"]), 2) if out["rounds"] else 0.0,
        "server_cpu_s": None if server_cpu is None else round(server_cpu, 3),
        "server_cpu_ms_per_loop": round(1000 * server_cpu / len(lat), 2) if server_cpu and lat else None,
        "postgres_cpu_ms_per_loop": round(1000 * postgres_cpu / len(lat), 2) if lat else None,
        "client_cpu_ms_per_loop": round(1000 * client_cpu / len(lat), 2) if lat else None,
        "worker_process_cpu_s": worker_cpu,
        "load_average": [round(load_before, 2), round(load_after, 2)],
        "latencies_ms": [round(x * 1000, 2) for x in out["latencies"]],
        "rounds": out["rounds"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--duration", type=float, default=15.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--max-rounds", type=int, default=4)
    parser.add_argument("--default-candidates", action="store_true", help="Use the rec model's top-20.")
    parser.add_argument(
        "--server-pid", type=int, default=None, help="Also measure this server's CPU time per loop (/proc)."
    )
    args = parser.parse_args()
    options = (args.duration, args.warmup, args.max_rounds, not args.default_candidates, args.server_pid)
    result = asyncio.run(run(args.url, args.key, args.concurrency, *options))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
