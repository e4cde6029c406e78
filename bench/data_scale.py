"""How recloop's cost grows with the catalog and the log (issue 45 item 2), each figure beside the
same figure on MovieLens-100k, taken in the same run.

    python -m bench.data_scale --items 10000 --interactions 100000 --json    # one size
    python -m bench.data_scale                                            # the issue's grid (hours)
    python -m bench.data_scale --movielens DIR ...   # MovieLens from a local copy (default: fetched)

For each dataset (a synthetic one from `recloop data build synthetic`, and MovieLens) every stage
runs as its own child process, through the commands a user runs, so that its wall time and its
peak RSS (the child's ``ru_maxrss`` from ``wait4``) are its own:

- **build**: `recloop data build synthetic` (MovieLens: `recloop data fetch movielens`, or
  `recloop data import` for a LLaRA copy; obtaining the raw files is part of it);
- **train**, per model: `recloop train --epochs 1 --max-train-rows R --no-preset` (the same model
  config on both datasets). Throughput is the training rows over the epoch's own seconds (the
  batches only: loading, validation and saving are not in it); the peak RSS is the whole
  process's. A capped slice, not training to convergence: rows/s is all it is for;
- **prepare**: `recloop prepare --no-parser` (the offline agents' calibration on those models);
- **serve**: `recloop serve --no-migrate --no-prepare` on a fresh migrated database; ``ready_s``
  is the time from its start to ``/readyz`` answering 200;
- **http**, one request at a time through real HTTP: the first steering command (it waits for
  the start-up warm-up of the similarity, so it is reported on its own), then p50/p99 of a
  recommendation (offline agents, 4 rounds at most, the rec model's own candidates), a steering
  command (natural commands, the default parser), a catalog search and the sessions page; the
  worker's RSS (VmRSS of the serving process, which is the worker with one worker) after them.

A stage that fails or outlives ``--stage-timeout-s`` is reported as such: its figures are null
and ``errors`` says why; the stages that need it are skipped, and say so. The last line of
``--json`` is one JSON object: the contract keys (``CONTRACT_KEYS``) and more, each figure of
MovieLens under the same key with ``_movielens`` appended. Without ``--items`` the grid runs and
``--out`` gets results.json, report.md and data_scale.png (cost against size, log-log).
Synthetic data says nothing about accuracy: only cost is measured here.
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
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.child_runs import (
    ChildRun,
    Progress,
    StageFailed,
    Timed,
    checked,
    last_json_line,
    proc_status_mb,
    run_child,
    settle,
)
from bench.data_scale_report import MOVIELENS_SUFFIX, markdown_table, write_report
from bench.ports import http_ready, reserved_port, wait_ready
from bench.scale_common import DEFAULT_SERVER, create_database, drop_database
from bench.scale_queries import catalog_sample, natural_commands, search_queries

CONTRACT_KEYS = (
    "items",
    "interactions",
    "build_s",
    "build_peak_rss_mb",
    "train_rows_per_s",
    "train_rows_per_s_movielens",
    "train_peak_rss_mb",
    "worker_rss_mb",
    "recommend_p50_ms",
    "recommend_p50_ms_movielens",
    "command_p50_ms",
    "command_p50_ms_movielens",
    "search_p50_ms",
    "ready_s",
)
# Every figure taken per dataset; the MovieLens one is the same key + MOVIELENS_SUFFIX.
FIGURES = (
    "build_s",
    "build_peak_rss_mb",
    "train_rows_per_s",
    "train_peak_rss_mb",
    "prepare_s",
    "prepare_peak_rss_mb",
    "ready_s",
    "worker_rss_mb",
    "worker_peak_rss_mb",
    "command_first_ms",
    "recommend_p50_ms",
    "recommend_p99_ms",
    "command_p50_ms",
    "command_p99_ms",
    "search_p50_ms",
    "search_p99_ms",
    "sessions_p50_ms",
    "sessions_p99_ms",
)
GRID_ITEMS = (10_000, 100_000, 1_000_000)
GRID_INTERACTIONS = (1_000_000, 10_000_000)
DEFAULT_MODELS = ("sasrec", "gru4rec", "caser")
INTERACTIONS_PER_USER = 100  # MovieLens-100k has ~106: users = interactions / this by default
MOVIELENS = "movielens"
SYNTHETIC = "synthetic"

# --- one dataset's stages ---------------------------------------------------------------------------


@dataclass
class Options:
    models: tuple[str, ...]
    serve_model: str
    train_rows: int
    requests: int
    stage_timeout_s: float
    database_url: str
    seed: int


@dataclass
class DatasetRun:
    """One dataset's data dir, figures and stage errors."""

    label: str
    dataset: str
    data_dir: Path
    figures: dict[str, Any] = field(default_factory=lambda: dict.fromkeys(FIGURES))
    train_models: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def env(self, options: Options, **more: str) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith("RECLOOP_")}
        return {
            **base,
            "RECLOOP_DATA_DIR": str(self.data_dir),
            "RECLOOP_DATASET": self.dataset,
            "RECLOOP_REC_MODEL": options.serve_model,
            "RECLOOP_REWARD_MODEL": options.serve_model,
            **more,
        }


