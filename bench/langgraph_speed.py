"""recloop's server against LangGraph's own development server, serving the same loop graph: speed.

Both servers run recloop's compiled loop graph (graph/builder.py) with the same models, calibration
and offline agents (the same ``RECLOOP_*`` settings; see bench/langgraph_speed_graph.py for how
LangGraph's server gets the deps), and both are driven with the same ``langgraph-sdk`` calls:
``runs.wait``, and ``runs.stream`` with ``stream_mode="updates"``, by a load generator process of
its own (bench/langgraph_speed_load.py), at each concurrency. The servers take turns in short
slices of one run (the order alternating), so a load change on this shared machine hits both alike.

    python -m bench.langgraph_speed --json                 # concurrency 1 and 16, 3 slices each
    python -m bench.langgraph_speed --concurrency 1 --calls wait --duration 20 --slices 2

recloop: its service as bench/service.py starts it (one uvicorn worker, the PostgreSQL saver:
durable, a fresh database of ``--database-url``, dropped at the end). LangGraph: ``langgraph dev``
(in-memory, nothing durable; ``--n-jobs-per-worker`` raised to the highest concurrency so that no
run waits for a slot), from ``langgraph-api`` in a venv of its own (``--venv``, default
``.venv-langgraph-speed/``, created and filled when this runs): ``langgraph-api`` and
``langgraph-runtime-inmem`` are under the Elastic License 2.0 and never a dependency of recloop.
That venv also gets recloop's own dependencies (the graph imports this checkout).

Per server, call and concurrency: throughput, p50 and p99 latency, CPU per run (the server's
process tree, from /proc; recloop's PostgreSQL beside it), and recloop/LangGraph ratios, with the
per-slice throughput ratios (each slice's pair ran back to back). Needs ``RECLOOP_DATA_DIR`` with
trained models and their calibration (bench/service.py's data dir; ``recloop prepare`` is run).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import tomllib
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from bench.langgraph_reference import REFERENCE_PINS, add_server_arguments, langgraph_dev_process
from bench.service_loadgen import percentile

REPO = Path(__file__).resolve().parents[1]
SERVERS = ("recloop", "langgraph")
PY_SPY = "py-spy==0.4.3"  # MIT; samples both servers (--profile-s), from this venv, not recloop's

SERVED_GRAPH = """
from bench.langgraph_speed_graph import service_deps, with_deps

graph = with_deps(service_deps())
"""


def echo(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- results -----------------------------------------------------------------------------------


def aggregate(slices: list[dict[str, Any]]) -> dict[str, Any]:
    """One server's slices (one call, one concurrency) as one row: latencies pooled, CPU summed."""
    latencies = sorted(x for s in slices for x in s["latencies_ms"])
    rounds = [r for s in slices for r in s["rounds"]]
    seconds = sum(s["seconds"] for s in slices)
    n = len(latencies)
    loads = [x for s in slices for x in s["load_average"]]
    cpu, postgres = sum(s["server_cpu_s"] for s in slices), sum(s["postgres_cpu_s"] for s in slices)
    return {
        "requests": n,
        "errors": sum(s["errors"] for s in slices),
        "error_examples": [e for s in slices for e in s.get("error_examples", [])][:3],
        "seconds": round(seconds, 2),
        "throughput_rps": round(n / seconds, 2) if seconds else 0.0,
        "p50_ms": round(percentile(latencies, 0.50), 1) if n else None,
        "p99_ms": round(percentile(latencies, 0.99), 1) if n else None,
        "mean_rounds": round(statistics.fmean(rounds), 2) if rounds else None,
        "cpu_ms_per_run": round(1000 * cpu / n, 2) if n else None,
        # Every PostgreSQL process of the machine (other users' too): recloop's durability cost.
        "postgres_cpu_ms_per_run": round(1000 * postgres / n, 2) if n else None,
        "load_average": [min(loads), max(loads)] if loads else None,
        "slice_throughput_rps": [s["throughput_rps"] for s in slices],
    }


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def compare(recloop: dict[str, Any], langgraph: dict[str, Any], pairs: list[tuple[dict, dict]]) -> dict:
    """recloop / LangGraph: of the pooled figures, and of each slice pair's throughput (the spread
    of those paired ratios is the interval of the throughput ratio)."""
    paired = sorted(
        r["throughput_rps"] / g["throughput_rps"] for r, g in pairs if g["throughput_rps"] and r["requests"]
    )
    return {
        "throughput": _ratio(recloop["throughput_rps"], langgraph["throughput_rps"]),
        "p50": _ratio(recloop["p50_ms"], langgraph["p50_ms"]),
        "p99": _ratio(recloop["p99_ms"], langgraph["p99_ms"]),
        "cpu_per_run": _ratio(recloop["cpu_ms_per_run"], langgraph["cpu_ms_per_run"]),
        "throughput_per_slice": [round(x, 3) for x in paired],
        "throughput_per_slice_median": round(statistics.median(paired), 3) if paired else None,
    }


