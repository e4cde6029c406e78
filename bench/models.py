"""Benchmark of the sequential recommenders on the LLaRA / AFL protocol.

For every model x dataset: train (each in its own process, so peak memory is that run's own),
then HR@1-of-20 mean/std over 5 candidate seeds, full-ranking Hit@10 / NDCG@10 on the test split,
seconds per epoch and peak resident memory. Existing artifacts are reused unless ``--retrain``.

    python -m bench.models [--json] [--retrain [--members K]] [--datasets lastfm movielens steam]
                           [--models ...]

An artifact may be a seed ensemble (``recloop train --members K``); it is evaluated as it is.

Datasets come from the data dir (RECLOOP_DATA_DIR, default ./data): get them first with
`recloop data fetch <name>` (README, "Data and models"). Steam has only a 1,000-row
training sample, so its numbers say little about the models.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any

import torch

from app.settings import get_settings
from lab.eval.paper import PAPER_MODEL_HR1
from recmodels.artifacts import ArtifactError, artifact_path, load_latest_scorer
from recmodels.dataset import Dataset
from recmodels.evaluation import evaluate_model
from recmodels.registry import MODEL_NAMES

DATASETS = ("lastfm", "movielens", "steam")
TARGET_FACTOR = 1.1


def train_in_subprocess(dataset: str, model: str, members: int = 1) -> None:
    """`recloop train` in a fresh process: its peak RSS is this training run's alone."""
    cmd = [sys.executable, "-m", "cli", "train", "--dataset", dataset, "--model", model, "--no-progress"]
    cmd += ["--members", str(members)]
    subprocess.run(cmd, check=True, env=os.environ.copy(), stdout=subprocess.DEVNULL)


def bench_one(dataset: Dataset, model: str, *, retrain: bool, members: int = 1) -> dict[str, Any]:
    models_dir = get_settings().models_dir
    if retrain or not artifact_path(models_dir, dataset.name, model).is_file():
        train_in_subprocess(dataset.name, model, members)
    try:
        scorer = load_latest_scorer(models_dir, dataset, model)
    except ArtifactError:  # trained on other data (e.g. a re-imported dataset): retrain once
        train_in_subprocess(dataset.name, model, members)
        scorer = load_latest_scorer(models_dir, dataset, model)
    result = evaluate_model(scorer, dataset, split="test")
    trained = scorer.info.extra["metrics"]
    paper = PAPER_MODEL_HR1.get((dataset.name, model))
    return {
        "model": model,
        "dataset": dataset.name,
        "train_rows": trained["train_rows"],
        "train_complete": bool(dataset.meta.get("train_complete", True)),
        **{k: result[k] for k in ("hr1_mean", "hr1_std", "hr1_expected", "hit10", "ndcg10", "n_rows")},
        "val_hr1_expected": trained["val_hr1_expected"],
        "members": scorer.info.extra["members"],
        # a single model's best epoch; an ensemble's, one per member
        "best_epoch": trained["best_epoch"]
        if "best_epoch" in trained
        else [m["best_epoch"] for m in trained["member_metrics"]],
        "seconds_per_epoch": trained["seconds_per_epoch"],
        "peak_rss_mb": trained["peak_rss_mb"],
        "paper_hr1": paper,
        "target_hr1": round(paper * TARGET_FACTOR, 4) if paper else None,
        "artifact_sha256": scorer.info.artifact_sha256,
    }


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| model | dataset | members | HR@1 (5 seeds) | HR@1 exp. | Hit@10 | NDCG@10 | paper HR@1 | target | "
        "s/epoch | peak MB | train rows |"
    )
    lines = [head, "|" + "---|" * 12]
    for r in rows:
        paper = f"{r['paper_hr1']:.4f}" if r["paper_hr1"] else "-"
        target = f"{r['target_hr1']:.3f}" if r["target_hr1"] else "-"
        lines.append(
            f"| {r['model']} | {r['dataset']} | {r['members']} | {r['hr1_mean']:.4f} ± {r['hr1_std']:.4f} | "
            f"{r['hr1_expected']:.4f} | {r['hit10']:.4f} | {r['ndcg10']:.4f} | {paper} | {target} | "
            f"{r['seconds_per_epoch']:.1f} | {r['peak_rss_mb']:.0f} | {r['train_rows']:,} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="Print one JSON object as the last line.")
    parser.add_argument("--retrain", action="store_true", help="Train even when an artifact exists.")
    parser.add_argument(
        "--members",
        type=int,
        default=1,
        help="With --retrain (or a missing artifact): train K-member seed ensembles.",
    )
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    parser.add_argument("--models", nargs="+", default=list(MODEL_NAMES), choices=MODEL_NAMES)
    args = parser.parse_args(argv)

    settings = get_settings()
    torch.set_num_threads(settings.torch_threads)
    rows = []
    for name in args.datasets:
        dataset = Dataset.open(settings.datasets_dir, name)
        for model in args.models:
            rows.append(bench_one(dataset, model, retrain=args.retrain, members=args.members))
            print(f"done {model} on {name}", file=sys.stderr)
    print(table(rows))
    if any(not r["train_complete"] for r in rows):
        print("steam: trained on the 1,000-row sample only (the full training set is missing).")
    if args.json:
        print(json.dumps({"results": rows}))


if __name__ == "__main__":
    main()