def cli_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "cli", *args]


def stage(run: DatasetRun, name: str, progress: Progress, action: Callable[[], None]) -> bool:
    """Run one stage; a failure is recorded (figures stay null), never raised. True if it ran."""
    progress.say(f"[{run.label}] {name} ...")
    started = time.monotonic()
    try:
        action()
    except StageFailed as exc:
        run.errors[name] = str(exc)
    except Exception as exc:  # a bug or an outage in one stage must not lose the others' figures
        run.errors[name] = f"{type(exc).__name__}: {exc}"
    took = time.monotonic() - started
    if name in run.errors:
        progress.say(f"[{run.label}] {name} FAILED after {took:.0f} s: {run.errors[name]}")
        return False
    progress.say(f"[{run.label}] {name} done in {took:.1f} s")
    return True


def _stage(
    run: DatasetRun, command: list[str], label: str, options: Options, progress: Progress, *, log: str = ""
) -> ChildRun:
    """Run one stage's command (its log under the run's logs/, ``label`` on the progress line),
    raising StageFailed if it fails or passes the stage timeout."""
    done = run_child(
        command,
        env=run.env(options),
        log_path=run.data_dir / "logs" / f"{log or label}.log",
        timeout_s=options.stage_timeout_s,
        tick=progress.ticker(label),
    )
    return checked(done, label, options.stage_timeout_s)


def build_stage(run: DatasetRun, command: list[str], options: Options, progress: Progress) -> None:
    done = _stage(run, command, "build", options, progress)
    run.figures["build_s"], run.figures["build_peak_rss_mb"] = done.seconds, done.peak_rss_mb
    meta = json.loads((run.data_dir / "datasets" / run.dataset / "meta.json").read_text())
    run.extra["n_items"] = meta["n_items"]
    run.extra["train_split_rows"] = meta["split_rows"]["train"]


def train_stage(run: DatasetRun, model: str, options: Options, progress: Progress) -> None:
    command = cli_command(
        "train", "--dataset", run.dataset, "--model", model, "--epochs", "1",
        "--max-train-rows", str(options.train_rows), "--no-preset", "--no-progress",
        "--seed", str(options.seed),
    )  # fmt: skip
    done = _stage(run, command, f"train {model}", options, progress, log=f"train-{model}")
    summary = last_json_line(done.output)
    rows, epoch_s = summary["train_rows"], summary["seconds_per_epoch"]
    run.train_models[model] = {
        "rows_per_s": round(rows / epoch_s, 1),
        "peak_rss_mb": done.peak_rss_mb,
        "train_rows": rows,
        "epoch_s": round(epoch_s, 2),
        "process_s": done.seconds,  # loading, the epoch, validation and saving
    }
    if model == options.serve_model:
        run.figures["train_rows_per_s"] = run.train_models[model]["rows_per_s"]
        run.figures["train_peak_rss_mb"] = done.peak_rss_mb


def prepare_stage(run: DatasetRun, options: Options, progress: Progress) -> None:
    done = _stage(run, cli_command("prepare", "--no-parser", "--json"), "prepare", options, progress)
    run.figures["prepare_s"], run.figures["prepare_peak_rss_mb"] = done.seconds, done.peak_rss_mb


