"""Where a loop's CPU goes in the real service: a CPU-time profile of the uvicorn worker under load.

One variant's server (bench/service.py: uvicorn, one worker, a fresh migrated database) runs
through bench/profiled_uvicorn.py (a sampler on the kernel's CPU-time profiling timer) and is
loaded by bench/service_loadgen.py at concurrency 1; after a warm-up the worker is sampled once
per 2 ms of its CPU. Prints the worker's CPU time per loop (/proc), how it splits between its
threads, and the top costs: self share by layer (which library the CPU is spent in), and the
functions with the largest self and cumulative shares of the samples.

    python -m bench.service_profile --duration 40       # postgres (the service default)
    python -m bench.service_profile --variant memory --json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from app.settings import Settings
from bench.service import VARIANTS, _bench_data_dir, start_variant, stop_variant
from bench.service_loadgen import process_tree_cpu_s

# Layer of a sample = the library its innermost frame is in (first match wins).
LAYERS: tuple[tuple[str, str], ...] = (
    ("models (torch, recmodels)", r"^(torch|recmodels)/"),
    ("checkpoint rows and serde", r"^(langgraph/checkpoint|postgres/(checkpoints|checkpoint_format)\.py)"),
    ("LangGraph engine", r"^(langgraph|langchain_core)/"),
    ("psycopg + pool", r"^(psycopg|psycopg_pool)/"),
    ("SQLAlchemy", r"^sqlalchemy/"),
    ("pydantic", r"^pydantic(_core)?/"),
    ("FastAPI / Starlette", r"^(fastapi|starlette|sse_starlette)/"),
    ("uvicorn / HTTP parsing", r"^(uvicorn|httptools|h11)/"),
    ("event loop (asyncio, uvloop)", r"^(asyncio|uvloop|selectors|concurrent|threading)/|^<frozen runpy>"),
    ("json", r"^json/"),
    ("the loop's own code (graph/)", r"^graph/"),
    ("the service's code (app/)", r"^app/"),
    ("other", r""),
)
# Area of a sample = the first of these whose pattern matches a frame anywhere in its stack.
AREAS: tuple[tuple[str, str], ...] = (
    ("models: rec + reward scoring (torch)", r"\((recmodels|torch)/"),
    (
        "checkpoint saver: rows, serde, tip cache, its SQL",
        r"\((postgres/(checkpoints|checkpoint_format)\.py|langgraph/checkpoint/)",
    ),
    ("advisory lock + rate counter (lock pool)", r"\(app/db/(locks|limits)\.py"),
    ("loop history + session rows (SQLAlchemy + psycopg)", r"\(sqlalchemy/"),
    ("the loop's nodes and agents (graph/)", r"\(graph/(?!runner\.py)"),
    ("LangGraph engine (tasks, channels, checkpoints)", r"\((langgraph|langchain_core)/"),
    (
        "HTTP: uvicorn, FastAPI, middlewares, pydantic, JSON",
        r"\((uvicorn|fastapi|starlette|pydantic|app/api)/",
    ),
    ("other psycopg (waits, pools)", r"\(psycopg"),
    ("event loop, other", r""),
)
FRAME = re.compile(r"^(?P<name>.*) \((?P<file>[^()]*?)(?::\d+)?\)$")


def _frames(stack: str) -> list[tuple[str, str]]:
    """(function, file) per frame of one collapsed stack, outermost first (files relative to their
    site-packages or checkout, which the layer patterns match)."""
    frames = []
    for frame in stack.split(";"):
        match = FRAME.match(frame)
        frames.append((match["name"], match["file"]) if match else (frame, ""))
    return frames


def summarise(
    raw: str,
    top: int = 20,
    *,
    layers_by: tuple[tuple[str, str], ...] = LAYERS,
    areas_by: tuple[tuple[str, str], ...] = AREAS,
) -> dict:
    """Self share by layer, and the top functions by self and by cumulative share of the samples
    (``layers_by``, ``areas_by``: other servers' code names other layers)."""
    layers: Counter[str] = Counter()
    areas: Counter[str] = Counter()
    self_counts: Counter[str] = Counter()
    cumulative: Counter[str] = Counter()
    total = 0
    for line in raw.splitlines():
        if not line.strip():
            continue
        stack, count_text = line.rsplit(" ", 1)  # the weight: microseconds of CPU
        count = int(count_text)
        frames = _frames(stack)
        areas[next(label for label, pattern in areas_by if re.search(pattern, stack))] += count
        total += count
        leaf_name, leaf_file = frames[-1]
        layers[next(label for label, pattern in layers_by if re.search(pattern, leaf_file))] += count
        self_counts[f"{leaf_name} ({leaf_file})"] += count
        for key in {f"{name} ({file})" for name, file in frames}:
            cumulative[key] += count

    def shares(counter: Counter[str], n: int) -> list[list]:
        return [[key, round(value / total, 4)] for key, value in counter.most_common(n)]

    return {
        "sampled_cpu_s": round(total / 1e6, 3),
        "areas": shares(areas, len(areas_by)),
        "layers_self": shares(layers, len(layers_by)),
        "functions_self": shares(self_counts, top),
        "functions_cumulative": shares(cumulative, top * 3),
    }


def _thread_cpu_s(pid: int) -> dict[str, float]:
    """CPU seconds per thread of ``pid`` (/proc), keyed ``tid:name``."""
    ticks = os.sysconf("SC_CLK_TCK")
    found = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            head, tail = (task / "stat").read_text().rsplit(")", 1)
        except FileNotFoundError:
            continue
        fields = tail.split()
        found[f"{task.name}:{head.split('(', 1)[1]}"] = (int(fields[11]) + int(fields[12])) / ticks
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=sorted(VARIANTS), default="postgres")
    parser.add_argument("--duration", type=float, default=40.0, help="Seconds of recorded load.")
    parser.add_argument("--warmup", type=float, default=8.0, help="Seconds of load before the profile.")
    parser.add_argument("--database-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--reward-model", default="gru4rec")
    parser.add_argument("--max-rounds", type=int, default=4)
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--code-dir", type=Path, default=None, help="Profile another checkout's code.")
    parser.add_argument("--stacks-out", type=Path, default=None, help="Keep the collapsed stacks here.")
    parser.add_argument("--json", action="store_true", help="Print the summary as one JSON object.")
    args = parser.parse_args()
    bench_args = argparse.Namespace(
        concurrency=[1], workers=1, accept_top_k=1, reward_model=args.reward_model, max_rounds=args.max_rounds
    )
    settings = Settings()
    data_dir = _bench_data_dir(settings, (settings.rec_model, args.reward_model), print)
    with tempfile.TemporaryDirectory() as tmp:
        stacks = args.stacks_out or Path(tmp) / "stacks.txt"
        stacks.unlink(missing_ok=True)
        server = start_variant(
            args.variant,
            args.database_url,
            data_dir,
            bench_args,
            args.code_dir.resolve() if args.code_dir else None,
            extra_env={"RECLOOP_BENCH_PROFILE_OUT": str(stacks.resolve())},
            module=str(Path(__file__).with_name("profiled_uvicorn.py")),  # also for a --code-dir
            ready_s=900,
        )
        pid = server.process.pid
        try:
            load = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "bench.service_loadgen",
                    "--url",
                    f"http://127.0.0.1:{server.port}",
                    "--key",
                    server.key,
                    "--concurrency",
                    "1",
                    "--duration",
                    str(args.duration),
                    "--warmup",
                    str(args.warmup),
                    "--max-rounds",
                    str(args.max_rounds),
                    "--server-pid",
                    str(pid),
                ],  # fmt: skip
                stdout=subprocess.PIPE,
                text=True,
            )
            time.sleep(args.warmup + 2)  # the sessions are created, the warm-up is over
            threads_before, cpu_before = _thread_cpu_s(pid), process_tree_cpu_s(pid)
            os.kill(pid, signal.SIGUSR1)
            time.sleep(args.duration - 4)
            os.kill(pid, signal.SIGUSR2)
            threads_after, cpu_after = _thread_cpu_s(pid), process_tree_cpu_s(pid)
            loaded = json.loads(load.communicate()[0].strip().splitlines()[-1])
            deadline = time.time() + 60
            while not stacks.exists() and time.time() < deadline:
                time.sleep(0.5)
            summary = summarise(stacks.read_text(), args.top)
        finally:
            stop_variant(server, args.database_url)
    for key in ("latencies_ms", "rounds"):
        loaded.pop(key, None)
    spent = {t: threads_after[t] - threads_before.get(t, 0.0) for t in threads_after}
    main_thread = next((v for t, v in spent.items() if t.split(":", 1)[0] == str(pid)), 0.0)
    result = {
        "variant": args.variant,
        "load": loaded,
        "profiled_cpu_s": round(cpu_after - cpu_before, 3),
        "event_loop_thread_share": round(main_thread / max(cpu_after - cpu_before, 1e-9), 3),
        "busiest_threads": sorted(([t, round(v, 3)] for t, v in spent.items() if v > 0), key=lambda x: -x[1])[
            :8
        ],
        **summary,
    }
    if args.json:
        print(json.dumps(result))
        return
    print(
        f"{args.variant}: {loaded['requests']} loops, {loaded['mean_rounds']} rounds each, worker CPU "
        f"{loaded['server_cpu_ms_per_loop']} ms per loop (profiled), p50 {loaded['p50_ms']} ms, load "
        f"average {loaded['load_average']}; event-loop thread {result['event_loop_thread_share']:.0%} of "
        f"the worker's CPU; threads {result['busiest_threads']}"
    )
    _print_shares("area (first match in the stack)", "share", summary["areas"])
    _print_shares("layer (innermost frame)", "self share", summary["layers_self"])
    _print_shares("function (self)", "self share", summary["functions_self"], code=True)
    _print_shares("function (cumulative)", "cumulative share", summary["functions_cumulative"], code=True)


def _print_shares(label_header: str, share_header: str, rows, *, code: bool = False) -> None:
    """One Markdown table of (label, share) rows; function names in code spans."""
    print(f"\n| {label_header} | {share_header} |\n|---|---:|")
    for label, share in rows:
        print(f"| {f'`{label}`' if code else label} | {share:.1%} |")


if __name__ == "__main__":
    main()
