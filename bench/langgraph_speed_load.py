"""Load generator of bench/langgraph_speed.py: one slice of LangGraph SDK calls on one server.

A process of its own (its CPU is not the server's). Each of ``concurrency`` clients owns a thread
(created before the clock starts) and runs loops on it back to back with the same SDK call on
either server: ``runs.wait``, or ``runs.stream`` with ``stream_mode="updates"`` read to its end.
Both servers get the same histories and, client by client, the same random candidates (a seeded
generator per client), so their loops take the same rounds. Prints one JSON line.

    python -m bench.langgraph_speed_load --server recloop --url URL --key KEY --call wait
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import time
from typing import Any, Literal

from bench.service_loadgen import N_ITEMS, own_cpu_s, percentile, postgres_cpu_s, process_tree_cpu_s

Server = Literal["recloop", "langgraph"]
Call = Literal["wait", "stream"]
N_CANDIDATES = 20


def client_history(client: int) -> list[int]:
    """Client ``client``'s user: eight MovieLens item ids (as bench/service_loadgen.py's)."""
    return [(client * 37 + k * 11) % 1600 for k in range(8)]


def run_input(server: Server, history: list[int], candidates: list[int], max_rounds: int) -> dict[str, Any]:
    """One loop's run input as each server takes it.

    recloop's protocol reads the history from its thread (``metadata.history``) and takes only
    candidates and the round limit; LangGraph's server hands the input to the graph as it is, so it
    gets the graph's whole :class:`graph.state.LoopInput`, as recloop's service builds it for the
    graph (graph.runner.loop_input: no steering preferences, the agent judging)."""
    if server == "recloop":
        return {"candidates": candidates, "max_rounds": max_rounds}
    return {
        "new_loop": True,
        "history": history,
        "candidates": candidates,
        "max_rounds": max_rounds,
        "judge_mode": "agent",
        "preferences": None,
    }


def rounds_of(values: dict[str, Any]) -> int:
    """Rounds of the loop that just ran (a thread's state keeps every loop's rounds)."""
    loop = values.get("loop_index")
    return sum(1 for r in values.get("rounds") or [] if r.get("loop_index") == loop)


async def one_loop(client: Any, call: Call, thread_id: str, assistant: str, body: dict[str, Any]) -> int:
    """Run one loop; its rounds. Raises on an error answer (an ``error`` part of a stream too)."""
    if call == "wait":
        values = await client.runs.wait(thread_id, assistant, input=body, raise_error=True)
        if not isinstance(values, dict) or "__interrupt__" in values:
            raise RuntimeError(f"unexpected answer: {str(values)[:200]}")
        return rounds_of(values)
    rounds = 0
    async for part in client.runs.stream(thread_id, assistant, input=body, stream_mode="updates"):
        if part.event == "error":
            raise RuntimeError(f"error part: {str(part.data)[:200]}")
        if part.event == "updates" and isinstance(part.data, dict) and "memory_update" in part.data:
            rounds += 1
    return rounds


async def _client(client: Any, args: argparse.Namespace, index: int, thread_id: str, stop_at: float,
                  out: dict[str, list] | None, rng: random.Random) -> None:  # fmt: skip
    history = client_history(index)
    while time.perf_counter() < stop_at:
        body = run_input(args.server, history, rng.sample(range(N_ITEMS), N_CANDIDATES), args.max_rounds)
        started = time.perf_counter()
        try:
            rounds = await one_loop(client, args.call, thread_id, args.assistant, body)
        except Exception as exc:  # counted, and the first few shown
            if out is not None:
                out["errors"].append(f"{type(exc).__name__}: {str(exc)[:200]}")
            continue
        if out is not None:
            out["latencies"].append(time.perf_counter() - started)
            out["rounds"].append(rounds)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from langgraph_sdk import get_client

    client = get_client(url=args.url, api_key=args.key or None, timeout=120)
    threads = []
    for i in range(args.concurrency):
        thread = await client.threads.create(metadata={"user_id": f"speed-{i}", "history": client_history(i)})
        threads.append(thread["thread_id"])
    # Seeded per client: the k-th recorded loop of client i has the same candidates on both servers.
    warm = [random.Random(f"warm:{args.seed}:{i}") for i in range(args.concurrency)]
    rngs = [random.Random(f"{args.seed}:{i}") for i in range(args.concurrency)]
    stop = time.perf_counter() + args.warmup
    await asyncio.gather(*(_client(client, args, i, t, stop, None, warm[i]) for i, t in enumerate(threads)))
    out: dict[str, list] = {"latencies": [], "rounds": [], "errors": []}
    load_before = os.getloadavg()[0]
    server_before, postgres_before, own_before = (
        process_tree_cpu_s(args.server_pid),
        postgres_cpu_s(),
        own_cpu_s(),
    )
    started = time.perf_counter()
    stop = started + args.duration
    await asyncio.gather(*(_client(client, args, i, t, stop, out, rngs[i]) for i, t in enumerate(threads)))
    wall = time.perf_counter() - started
    server_cpu = process_tree_cpu_s(args.server_pid) - server_before
    postgres_cpu, own_cpu = postgres_cpu_s() - postgres_before, own_cpu_s() - own_before
    load_after = os.getloadavg()[0]
    for thread_id in threads:  # LangGraph's server keeps every thread's checkpoints in memory
        with contextlib.suppress(Exception):  # a thread left behind costs memory only
            await client.threads.delete(thread_id)
    latencies = sorted(out["latencies"])
    n = len(latencies)
    return {
        "server": args.server,
        "call": args.call,
        "concurrency": args.concurrency,
        "requests": n,
        "errors": len(out["errors"]),
        "error_examples": out["errors"][:3],
        "seconds": round(wall, 3),
        "throughput_rps": round(n / wall, 3) if wall else 0.0,
        "p50_ms": round(percentile(latencies, 0.5) * 1000, 1) if n else None,
        "server_cpu_s": round(server_cpu, 3),
        "postgres_cpu_s": round(postgres_cpu, 3),
        "client_cpu_s": round(own_cpu, 3),
        "load_average": [round(load_before, 2), round(load_after, 2)],
        "latencies_ms": [round(x * 1000, 2) for x in out["latencies"]],
        "rounds": out["rounds"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", choices=["recloop", "langgraph"], required=True)
    parser.add_argument("--url", required=True)
    parser.add_argument("--key", default="", help="recloop's API key (LangGraph's dev server needs none).")
    parser.add_argument("--assistant", default="recloop", help="The graph id / assistant to run.")
    parser.add_argument("--call", choices=["wait", "stream"], default="wait")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--max-rounds", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--server-pid", type=int, required=True, help="Its CPU is read from /proc.")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args))))


if __name__ == "__main__":
    main()