@contextlib.contextmanager
def served(run: DatasetRun, options: Options, progress: Progress) -> Iterator[tuple[str, str, int]]:
    """`recloop serve --no-migrate --no-prepare` (one worker: the serving process itself) on a fresh
    migrated database with a new key; yields (base URL, key, pid) once /readyz answers, having
    recorded ``ready_s``."""
    from app.services.bootstrap import new_key
    from app.settings import Settings

    url = create_database(options.database_url)
    try:
        settings = Settings(data_dir=run.data_dir, database_url=url, _env_file=None)
        key = new_key(url, settings, owner="bench").secret
        env = run.env(
            options,
            RECLOOP_DATABASE_URL=url,
            RECLOOP_RATE_LIMIT_PER_MINUTE="100000000",  # one key sends every request
        )
        log_path = run.data_dir / "logs" / "serve.log"
        with reserved_port() as port:
            command = cli_command(
                "serve", "--host", "127.0.0.1", "--port", str(port), "--no-migrate", "--no-prepare"
            )
            started = time.monotonic()
            with log_path.open("ab") as log:
                server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
            try:
                base = f"http://127.0.0.1:{port}"
                try:
                    wait_ready(
                        server,
                        http_ready(f"{base}/readyz"),
                        what="recloop serve",
                        timeout_s=options.stage_timeout_s,
                        log_path=log_path,
                        poll_s=0.1,
                    )
                except RuntimeError as exc:
                    raise StageFailed(str(exc)[:600]) from exc
                run.figures["ready_s"] = round(time.monotonic() - started, 2)
                yield base, key, server.pid
            finally:
                server.terminate()
                try:
                    server.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    server.kill()
                    server.wait()
    finally:
        drop_database(options.database_url, url)


