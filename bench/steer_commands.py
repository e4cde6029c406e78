"""A steering command's parse and plan in one process, as a warmed worker makes them: p50/p99 per
catalog, and a hash of every answer (the parse, the memory, the plan's ranking with its scores).

    python -m bench.steer_commands --data-dir DIR --datasets movielens syn1m --json

Builds what a worker's start-up builds (app/services/steering.py ``warm_up``: the steering look-up,
the rule parser and its tables, the collaborative similarity), then reads ~40 commands made from
the catalog's own genres, years and titles (bench.scale_queries' templates and more), each on a
fresh memory, for several histories. The hash is what a change of the planner must keep: the same
hash before and after means the same answers, float for float. Run it under ``nice`` on a shared box.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import random
import statistics
import time
from pathlib import Path
from typing import Any

import torch

from app.services import steering as steering_service
from app.services.runtime import load_scorers
from app.services.steering_models import SteeringModels
from app.settings import Settings
from bench.scale_queries import COMMAND_TEMPLATES, catalog_sample
from recmodels.dataset import Dataset
from steering.preferences import Preferences, consolidate

MORE_TEMPLATES = (
    "no {genre} and nothing from the {decade}s",
    "something like {title} but not {genre}",
    "more like {title}, less like {title2}",
    "not like {title}",
    "{genre} from before {year}",
    "no {genre}, no {genre2}",
    "something cheerful",
    "something like {title} from after {year}",
)


def commands(dataset_dir: Path, n: int, seed: int) -> list[str]:
    sample = catalog_sample(dataset_dir)
    rng = random.Random(seed)
    templates = COMMAND_TEMPLATES + MORE_TEMPLATES
    genres = sample.genres or ["drama"]
    texts = []
    for i in range(n):
        genre, genre2 = rng.sample(genres, 2) if len(genres) > 1 else (genres[0], genres[0])
        year = rng.choice(sample.years or [1990])
        title, title2 = rng.sample(sample.titles, 2)
        texts.append(
            templates[i % len(templates)].format(
                genre=genre.lower(),
                genre2=genre2.lower(),
                title=title,
                title2=title2,
                year=year,
                decade=year // 10 * 10,
            )
        )
    return texts


def plan_answer(models: SteeringModels, preferences: Preferences, history: list[int]) -> Any:
    """What the service's ``_plan`` computes, with the scores of the ranking kept for the hash."""
    if preferences.is_empty():
        return models.rec_scorer.top_k(history, models.settings.n_candidates)
    plan = steering_service.steered_plan(models, preferences, history)
    return [plan.tools, plan.pool_size, plan.after_filter, plan.skipped_soft, [repr(r) for r in plan.ranked]]


def measure(settings: Settings, n_commands: int, n_histories: int, seed: int) -> dict[str, Any]:
    torch.set_num_threads(settings.torch_threads)
    catalog = Dataset.open(settings.datasets_dir, settings.dataset)
    rec, _reward = load_scorers(settings, catalog)
    models = SteeringModels(settings, catalog, rec)
    started = time.perf_counter()
    asyncio.run(steering_service.warm_up(models))
    warm_s = time.perf_counter() - started
    parser = steering_service.session_parser(models)
    texts = commands(settings.datasets_dir / settings.dataset, n_commands, seed)
    histories = catalog_sample(settings.datasets_dir / settings.dataset).histories[:n_histories]
    digest = hashlib.sha256()
    times: list[float] = []
    parse_times: list[float] = []
    for text in texts:
        for history in histories:
            started = time.perf_counter()
            parse = asyncio.run(parser.parse(text, memory=Preferences(), recommendations=history[-10:]))
            parse_times.append((time.perf_counter() - started) * 1000)
            preferences = consolidate(Preferences(), parse.update)
            items = steering_service._plan(models, preferences, history)
            times.append((time.perf_counter() - started) * 1000)
            answer = [text, parse.update.model_dump(mode="json"), preferences.model_dump(mode="json"), items]
            answer.append(plan_answer(models, preferences, history))
            digest.update(json.dumps(answer, sort_keys=True).encode())
    times.sort()
    return {
        "dataset": settings.dataset,
        "n_items": catalog.n_items,
        "warm_up_s": round(warm_s, 1),
        "commands": len(texts),
        "requests": len(times),
        "p50_ms": round(statistics.median(times), 1),
        "p99_ms": round(times[min(len(times) - 1, int(0.99 * len(times)))], 1),
        "max_ms": round(times[-1], 1),
        "parse_p50_ms": round(statistics.median(parse_times), 1),
        "hash": digest.hexdigest()[:16],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--datasets", nargs="+", default=["movielens"])
    parser.add_argument("--commands", type=int, default=40)
    parser.add_argument("--histories", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="Print the results as one JSON line last.")
    args = parser.parse_args(argv)
    results = []
    for name in args.datasets:
        settings = Settings(
            data_dir=args.data_dir,
            dataset=name,
            steering_similarity="collaborative",
            steering_parser="offline",
        )
        result = measure(settings, args.commands, args.histories, args.seed)
        print(json.dumps(result), flush=True)
        results.append(result)
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