def summarize(slices: dict[tuple[str, str, int], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Rows by (call, concurrency): each server's aggregate and the ratios. ``slices`` is keyed by
    (server, call, concurrency), slice i of one server paired with slice i of the other."""
    rows = []
    for call, concurrency in dict.fromkeys((c, n) for _, c, n in slices):
        ours, theirs = (
            slices.get(("recloop", call, concurrency)),
            slices.get(("langgraph", call, concurrency)),
        )
        if not ours or not theirs:
            continue
        recloop, langgraph = aggregate(ours), aggregate(theirs)
        rows.append(
            {
                "call": call,
                "concurrency": concurrency,
                "recloop": recloop,
                "langgraph": langgraph,
                "recloop_vs_langgraph": compare(recloop, langgraph, list(zip(ours, theirs, strict=False))),
            }
        )
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    def fmt(value: Any, digits: int = 1) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    lines = [
        "| call | concurrency | server | runs/s | p50 ms | p99 ms | CPU ms/run | PostgreSQL CPU ms/run "
        "| mean rounds | errors | load average |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        for server in SERVERS:
            r = row[server]
            load = "-".join(f"{x:.1f}" for x in r["load_average"] or [])
            lines.append(
                f"| {row['call']} | {row['concurrency']} | {server} | {fmt(r['throughput_rps'], 2)} "
                f"| {fmt(r['p50_ms'])} | {fmt(r['p99_ms'])} | {fmt(r['cpu_ms_per_run'])} "
                f"| {fmt(r['postgres_cpu_ms_per_run'])} | {fmt(r['mean_rounds'], 2)} | {r['errors']} "
                f"| {load} |"
            )
        x = row["recloop_vs_langgraph"]
        spread = x["throughput_per_slice"]
        lines.append(
            f"| {row['call']} | {row['concurrency']} | **recloop / LangGraph** "
            f"| **{fmt(x['throughput'], 2)}** "
            f"(slices {fmt(min(spread), 2) if spread else '-'}-{fmt(max(spread), 2) if spread else '-'}) "
            f"| **{fmt(x['p50'], 2)}** | {fmt(x['p99'], 2)} | {fmt(x['cpu_per_run'], 2)} | | | | |"
        )
    return "\n".join(lines)


# --- the servers -------------------------------------------------------------------------------


def venv_requirements() -> list[str]:
    """LangGraph's server (pinned as bench/langgraph_reference.py pins it), py-spy, and recloop's own
    dependencies with its embeddings extra (the served graph imports this checkout; without the
    text backend the calibration `recloop prepare` fitted would not be the one this graph reads)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]["embeddings"]
    return [*REFERENCE_PINS, *project["dependencies"], *extras, PY_SPY]


def ensure_speed_venv(venv: Path) -> Path:
    """The venv holding LangGraph's server and recloop's dependencies (filled once; again when the
    requirements change)."""
    python, stamp = venv / "bin" / "python", venv / "recloop-speed-requirements.txt"
    wanted = "\n".join(venv_requirements())
    if not python.exists():
        echo(f"creating {venv} ...")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    if not stamp.exists() or stamp.read_text() != wanted:
        echo(
            f"installing LangGraph's server and recloop's dependencies into {venv} "
            "(the Elastic-2.0 parts stay there)"
        )
        subprocess.run(
            ["nice", "-n", "10", str(python), "-m", "pip", "install", "-q", *wanted.splitlines()], check=True
        )
        stamp.write_text(wanted)
    return venv


def served_env(data_dir: Path, args: argparse.Namespace) -> dict[str, str]:
    """The settings both servers' loops read: the same data dir, models and agents' knobs."""
    return {
        "RECLOOP_DATA_DIR": str(data_dir.resolve()),
        "RECLOOP_ACCEPT_TOP_K": str(args.accept_top_k),
        "RECLOOP_REWARD_MODEL": args.reward_model,
        "RECLOOP_STEERING_WARMUP": "false",
    }


@contextlib.contextmanager
def langgraph_dev(venv: Path, data_dir: Path, args: argparse.Namespace) -> Iterator[tuple[str, int]]:
    """``langgraph dev`` serving recloop's graph (bench/langgraph_speed_graph.py); its URL and pid."""
    workdir = Path(tempfile.mkdtemp(prefix="langgraph-speed-"))
    (workdir / "served_graph.py").write_text(textwrap.dedent(SERVED_GRAPH))
    config = {"dependencies": ["."], "graphs": {"recloop": "./served_graph.py:graph"}}
    (workdir / "langgraph.json").write_text(json.dumps(config, indent=2))
    env = {**served_env(data_dir, args), "PYTHONPATH": str(REPO)}
    jobs = ["--n-jobs-per-worker", str(max(args.concurrency))]
    try:
        with langgraph_dev_process(venv, workdir, args.ready_s, env=env, args=jobs) as (url, process):
            yield url, process.pid
    finally:
        log, kept = workdir / "langgraph-dev.log", args.out.with_name("langgraph-dev.log")
        if log.is_file():  # kept also when the server did not start: its log says why
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(log, kept)
            echo(f"langgraph dev's log: {kept}")
        shutil.rmtree(workdir, ignore_errors=True)


@contextlib.contextmanager
def recloop_server(data_dir: Path, args: argparse.Namespace) -> Iterator[tuple[str, str, int]]:
    """recloop's service as bench/service.py starts it (PostgreSQL saver); its URL, a key and its pid."""
    from bench.service import start_variant, stop_variant

    options = SimpleNamespace(
        accept_top_k=args.accept_top_k,
        reward_model=args.reward_model,
        concurrency=args.concurrency,
        workers=1,
    )
    extra = {k: v for k, v in served_env(data_dir, args).items() if k != "RECLOOP_DATA_DIR"}
    server = start_variant(
        "postgres", args.database_url, data_dir, options, extra_env=extra, ready_s=args.ready_s
    )
    try:
        yield f"http://127.0.0.1:{server.port}", server.key, server.process.pid
    finally:
        stop_variant(server, args.database_url)


# --- the run -----------------------------------------------------------------------------------


def load_command(
    server: dict[str, Any], call: str, concurrency: int, seed: int, seconds: float, args: argparse.Namespace
) -> list[str]:
    return [
        sys.executable, "-m", "bench.langgraph_speed_load", "--server", server["name"],
        "--url", server["url"], "--key", server["key"], "--call", call, "--concurrency", str(concurrency),
        "--duration", str(seconds), "--warmup", str(args.warmup),
        "--max-rounds", str(args.max_rounds), "--seed", str(seed), "--server-pid", str(server["pid"]),
    ]  # fmt: skip


def load_slice(
    server: dict[str, Any], call: str, concurrency: int, seed: int, args: argparse.Namespace
) -> dict:
    command = load_command(server, call, concurrency, seed, args.duration / args.slices, args)
    done = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True, cwd=REPO)
    return json.loads(done.stdout.strip().splitlines()[-1])


