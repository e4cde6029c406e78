"""Service benchmark: throughput and latency through real HTTP, PostgreSQL vs in-memory checkpoints.

For each checkpointer variant a uvicorn server is started on 127.0.0.1 (its own process) against
a fresh, migrated database; a load generator (another process, bench/service_loadgen.py) sends
recommendation requests with offline agents and a 4-round limit at each concurrency level.

    python -m bench.service                      # postgres vs memory, concurrency 1 and 32
    python -m bench.service --variants postgres_stock postgres_nobatch postgres memory
    python -m bench.service --fsync-delay-ms 4     # on a private server whose fsyncs take 4 ms more
    python -m bench.service --baseline ../main     # also main's code, in the same run (CPU before/after)

Variants: ``postgres`` (the service default: pooled saver, one durable commit per round),
``postgres_nobatch`` (pooled saver, every checkpoint write its own commit), ``postgres_stock``
(LangGraph's AsyncPostgresSaver as shipped), ``memory`` (InMemorySaver, nothing durable).
``--baseline PATH...`` adds the ``--baseline-variants`` run from other checkouts' code (``NAME@DIRNAME``),
taking turns with the others. Each slice measures the worker's CPU time per loop (/proc), with
PostgreSQL's and the load generator's beside it, and with several workers each worker process's
share (an uneven spread of keep-alive connections shows there).
Results: a markdown table on stdout and JSON in reports/bench_service.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import uuid
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from app.db.migrate import migrate_all
from app.services.bootstrap import new_key
from app.settings import Settings
from bench.ports import http_ready, reserved_port, wait_ready
from bench.service_loadgen import percentile
from bench.slow_disk import commit_ms, slow_fsync_server
from postgres.urls import with_database

VARIANTS = {
    "postgres": {"RECLOOP_CHECKPOINTER": "postgres", "RECLOOP_CHECKPOINT_WRITE_BEHIND": "true"},
    "postgres_nobatch": {"RECLOOP_CHECKPOINTER": "postgres", "RECLOOP_CHECKPOINT_WRITE_BEHIND": "false"},
    "postgres_stock": {"RECLOOP_CHECKPOINTER": "postgres_stock"},
    "memory": {"RECLOOP_CHECKPOINTER": "memory"},
}


def _bench_data_dir(settings: Settings, model_names: tuple[str, ...], echo) -> Path:
    """A data dir with the dataset and the models; trains tiny ones where none exist (latency only)."""
    from recmodels.artifacts import artifact_path
    from recmodels.dataset import Dataset

    dataset = Dataset.open(settings.datasets_dir, settings.dataset)
    if all(artifact_path(settings.models_dir, dataset.name, name).is_file() for name in model_names):
        return settings.data_dir
    from recmodels.training import train

    bench_dir = Path(tempfile.gettempdir()) / "recloop-bench-data"
    (bench_dir / "models").mkdir(parents=True, exist_ok=True)
    if not (bench_dir / "datasets").exists():
        (bench_dir / "datasets").symlink_to(settings.datasets_dir)
    for name in model_names:
        if not artifact_path(bench_dir / "models", dataset.name, name).is_file():
            echo(f"no trained {name}: training a tiny one (quality is irrelevant here)")
            train(dataset, name, models_dir=bench_dir / "models", epochs=1, max_train_rows=3000)
    return bench_dir


def _create_database(server_url: str) -> str:
    name = f"recloop_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return with_database(server_url, name)


def _drop_database(server_url: str, url: str) -> None:
    name = url.rsplit("/", 1)[1].split("?")[0]
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def start_server(
    env: dict[str, str],
    port: int,
    workers: int,
    *,
    log_path: Path | None = None,
    ready_s: float = 120,
    code_dir: Path | None = None,
    module: str = "uvicorn",
) -> subprocess.Popen:
    """A uvicorn server of the service (``workers`` processes), once its /readyz answers 200.

    ``port``: held by the caller (:func:`bench.ports.reserved_port`) until this returns. With
    ``log_path`` its output goes there, and a server that exits shows the log's tail. With
    ``code_dir`` it runs that checkout's code (imported first), not this one's; ``module`` (a module
    or a script's path) runs uvicorn through a wrapper that takes its arguments
    (bench/profiled_uvicorn.py)."""
    launcher = [module] if module.endswith(".py") else ["-m", module]
    command = [
        sys.executable, *launcher, "app.main:create_app_from_env", "--factory",
        "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers), "--log-level", "warning",
    ]  # fmt: skip
    env = {**os.environ, **env}
    if code_dir is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code_dir), env.get("PYTHONPATH")]))
    else:
        prepare_calibration(env)
    if log_path is None:
        server = subprocess.Popen(command, env=env, cwd=code_dir)
    else:
        with log_path.open("wb") as log:
            server = subprocess.Popen(command, env=env, cwd=code_dir, stdout=log, stderr=subprocess.STDOUT)
    ready = http_ready(f"http://127.0.0.1:{port}/readyz")
    wait_ready(server, ready, what="the server", timeout_s=ready_s, log_path=log_path)
    return server


def prepare_calibration(env: dict[str, str]) -> None:
    """What `recloop serve` does before its workers start: `recloop prepare` on the server's data
    directory, which fits the offline agents' calibration if it is missing (a worker only reads it,
    and refuses to start without it). Seconds when it is there already."""
    command = [sys.executable, "-m", "cli", "prepare", "--no-parser"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)  # noqa: S603
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
        raise RuntimeError(f"`recloop prepare` failed before the server could start:\n{tail}")


@dataclass
class VariantServer:
    name: str
    database_url: str
    key: str
    port: int
    process: subprocess.Popen


def _load(server: VariantServer, concurrency: int, duration: float, args: argparse.Namespace) -> dict:
    command = [
        sys.executable, "-m", "bench.service_loadgen", "--url", f"http://127.0.0.1:{server.port}",
        "--key", server.key, "--concurrency", str(concurrency), "--duration", str(duration),
        "--warmup", str(args.warmup), "--max-rounds", str(args.max_rounds),
        "--server-pid", str(server.process.pid),
    ]  # fmt: skip
    done = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True)  # stderr passes through
    return json.loads(done.stdout.strip().splitlines()[-1])


_PREPARE = """
import sys
from app.db.migrate import migrate_all
from app.services.bootstrap import new_key
from app.settings import Settings
url, data_dir = sys.argv[1], sys.argv[2]
settings = Settings(data_dir=data_dir, database_url=url, _env_file=None)
migrate_all(url, settings.checkpoint_schema)
print(new_key(url, settings, owner="bench").secret)
"""


def _prepare_database(url: str, data_dir: Path, code_dir: Path | None) -> str:
    """Migrate the variant's database and create its key, with the variant's own code (another
    checkout's schema is the one its code was written for); the key's secret."""
    if code_dir is None:
        settings = Settings(data_dir=data_dir, database_url=url, _env_file=None)
        migrate_all(url, settings.checkpoint_schema)
        return new_key(url, settings, owner="bench").secret
    env = {**os.environ, "PYTHONPATH": str(code_dir)}
    done = subprocess.run(
        [sys.executable, "-c", _PREPARE, url, str(data_dir.resolve())],
        env=env, cwd=code_dir, check=True, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    return done.stdout.strip().splitlines()[-1]


def start_variant(
    name: str,
    server_url: str,
    data_dir: Path,
    args: argparse.Namespace,
    code_dir: Path | None = None,
    *,
    extra_env: dict[str, str] | None = None,
    module: str = "uvicorn",
    ready_s: float = 120,
) -> VariantServer:
    """The variant's server on a fresh database; ``code_dir``: another checkout's code (``NAME@DIRNAME``)."""
    url = _create_database(server_url)
    key = _prepare_database(url, data_dir, code_dir)
    env = {
        "RECLOOP_DATA_DIR": str(data_dir.resolve()),  # absolute: a --baseline server runs elsewhere
        "RECLOOP_DATABASE_URL": url,
        "RECLOOP_ACCEPT_TOP_K": str(args.accept_top_k),
        "RECLOOP_REWARD_MODEL": args.reward_model,
        # Every server keeps its grown pools while the others take their turn: size them so that
        # all of them fit in PostgreSQL's max_connections (100 by default).
        "RECLOOP_LOCK_POOL_SIZE": str(max(args.concurrency) // args.workers + 2),
        "RECLOOP_DB_POOL_SIZE": "3",
        "RECLOOP_CHECKPOINT_POOL_SIZE": "4",
        # One key sends every request: counted (the limiter's cost is measured), never refused.
        "RECLOOP_RATE_LIMIT_PER_MINUTE": "100000000",
        # Offline loops never steer: loading the text model at start-up would only burn CPU in the
        # first slices (seconds of it, counted as the loops' own).
        "RECLOOP_STEERING_WARMUP": "false",
        **VARIANTS[name],
        **(extra_env or {}),
    }
    label = name if code_dir is None else f"{name}@{code_dir.name}"
    try:
        with reserved_port() as port:
            process = start_server(env, port, args.workers, code_dir=code_dir, module=module, ready_s=ready_s)
    except BaseException:
        _drop_database(server_url, url)  # a server that never started leaves no database behind
        raise
    return VariantServer(label, url, key, port, process)


def stop_variant(server: VariantServer, server_url: str) -> None:
    server.process.terminate()
    server.process.wait(timeout=30)
    _drop_database(server_url, server.database_url)


def _merge_counts(counts) -> dict[str, int]:
    merged: dict[str, int] = {}
    for count in counts:
        for key, value in count.items():
            merged[key] = merged.get(key, 0) + value
    return merged


def _mean_per_loop(slices: list[dict], key: str) -> float | None:
    """A per-loop figure over all slices, each weighed by its requests."""
    pairs = [(s[key], s["requests"]) for s in slices if s.get(key) is not None and s["requests"]]
    loops = sum(n for _, n in pairs)
    return round(sum(v * n for v, n in pairs) / loops, 2) if loops else None


def aggregate(name: str, concurrency: int, workers: int, slices: list[dict]) -> dict:
    latencies = sorted(x for s in slices for x in s["latencies_ms"])
    rounds = [r for s in slices for r in s["rounds"]]
    seconds = sum(s["seconds"] for s in slices)
    cpu = [s["server_cpu_s"] for s in slices if s.get("server_cpu_s") is not None]
    loads = [x for s in slices for x in s.get("load_average", [])]
    return {
        "variant": name,
        "concurrency": concurrency,
        "workers": workers,
        "requests": len(latencies),
        "errors": sum(s["errors"] for s in slices),
        "error_statuses": _merge_counts(s.get("error_statuses", {}) for s in slices),
        "seconds": round(seconds, 2),
        "throughput_rps": round(len(latencies) / seconds, 2) if seconds else 0.0,
        "p50_ms": round(percentile(latencies, 0.50), 1),
        "p99_ms": round(percentile(latencies, 0.99), 1),
        "mean_rounds": round(statistics.fmean(rounds), 2) if rounds else 0.0,
        # The worker's CPU time over the recorded requests (all slices), and per slice.
        "cpu_ms_per_loop": round(1000 * sum(cpu) / len(latencies), 2) if cpu and latencies else None,
        "cpu_ms_per_loop_slices": [s.get("server_cpu_ms_per_loop") for s in slices],
        # Where the rest of the machine's cores went: every PostgreSQL process, and the load generator.
        "postgres_cpu_ms_per_loop": _mean_per_loop(slices, "postgres_cpu_ms_per_loop"),
        "client_cpu_ms_per_loop": _mean_per_loop(slices, "client_cpu_ms_per_loop"),
        "load_average": [min(loads), max(loads)] if loads else None,
        "worker_process_cpu_s": [s.get("worker_process_cpu_s") for s in slices],
    }


def measure(servers: list[VariantServer], args: argparse.Namespace, echo) -> list[dict]:
    """Variants take turns in short slices, so a load change on a shared machine hits them all alike."""
    results = []
    for concurrency in args.concurrency:
        slices: dict[str, list[dict]] = {s.name: [] for s in servers}
        for turn in range(args.slices):
            order = servers[turn % len(servers) :] + servers[: turn % len(servers)]
            for server in order:
                piece = _load(server, concurrency, args.duration / args.slices, args)
                slices[server.name].append(piece)
                echo(
                    f"{server.name} c={concurrency} slice {turn + 1}: {piece['throughput_rps']} req/s, "
                    f"{piece['server_cpu_ms_per_loop']} ms CPU/loop, load {piece['load_average']}"
                    + (
                        f", worker processes' CPU s {piece['worker_process_cpu_s']}"
                        if len(piece.get("worker_process_cpu_s") or ()) > 1
                        else ""
                    )
                )
        for server in servers:
            result = aggregate(server.name, concurrency, args.workers, slices[server.name])
            echo(json.dumps(result))
            results.append(result)
    return results


def markdown(results: list[dict]) -> str:
    lines = [
        "| checkpointer | concurrency | req/s | p50 ms | p99 ms | mean rounds | errors | vs memory "
        "| worker CPU ms/loop | PostgreSQL CPU ms/loop | load generator CPU ms/loop | load average |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    memory = {r["concurrency"]: r["throughput_rps"] for r in results if r["variant"] == "memory"}
    for r in results:
        ratio = (
            r["throughput_rps"] / memory[r["concurrency"]] if memory.get(r["concurrency"]) else float("nan")
        )
        cpu, postgres, client = (
            "" if r.get(key) is None else f"{r[key]:.1f}"
            for key in ("cpu_ms_per_loop", "postgres_cpu_ms_per_loop", "client_cpu_ms_per_loop")
        )
        load = r.get("load_average") or []
        lines.append(
            f"| {r['variant']} | {r['concurrency']} | {r['throughput_rps']:.1f} | {r['p50_ms']:.1f} | "
            f"{r['p99_ms']:.1f} | {r['mean_rounds']:.2f} | {r['errors']} | {ratio:.2f} | {cpu} | "
            f"{postgres} | {client} | {'-'.join(f'{x:.1f}' for x in load)} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--database-url",
        default=os.environ.get("RECLOOP_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"),
        help="A server where the benchmark may create and drop databases.",
    )
    parser.add_argument(
        "--fsync-delay-ms",
        type=float,
        default=None,
        help="Run against a private PostgreSQL whose fsyncs take this much longer (bench/slow_disk.py): "
        "how the service fares where disk flushes are slow.",
    )
    parser.add_argument("--variants", nargs="+", choices=sorted(VARIANTS), default=["postgres", "memory"])
    parser.add_argument("--concurrency", nargs="+", type=int, default=[1, 32])
    parser.add_argument("--duration", type=float, default=30.0, help="Seconds per variant and concurrency.")
    parser.add_argument("--slices", type=int, default=3, help="Turns the variants take within the duration.")
    parser.add_argument(
        "--warmup", type=float, default=2.0, help="Seconds of unrecorded requests before each slice."
    )
    parser.add_argument("--max-rounds", type=int, default=4)
    parser.add_argument(
        "--accept-top-k", type=int, default=1, help="Offline user agent's acceptance bar (low: more rounds)."
    )
    parser.add_argument(
        "--reward-model", default="gru4rec", help="A reward model other than the rec model disagrees more."
    )
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--baseline",
        type=Path,
        nargs="+",
        default=[],
        help="Other checkouts (e.g. a worktree of main): their code also serves, in turns with the others.",
    )
    parser.add_argument("--baseline-variants", nargs="+", choices=sorted(VARIANTS), default=["postgres"])
    parser.add_argument(
        "--ready-s", type=float, default=120, help="How long a server may take to start (a busy machine)."
    )
    parser.add_argument("--out", type=Path, default=Path("reports/bench_service.json"))
    args = parser.parse_args()
    if args.workers > 1 and "memory" in args.variants:
        # Each worker would have its own in-memory threads, and sessions would fork between them.
        parser.error("the memory variant runs in one process only: use --workers 1 for it")

    def echo(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    settings = Settings()
    data_dir = _bench_data_dir(settings, (settings.rec_model, args.reward_model), echo)
    with ExitStack() as stack:
        if args.fsync_delay_ms is not None:
            args.database_url = stack.enter_context(slow_fsync_server(args.fsync_delay_ms))
        commit = commit_ms(args.database_url)
        echo(f"one durable commit on this server: {commit:.2f} ms")
        servers: list[VariantServer] = []
        try:
            for name in args.variants:
                echo(f"starting {name} ...")
                servers.append(start_variant(name, args.database_url, data_dir, args, ready_s=args.ready_s))
            for baseline in args.baseline:
                for name in args.baseline_variants:
                    echo(f"starting {name} from {baseline} ...")
                    servers.append(
                        start_variant(
                            name, args.database_url, data_dir, args, baseline.resolve(), ready_s=args.ready_s
                        )
                    )
            results = measure(servers, args, echo)
        finally:
            for server in servers:
                stop_variant(server, args.database_url)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {"args": {k: str(v) for k, v in vars(args).items()}, "commit_ms": commit, "results": results},
            indent=2,
        )
    )
    print(f"one durable commit: {commit:.2f} ms")
    print(markdown(results))


if __name__ == "__main__":
    main()