def http_stage(run: DatasetRun, base: str, key: str, pid: int, options: Options, progress: Progress) -> None:
    sample = catalog_sample(run.data_dir / "datasets" / run.dataset)
    if not sample.histories or not sample.titles:
        raise StageFailed("the dataset has no test history or no titled item to make requests from")
    n = options.requests
    deadline = time.monotonic() + options.stage_timeout_s
    timeout = httpx.Timeout(options.stage_timeout_s, connect=10)
    headers = {"Authorization": f"Bearer {key}"}
    histories = iter(sample.histories * (4 * n // len(sample.histories) + 2))
    commands = natural_commands(sample, n, options.seed)
    with httpx.Client(base_url=base, headers=headers, timeout=timeout) as client:

        def new_session() -> str:
            created = client.post("/v1/sessions", json={"user_id": "bench", "history": next(histories)})
            created.raise_for_status()
            return created.json()["id"]

        # The first command may wait for the start-up warm-up of the parser's catalog tables (seconds
        # at 10^6 items; never for the text model, which only a soft command needs): timed on its own.
        first = Timed("first command", deadline)
        answer = first.call(
            lambda: client.post(f"/v1/sessions/{new_session()}/commands", json={"text": "no horror"})
        )
        run.figures["command_first_ms"] = first.p(0.5)
        if answer is not None:
            run.extra["command_parser"] = answer.json().get("parser")
        # The catalog's warm-up (its title index, app/main.py) starts after steering's and may still
        # run (seconds at 10^6 items): requests timed beside it measured the warm-up, not the worker.
        settled_s = settle(pid, timeout_s=min(300.0, options.stage_timeout_s))
        run.extra["warm_up_s_after_first_command"] = settled_s
        progress.say(
            f"[{run.label}]   first command {first.p(0.5)} ms; idle {settled_s} s later; recommendations ..."
        )

        recommend, rounds = Timed("recommend", deadline), []
        for i in range(n + 2):  # two unrecorded: the first loops' lazy loading
            session = new_session()
            answer = recommend.call(
                lambda s=session: client.post(f"/v1/sessions/{s}/recommendations", json={"max_rounds": 4})
            )
            if i < 2 and answer is not None:
                recommend.ms.pop()
            elif answer is not None:
                rounds.append(len(answer.json()["rounds"]))
        progress.say(f"[{run.label}]   recommend p50 {recommend.p(0.5)} ms; commands ...")

        command = Timed("command", deadline)
        for text in commands:
            session = new_session()
            command.call(
                lambda s=session, t=text: client.post(f"/v1/sessions/{s}/commands", json={"text": t})
            )
        search = Timed("search", deadline)
        for query in search_queries(sample, n, options.seed):
            search.call(lambda q=query: client.get("/v1/items", params={"q": q}))
        sessions = Timed("sessions page", deadline)
        for _ in range(n):
            sessions.call(lambda: client.get("/v1/sessions", params={"limit": 25}))

    run.figures["worker_rss_mb"] = proc_status_mb(pid, "VmRSS")
    run.figures["worker_peak_rss_mb"] = proc_status_mb(pid, "VmHWM")
    run.extra["mean_rounds"] = round(statistics.fmean(rounds), 2) if rounds else None
    for name, timed in (
        ("recommend", recommend),
        ("command", command),
        ("search", search),
        ("sessions", sessions),
    ):
        run.figures[f"{name}_p50_ms"], run.figures[f"{name}_p99_ms"] = timed.p(0.5), timed.p(0.99)
        run.extra[f"{name}_requests"] = len(timed.ms)
        if timed.errors:
            run.errors[f"http {name}"] = f"non-2xx or failed requests: {timed.errors}"


def measure_dataset(run: DatasetRun, build_command: list[str], options: Options, progress: Progress) -> None:
    """Every stage in order; a stage whose input is missing is skipped and says so."""
    if run.data_dir.exists():
        shutil.rmtree(run.data_dir / "datasets", ignore_errors=True)  # a fresh build; downloads kept
        shutil.rmtree(run.data_dir / "models", ignore_errors=True)
    if not stage(run, "build", progress, lambda: build_stage(run, build_command, options, progress)):
        run.errors["train"] = run.errors["serve"] = "skipped: the build failed"
        return
    for model in options.models:
        stage(run, f"train {model}", progress, lambda m=model: train_stage(run, m, options, progress))
    if options.serve_model not in run.train_models:
        # Without its artifact `prepare` would train it to convergence: not what is measured.
        run.errors["serve"] = f"skipped: {options.serve_model} did not train"
        return
    if not stage(run, "prepare", progress, lambda: prepare_stage(run, options, progress)):
        run.errors["serve"] = "skipped: prepare failed"
        return

    def serve_and_request() -> None:
        with served(run, options, progress) as (base, key, pid):
            progress.say(f"[{run.label}]   /readyz after {run.figures['ready_s']} s")
            http_stage(run, base, key, pid, options, progress)

    stage(run, "serve", progress, serve_and_request)


def movielens_build_command(source: Path | None) -> list[str]:
    """`recloop data fetch movielens` (its download cache, GroupLens, the RecBole wheel; or
    ``--from-dir`` with u.data and u.item), or `recloop data import` for a LLaRA copy (items.csv)."""
    if source is not None and (source / "items.csv").is_file():
        return cli_command("data", "import", str(source), "--name", MOVIELENS)
    extra = ["--from-dir", str(source)] if source is not None else []
    return cli_command("data", "fetch", MOVIELENS, *extra)


def synthetic_build_command(items: int, interactions: int, users: int, seed: int) -> list[str]:
    return cli_command(
        "data", "build", "synthetic", "--items", str(items), "--users", str(users),
        "--interactions", str(interactions), "--seed", str(seed), "--name", SYNTHETIC, "--force",
    )  # fmt: skip


def default_users(interactions: int) -> int:
    return max(10, interactions // INTERACTIONS_PER_USER)


# --- results ----------------------------------------------------------------------------------------


def size_result(
    items: int, interactions: int, users: int, synthetic: DatasetRun, movielens: DatasetRun
) -> dict:
    """One size's JSON object: the contract keys first, then the rest; MovieLens' figures carry
    ``_movielens``. Every figure key is present, null where its stage failed."""
    result: dict[str, Any] = {"items": items, "interactions": interactions, "users": users}
    for key in FIGURES:
        result[key] = synthetic.figures.get(key)
        result[key + MOVIELENS_SUFFIX] = movielens.figures.get(key)
    result["train_models"] = synthetic.train_models
    result["train_models" + MOVIELENS_SUFFIX] = movielens.train_models
    result.update(synthetic.extra)
    result.update({k + MOVIELENS_SUFFIX: v for k, v in movielens.extra.items()})
    result["errors"] = synthetic.errors
    result["errors" + MOVIELENS_SUFFIX] = movielens.errors
    ordered = {k: result[k] for k in CONTRACT_KEYS}
    return ordered | {k: v for k, v in result.items() if k not in ordered}


# --- entry point ------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.data_scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=None, help="One catalog size (with --interactions).")
    parser.add_argument("--interactions", type=int, default=None, help="One log size (with --items).")
    parser.add_argument(
        "--users",
        type=int,
        default=None,
        help=f"Default: interactions / {INTERACTIONS_PER_USER} (MovieLens-like).",
    )
    parser.add_argument("--json", action="store_true", help="Print one JSON object last.")
    parser.add_argument(
        "--movielens",
        type=Path,
        default=None,
        help="MovieLens from a local copy: a directory with u.data and u.item, or a LLaRA copy (items.csv "
        "and the split JSONL). Default: `recloop data fetch movielens` (download cache, GroupLens, RecBole "
        "wheel).",
    )
    parser.add_argument(
        "--models", nargs="+", default=list(DEFAULT_MODELS), help="Models whose training is timed."
    )
    parser.add_argument(
        "--serve-model",
        default="sasrec",
        help="The rec and reward model served (trained if not in --models).",
    )
    parser.add_argument(
        "--train-rows", type=int, default=20_000, help="Training rows per timed epoch (a capped slice)."
    )
    parser.add_argument("--requests", type=int, default=100, help="Timed requests of each kind.")
    parser.add_argument(
        "--stage-timeout-s", type=float, default=3600.0, help="A stage running longer is killed and reported."
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "recloop-data-scale",
        help="The benchmark's own data dirs, rebuilt each run (never a data dir you use: its datasets and "
        "models are deleted); MovieLens' download cache is kept there.",
    )
    parser.add_argument(
        "--keep", action="store_true", help="Keep the synthetic datasets and models afterwards."
    )
    parser.add_argument("--out", type=Path, default=Path("reports/data_scale"), help="Report directory.")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("RECLOOP_BENCH_DATABASE_URL", DEFAULT_SERVER),
        help="A PostgreSQL server where the benchmark may create and drop databases.",
    )
    args = parser.parse_args(argv)
    if (args.items is None) != (args.interactions is None):
        parser.error("--items and --interactions go together (neither: the issue's grid)")
    for name in ("items", "interactions", "users", "train_rows", "requests"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def sizes(args: argparse.Namespace) -> list[tuple[int, int]]:
    if args.items is not None:
        return [(args.items, args.interactions)]
    return [(items, interactions) for interactions in GRID_INTERACTIONS for items in GRID_ITEMS]


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    progress = Progress()
    models = tuple(dict.fromkeys([*args.models, args.serve_model]))
    options = Options(
        models=models,
        serve_model=args.serve_model,
        train_rows=args.train_rows,
        requests=args.requests,
        stage_timeout_s=args.stage_timeout_s,
        database_url=args.database_url,
        seed=args.seed,
    )
    work = args.work_dir.resolve()
    load_before = round(os.getloadavg()[0], 1)  # a shared machine: the load says what the figures are worth
    movielens = DatasetRun("MovieLens", MOVIELENS, work / "movielens")
    measure_dataset(movielens, movielens_build_command(args.movielens), options, progress)
    results = []
    for items, interactions in sizes(args):
        users = args.users or default_users(interactions)
        label = f"{items:,} items, {interactions:,} interactions"
        synthetic = DatasetRun(label, SYNTHETIC, work / f"items{items}-interactions{interactions}")
        measure_dataset(
            synthetic, synthetic_build_command(items, interactions, users, args.seed), options, progress
        )
        results.append(size_result(items, interactions, users, synthetic, movielens))
        if not args.keep:
            shutil.rmtree(synthetic.data_dir, ignore_errors=True)
    meta = {
        "cpus": os.cpu_count(),
        "load_average_1m": f"{load_before}-{round(os.getloadavg()[0], 1)} (start-end)",
        "models": ",".join(models),
        "train_rows": args.train_rows,
        "requests": args.requests,
    }
    report = write_report(results, args.out, meta)
    progress.say(f"report: {report}")
    print(markdown_table(results))
    if args.json:
        print(json.dumps(results[0] if len(results) == 1 else {"meta": meta, "results": results}))


if __name__ == "__main__":
    main()