def profile(servers: list[dict[str, Any]], venv: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Each server sampled by py-spy through one more slice (``--profile-call``, the highest concurrency)."""
    from bench.langgraph_speed_profile import echo_profile, profile_server

    profiles = []
    for server in servers:
        echo(f"profiling {server['name']} for {args.profile_s:.0f} s ...")
        seconds = args.profile_s + 2  # the load outlasts the sampling
        command = load_command(server, args.profile_call, max(args.concurrency), 99, seconds, args)
        found = profile_server(server, args, venv / "bin" / "py-spy", args.out.parent, command)
        echo_profile(found)
        profiles.append(found)
    return profiles


def measure(
    servers: list[dict[str, Any]], args: argparse.Namespace
) -> dict[tuple[str, str, int], list[dict]]:
    """Every (call, concurrency): the servers take turns, slice by slice, the first one alternating."""
    slices: dict[tuple[str, str, int], list[dict]] = {}
    for concurrency in args.concurrency:
        for call in args.calls:
            for turn in range(args.slices):
                order = servers if turn % 2 == 0 else servers[::-1]
                for server in order:
                    piece = load_slice(server, call, concurrency, turn, args)
                    slices.setdefault((server["name"], call, concurrency), []).append(piece)
                    cpu = (
                        1000 * piece["server_cpu_s"] / piece["requests"]
                        if piece["requests"]
                        else float("nan")
                    )
                    echo(
                        f"{server['name']} {call} c={concurrency} slice {turn + 1}/{args.slices}: "
                        f"{piece['throughput_rps']:.2f} runs/s, p50 {piece['p50_ms']} ms, "
                        f"{cpu:.1f} ms CPU/run, {piece['errors']} errors {piece['error_examples'][:1]}, "
                        f"load {piece['load_average']}"
                    )
    return slices


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_server_arguments(
        parser,
        venv=REPO / ".venv-langgraph-speed",
        database="postgresql://postgres@127.0.0.1:5432/postgres",
        data_dir_help="A recloop data dir with the dataset, both models and their calibration.",
    )
    parser.add_argument("--concurrency", nargs="+", type=int, default=[1, 16])
    parser.add_argument("--calls", nargs="+", choices=["wait", "stream"], default=["wait", "stream"])
    parser.add_argument(
        "--duration", type=float, default=30.0, help="Recorded seconds per server, call and concurrency."
    )
    parser.add_argument("--slices", type=int, default=3, help="Turns each server takes within --duration.")
    parser.add_argument("--warmup", type=float, default=2.0, help="Unrecorded seconds before each slice.")
    parser.add_argument("--max-rounds", type=int, default=4)
    parser.add_argument(
        "--accept-top-k", type=int, default=1, help="Offline user agent's bar (low: more rounds)."
    )
    parser.add_argument("--reward-model", default=os.environ.get("RECLOOP_REWARD_MODEL", "gru4rec"))
    parser.add_argument("--ready-s", type=float, default=300, help="How long a server may take to start.")
    parser.add_argument(
        "--profile-s",
        type=float,
        default=0.0,
        help="Then sample each server with py-spy for this long under load (0: no profile).",
    )
    parser.add_argument("--profile-call", choices=["wait", "stream"], default="wait")
    parser.add_argument("--out", type=Path, default=Path("reports/bench_langgraph_speed.json"))
    parser.add_argument("--json", action="store_true", help="Last stdout line: one JSON object.")
    args = parser.parse_args()

    venv = ensure_speed_venv(args.venv.resolve())
    with contextlib.ExitStack() as stack:
        echo("starting recloop's server ...")
        url, key, pid = stack.enter_context(recloop_server(args.data_dir, args))
        servers = [{"name": "recloop", "url": url, "key": key, "pid": pid}]
        echo("starting LangGraph's development server (loads the models) ...")
        url, pid = stack.enter_context(langgraph_dev(venv, args.data_dir, args))
        servers.append({"name": "langgraph", "url": url, "key": "", "pid": pid})
        slices = measure(servers, args)
        profiles = profile(servers, venv, args) if args.profile_s else []
    rows = summarize(slices)
    result = {
        "args": {k: str(v) for k, v in vars(args).items()},
        "rows": rows,
        "profiles": profiles,
        "slices": [
            {
                "server": s,
                "call": c,
                "concurrency": n,
                "slices": [
                    {k: v for k, v in p.items() if k not in ("latencies_ms", "rounds")} for p in pieces
                ],
            }
            for (s, c, n), pieces in slices.items()
        ],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(markdown(rows))
    if profiles:
        from bench.langgraph_speed_profile import markdown as profile_markdown

        print(
            f"\nWhere the CPU goes (runs.{args.profile_call}, concurrency {max(args.concurrency)}, py-spy):\n"
        )
        print(profile_markdown(profiles))
    if args.json:
        print(json.dumps({"rows": rows, "profiles": profiles}))


if __name__ == "__main__":
    main()
