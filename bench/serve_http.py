"""A serving worker over HTTP on datasets whose models are already trained: ``/readyz`` seconds, the
worker's RSS and the p50/p99 of recommendations, commands and searches, each dataset in turn in
one run (the same requests as ``bench.data_scale``'s serve stage, which it reuses), sent once the
worker is idle after its start-up warm-ups (``warm_up_s_after_ready``), so they time a warmed worker.

    python -m bench.serve_http --data-dir DIR --datasets movielens syn1m --json

Unlike ``bench.data_scale`` it builds, trains and prepares nothing: each dataset under ``DIR`` needs
its trained ``--model``. ``--stand-in-calibration`` writes, for measurement only, the offline agents'
calibration a fit would write when it is missing (uncalibrated parameters reading the reward model's
collaborative item vectors, which costs the memory a fitted one of that kind costs), for catalogs
where `recloop prepare` does not finish yet; the report says so.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.child_runs import Progress, StageFailed, settle
from bench.data_scale import DatasetRun, Options, http_stage, served
from bench.scale_common import DEFAULT_SERVER


@dataclass
class ServedRun(DatasetRun):
    """A dataset run whose worker also gets ``worker_env`` (DatasetRun passes no RECLOOP_ variable
    of this process on)."""

    worker_env: dict[str, str] = field(default_factory=dict)

    def env(self, options: Options, **more: str) -> dict[str, str]:
        return super().env(options, **self.worker_env, **more)


def write_stand_in_calibration(data_dir: Path, dataset: str, model: str) -> None:
    """The calibration file the worker requires, uncalibrated with collaborative item vectors."""
    from graph.agents.evidence import LoopCalibration
    from graph.calibration import calibration_key, calibration_path
    from graph.item_vectors import available_backends
    from lab.calibration.offline import write_keyed
    from recmodels.artifacts import load_latest_scorer
    from recmodels.dataset import Dataset

    catalog = Dataset.open(data_dir / "datasets", dataset)
    scorer = load_latest_scorer(data_dir / "models", catalog, model)
    path = calibration_path(scorer, scorer)
    if path is None:
        raise RuntimeError(f"{dataset}: the {model} artifact has no path to write a calibration beside")
    stand_in = LoopCalibration(rec_similarity="collaborative", user_similarity="collaborative")  # not learned
    key = calibration_key(catalog, scorer, scorer, available_backends(catalog))
    write_keyed(path, key, "calibration", stand_in.to_json())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--datasets", nargs="+", required=True)
    parser.add_argument("--model", default="sasrec", help="The rec and reward model served.")
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--stage-timeout-s", type=float, default=900)
    parser.add_argument("--database-url", default=DEFAULT_SERVER)
    parser.add_argument("--stand-in-calibration", action="store_true")
    parser.add_argument(
        "--steering-similarity",
        default="collaborative",
        help="RECLOOP_STEERING_SIMILARITY of the worker (text needs every title's MiniLM vector).",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    options = Options(
        models=(args.model,),
        serve_model=args.model,
        train_rows=0,
        requests=args.requests,
        stage_timeout_s=args.stage_timeout_s,
        database_url=args.database_url,
        seed=0,
    )
    progress = Progress()
    results: dict[str, Any] = {}
    for dataset in args.datasets:
        if args.stand_in_calibration:
            write_stand_in_calibration(args.data_dir, dataset, args.model)
        worker_env = {"RECLOOP_STEERING_SIMILARITY": args.steering_similarity}
        run = ServedRun(dataset, dataset, args.data_dir, worker_env=worker_env)
        (args.data_dir / "logs").mkdir(parents=True, exist_ok=True)
        progress.say(f"[{dataset}] serving ...")
        try:
            with served(run, options, progress) as (base, key, pid):
                progress.say(
                    f"[{dataset}] /readyz after {run.figures['ready_s']} s; waiting for its warm-ups ..."
                )
                run.extra["warm_up_s_after_ready"] = settle(pid)
                progress.say(f"[{dataset}] idle {run.extra['warm_up_s_after_ready']} s later; requests ...")
                http_stage(run, base, key, pid, options, progress)
        except StageFailed as exc:
            run.errors["serve"] = str(exc)
        results[dataset] = {
            "figures": {k: v for k, v in run.figures.items() if v is not None},
            "extra": run.extra,
            "errors": run.errors,
            "stand_in_calibration": args.stand_in_calibration,
            "steering_similarity": args.steering_similarity,
        }
        print(json.dumps({dataset: results[dataset]}), file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
