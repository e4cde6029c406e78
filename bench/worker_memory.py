"""What a serving worker's start-up costs, component by component, in one process: RSS and seconds.

Does what the app's lifespan does (app/main.py, app/services/runtime.py ``open_worker``, the steering
and title-index warm-ups) without a database or a server, one component at a time, and prints
the resident memory each one added (``/proc/self/status``: VmRSS, its anonymous and file-backed
parts) and how long it took; then the per-request work at this catalog size (full-catalog top-k,
one offline loop as the service runs it, a steered plan under a genre constraint, a title search),
as medians.

    python -m bench.worker_memory --dataset syn1m --json

Needs a trained rec model for the dataset (``recloop train``). The offline agents' calibration is
read when ``recloop prepare`` fitted one; otherwise (``--similarity`` says which item vectors the
agents read) an uncalibrated one stands in, which costs the same memory. Run it under ``nice`` on a
shared box: it is one heavy process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from app.services import steering as steering_service
from app.services.runtime import load_scorers
from app.services.steering_models import SteeringModels
from app.services.title_search import search_items, title_index
from app.settings import Settings
from graph.agents.evidence import LoopCalibration
from graph.caches import LoopCaches
from graph.calibration import CalibrationMissing
from graph.deps import make_deps
from graph.runner import LoopRunner
from recmodels.dataset import Dataset
from steering.planner import steer_candidates
from steering.preferences import Preferences, Side
from steering.tools import attribute_index


def memory() -> dict[str, float]:
    """This process's resident memory in MB: total, anonymous (its own) and file-backed (mapped)."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields


class Components:
    """Runs steps in order and records each one's seconds and RSS delta."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def step(self, name: str, run: Callable[[], Any]) -> Any:
        before, started = memory(), time.perf_counter()
        result = run()
        seconds, after = time.perf_counter() - started, memory()
        row = {
            "component": name,
            "seconds": round(seconds, 3),
            "rss_mb": round(after["VmRSS"], 1),
            "delta_mb": round(after["VmRSS"] - before["VmRSS"], 1),
            "delta_anon_mb": round(after["RssAnon"] - before["RssAnon"], 1),
            "delta_file_mb": round(after["RssFile"] - before["RssFile"], 1),
        }
        self.rows.append(row)
        print(
            f"{name:<32} {row['seconds']:>8.2f} s  rss {row['rss_mb']:>7.1f} MB  "
            f"+{row['delta_mb']:>7.1f} (anon {row['delta_anon_mb']:+.1f}, file {row['delta_file_mb']:+.1f})",
            flush=True,
        )
        return result


def median_ms(run: Callable[[], Any], repeats: int) -> float:
    run()  # the first call may build what later ones reuse
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 2)


def measure(settings: Settings, similarity: str, repeats: int) -> dict[str, Any]:
    torch.set_num_threads(settings.torch_threads)
    steps = Components()
    steps.step("baseline (imports)", lambda: None)
    catalog = Dataset.open(settings.datasets_dir, settings.dataset)
    steps.step("catalog items", lambda: catalog.items)
    rec, reward = steps.step("rec + reward models", lambda: load_scorers(settings, catalog))
    caches = LoopCaches()

    def offline_deps() -> Any:
        try:
            return asyncio.run(make_deps(settings.loop_config(), catalog, rec, reward, caches=caches))
        except CalibrationMissing:
            stand_in = LoopCalibration(rec_similarity=similarity, user_similarity=similarity)
            return asyncio.run(
                make_deps(settings.loop_config(), catalog, rec, reward, calibration=stand_in, caches=caches)
            )

    deps = steps.step("loop deps (offline agents)", offline_deps)
    models = SteeringModels(settings, catalog, rec)
    steps.step("steering attribute index", lambda: attribute_index(catalog))
    parser = steps.step("steering parser", lambda: steering_service.session_parser(models))
    command = f"no horror, more like {catalog.title(0)}"  # the first command builds the catalog tables

    def parse() -> Any:
        return asyncio.run(parser.parse(command, memory=Preferences(), recommendations=[]))

    steps.step("steering parser, first command", parse)
    steps.step("steering similarity", lambda: steering_service._similarity(models, rec))
    steps.step("title index", lambda: title_index(catalog))

    history = [(k * 997) % catalog.n_items for k in range(1, 11)]
    genre = sorted({g for i in range(min(100, catalog.n_items)) for g in catalog.item(i).genres})[:1]
    wanted = Preferences(positive=Side(genres=genre)) if genre else Preferences()
    runner = LoopRunner()  # the service's graph on no saver: the loop's own work
    requests = {
        "top_k_20_ms": median_ms(lambda: rec.top_k(history, settings.n_candidates), repeats),
        "offline_loop_ms": median_ms(lambda: asyncio.run(runner.run(deps, history)), repeats),
        "steered_plan_ms": median_ms(
            lambda: steer_candidates(wanted, history, rec, catalog, settings.n_candidates), repeats
        ),
        "parse_ms": median_ms(parse, repeats),
        "search_ms": median_ms(lambda: search_items(catalog, "the", 20), repeats),
    }
    print(json.dumps(requests), flush=True)
    return {
        "dataset": settings.dataset,
        "n_items": catalog.n_items,
        "similarity": {"rec": deps.calibration.rec_similarity, "user": deps.calibration.user_similarity},
        "steering_similarity": models.similarities and next(iter(models.similarities.values())).name,
        "components": steps.rows,
        "peak_rss_mb": round(memory()["VmHWM"], 1),
        "requests": requests,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument(
        "--similarity",
        default="collaborative",
        choices=("none", "collaborative", "text"),
        help="Item vectors the agents read when no fitted calibration exists.",
    )
    parser.add_argument(
        "--steering-similarity", default="collaborative", choices=("auto", "text", "collaborative")
    )
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--json", action="store_true", help="Print the result as one JSON line last.")
    args = parser.parse_args(argv)
    settings = Settings(
        dataset=args.dataset, steering_similarity=args.steering_similarity, steering_parser="offline"
    )
    result = measure(settings, args.similarity, args.repeats)
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
