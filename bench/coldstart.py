"""Cold-start design selection without the test split.

Trains one model under the cold-start protocol (:mod:`recmodels.coldstart`: a share of the items
held out with a hold-out seed, every training and validation row whose target is held out
dropped) with config overrides, and scores it on what selection may read:

- ``val_warm``: expected HR@1-of-20 on the validation rows whose target was *not* held out (the
  checkpoint-selection score of the run);
- ``val_cold``: on the validation rows whose target was held out (few: ~9 on MovieLens at 10 %);
- ``train_cold``: on the training rows whose target was held out (len_seq >= 3). Those rows were
  dropped before training, so their targets are as cold as the test ones; the users are training
  users (their other windows, with the held-out item in the history, were trained on), so this is
  a large, slightly optimistic selection signal, never a reported result.

The test split is never read here: `recloop eval model --cold-items F --cold-seeds K` reports it.

    python -m bench.coldstart --dataset movielens --name nid --set no_id_vector=true [--epochs 10]
"""

from __future__ import annotations

import argparse
import json
import random
from typing import Any

import torch

from app.settings import get_settings
from cli.models import _parse_overrides
from recmodels import metrics
from recmodels.artifacts import load_scorer
from recmodels.coldstart import cold_rows, held_out_items
from recmodels.dataset import Dataset
from recmodels.evaluation import expected_hr_at_1_of, full_ranking_stats
from recmodels.text import embedding_cache_path
from recmodels.training import train

TRAIN_COLD_SAMPLE = 3000  # rows of train_cold scored (a fixed random sample when there are more)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--model", default="textrec")
    parser.add_argument("--name", required=True, help="Run name: models/DATASET/cold-select/NAME.pt")
    parser.add_argument("--fraction", type=float, default=0.1)
    parser.add_argument("--hold-out-seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0, help="Training seed.")
    parser.add_argument("--set", action="append", default=[], dest="overrides")
    parser.add_argument("--no-preset", action="store_true")
    parser.add_argument("--retrain", action="store_true")
    args = parser.parse_args(argv)

    settings = get_settings()
    torch.set_num_threads(settings.torch_threads)
    data = Dataset.open(settings.datasets_dir, args.dataset)
    held = held_out_items(data.n_items, args.fraction, args.hold_out_seed)
    path = settings.models_dir / data.name / "cold-select" / f"{args.name}.pt"
    trained: dict[str, Any] = {}
    if args.retrain or not path.is_file():
        result = train(
            data, args.model, models_dir=settings.models_dir, epochs=args.epochs, seed=args.seed,
            config_overrides=_parse_overrides(args.model, args.overrides), use_preset=not args.no_preset,
            output_path=path, text_cache=embedding_cache_path(settings.data_dir, data.name, data.fingerprint),
            drop_targets=held, progress=False,
        )  # fmt: skip
        trained = result.metrics
    model = load_scorer(path, data).model
    train_cold = cold_rows(data.eval_rows("train")[0], held)
    if len(train_cold) > TRAIN_COLD_SAMPLE:
        train_cold = random.Random(0).sample(train_cold, TRAIN_COLD_SAMPLE)
    out: dict[str, Any] = {
        "dataset": data.name,
        "model": args.model,
        "name": args.name,
        "overrides": args.overrides,
        "fraction": args.fraction,
        "hold_out_seed": args.hold_out_seed,
    }
    val_rows = data.eval_rows("val")[0]
    for key, rows in (
        ("val_warm", [r for r in val_rows if r.next not in held]),
        ("val_cold", cold_rows(val_rows, held)),
        ("train_cold", train_cold),
    ):
        out[key] = metrics.mean(expected_hr_at_1_of(full_ranking_stats(model, rows))) if rows else None
        out[f"{key}_rows"] = len(rows)
    if trained:
        for key in ("best_epoch", "epochs_run", "seconds_per_epoch", "peak_rss_mb"):
            out[key] = trained.get(key)
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
