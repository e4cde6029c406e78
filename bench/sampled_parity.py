"""Sampled training parity (issue 45): SASRec trained with gBCE against full softmax, paired.

For each dataset: train SASRec twice with the same seed, preset and budget, once with
``loss=softmax`` and once with ``loss=gbce`` (gSASRec's 256 uniform negatives, t = 0.75; see
:func:`recmodels.losses.gbce`), each selected on validation only, then evaluate both on the test
split and report the paired difference gBCE - softmax user by user (same rows, same candidate
draws) with its 95 % bootstrap interval over users: the exact expected HR@1-of-20 and the 5-seed
sampled HR@1. The target: the interval contains 0 or lies above it.

    python -m bench.sampled_parity [--datasets movielens lastfm] [--seed 0] [--gbce-epochs E]
                                   [--retrain] [--json]

``--gbce-epochs`` caps gBCE's epochs (softmax keeps its config's 40 with patience 6): a budget
handicap for gBCE only, so a parity it shows is conservative.

Artifacts go to ``models_dir/DATASET/parity/sasrec-LOSS-seedS.pt`` and are reused unless
``--retrain``. With the 95 (MovieLens) / 122 (LastFM) test users one HR@1 has a standard error of
about 0.05: read the interval, never the sign of the mean.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch

from app.settings import get_settings
from lab.eval.metrics import paired_interval
from recmodels.artifacts import load_scorer
from recmodels.dataset import Dataset
from recmodels.evaluation import evaluate_model
from recmodels.training import train

DATASETS = ("movielens", "lastfm")
LOSSES = ("softmax", "gbce")  # the reference first: differences are gbce - softmax


def parity_artifact(models_dir: Path, dataset: str, loss: str, seed: int, epochs: int | None) -> Path:
    cap = f"-e{epochs}" if epochs else ""
    return models_dir / dataset / "parity" / f"sasrec-{loss}{cap}-seed{seed}.pt"


def trained_and_evaluated(
    dataset: Dataset, loss: str, seed: int, *, epochs: int | None, retrain: bool
) -> dict[str, Any]:
    """SASRec trained with ``loss`` (its artifact when there is one), evaluated on test."""
    path = parity_artifact(get_settings().models_dir, dataset.name, loss, seed, epochs)
    if retrain or not path.is_file():
        train(
            dataset, "sasrec", models_dir=path.parent, seed=seed, output_path=path, progress=False,
            epochs=epochs, config_overrides={"loss": loss},
        )  # fmt: skip
    scorer = load_scorer(path, dataset)
    trained = scorer.info.extra["metrics"]
    result = evaluate_model(scorer, dataset, split="test")
    result["trained"] = {
        key: trained[key]
        for key in ("val_hr1_expected", "best_epoch", "epochs_run", "seconds_per_epoch", "train_rows")
    }
    result["artifact"] = str(path)
    return result


def compare(dataset: Dataset, seed: int, *, gbce_epochs: int | None, retrain: bool) -> dict[str, Any]:
    results = {
        loss: trained_and_evaluated(
            dataset, loss, seed, epochs=gbce_epochs if loss == "gbce" else None, retrain=retrain
        )
        for loss in LOSSES
    }
    soft, sampled = results["softmax"], results["gbce"]
    out: dict[str, Any] = {"dataset": dataset.name, "seed": seed, "n_rows": soft["n_rows"]}
    for loss, r in results.items():
        out[loss] = {
            "hr1_expected": r["hr1_expected"], "hr1_mean": r["hr1_mean"], "hit10": r["hit10"],
            "ndcg10": r["ndcg10"], **r["trained"], "artifact": r["artifact"],
        }  # fmt: skip
    for key in ("hr1_expected", "hr1_sampled"):
        diffs = [g - s for g, s in zip(sampled["per_row"][key], soft["per_row"][key], strict=True)]
        out[f"{key}_diff"] = paired_interval(diffs).to_json()
    out["parity"] = out["hr1_expected_diff"]["high"] >= 0.0  # the interval contains 0 or lies above
    return out


def line(r: dict[str, Any]) -> str:
    d, s = r["hr1_expected_diff"], r["hr1_sampled_diff"]
    return (
        f"{r['dataset']} ({r['n_rows']} test users, seed {r['seed']}): expected HR@1 softmax "
        f"{r['softmax']['hr1_expected']:.4f} (val {r['softmax']['val_hr1_expected']:.4f}, epoch "
        f"{r['softmax']['best_epoch']}), gbce {r['gbce']['hr1_expected']:.4f} (val "
        f"{r['gbce']['val_hr1_expected']:.4f}, epoch {r['gbce']['best_epoch']}); gbce - softmax paired "
        f"{d['mean']:+.4f} [{d['low']:+.4f}, {d['high']:+.4f}], 5-seed sampled {s['mean']:+.4f} "
        f"[{s['low']:+.4f}, {s['high']:+.4f}]; parity {'yes' if r['parity'] else 'NO'}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--seed", type=int, default=0, help="Training seed of both models.")
    parser.add_argument("--gbce-epochs", type=int, default=None, help="Cap gBCE's epochs (default: config).")
    parser.add_argument("--retrain", action="store_true", help="Train even when an artifact exists.")
    parser.add_argument("--json", action="store_true", help="Print one JSON object as the last line.")
    args = parser.parse_args(argv)
    settings = get_settings()
    torch.set_num_threads(settings.torch_threads)
    rows = []
    for name in args.datasets:
        dataset = Dataset.open(settings.datasets_dir, name)
        rows.append(compare(dataset, args.seed, gbce_epochs=args.gbce_epochs, retrain=args.retrain))
        print(line(rows[-1]))
    if args.json:
        print(json.dumps({"results": rows}))


if __name__ == "__main__":
    main()
