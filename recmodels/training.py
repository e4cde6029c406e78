"""Train one sequential recommender on a dataset's training windows.

Full-softmax cross-entropy on the next item, AdamW, and checkpoint selection on
the *validation* split only: the exact expected HR@1-of-20 (see
:func:`recmodels.metrics.expected_hr_at_1`), which is what the sampled test
protocol estimates, without its candidate noise. Early stopping with patience.
"""

from __future__ import annotations

import copy
import resource
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from app.data.dataset import Dataset, Row
from recmodels.artifacts import artifact_path, save_artifact
from recmodels.base import SequentialRecommender, pad_histories
from recmodels.evaluation import full_ranking_stats, ranking_summary
from recmodels.losses import full_softmax_ce
from recmodels.registry import ModelConfig, build_model, model_config

SELECTION_METRIC = "val_hr1_expected"
DEFAULT_PATIENCE = 6


@dataclass
class TrainResult:
    artifact_path: Path
    model_name: str
    dataset: str
    best_epoch: int  # 1-based epoch whose weights were saved
    epochs_run: int
    epoch_losses: list[float]
    metrics: dict[str, Any] = field(default_factory=dict)


def training_tensors(rows: list[Row], max_len: int, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Histories -> left-padded seqs [R, T], targets [R]."""
    seqs = pad_histories([r.history for r in rows], max_len, pad_id)
    targets = torch.as_tensor([r.next for r in rows], dtype=torch.long)
    return seqs, targets


def train(
    dataset: Dataset,
    model_name: str,
    *,
    models_dir: Path,
    epochs: int | None = None,
    seed: int = 0,
    max_train_rows: int | None = None,
    config_overrides: dict[str, Any] | None = None,
    progress: bool = True,
    patience: int = DEFAULT_PATIENCE,
    output_path: Path | None = None,
) -> TrainResult:
    """Train, keep the best validation epoch, save the artifact (default: ``artifact_path``).

    ``max_train_rows`` keeps the first rows of the training split (a quick, deterministic slice).
    """
    torch.manual_seed(seed)
    model = build_model(model_name, dataset.n_items, **(config_overrides or {}))
    config = model_config(model)
    n_epochs = epochs if epochs is not None else config.epochs
    if n_epochs < 1:
        raise ValueError(f"epochs must be >= 1, got {n_epochs}")

    train_rows = dataset.rows("train")[:max_train_rows]
    if not train_rows:
        raise ValueError(f"{dataset.root}: the training split is empty")
    val_rows, _ = dataset.eval_rows("val")
    seqs, targets = training_tensors(train_rows, model.max_len, model.pad_id)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    generator = torch.Generator().manual_seed(seed)

    best_score, best_epoch, best_state = float("-inf"), 0, copy.deepcopy(model.state_dict())
    best_val: dict[str, float] = {}
    epoch_losses: list[float] = []
    epoch_seconds: list[float] = []
    for epoch in range(1, n_epochs + 1):
        started = time.perf_counter()
        loss = _train_epoch(model, optimizer, seqs, targets, config, generator, progress, epoch, n_epochs)
        epoch_seconds.append(time.perf_counter() - started)
        epoch_losses.append(loss)
        val = {f"val_{k}": v for k, v in ranking_summary(full_ranking_stats(model, val_rows)).items()}
        if progress:
            tqdm.write(f"epoch {epoch}: loss {loss:.4f} " + " ".join(f"{k} {v:.4f}" for k, v in val.items()))
        if val[SELECTION_METRIC] > best_score:
            best_score, best_epoch, best_val = val[SELECTION_METRIC], epoch, val
            best_state = copy.deepcopy(model.state_dict())
        elif epoch - best_epoch >= patience:
            break

    model.load_state_dict(best_state)
    metrics: dict[str, Any] = {
        **best_val,
        "selection_metric": SELECTION_METRIC,
        "best_epoch": best_epoch,
        "epochs_run": len(epoch_losses),
        "train_rows": len(train_rows),
        "seconds_per_epoch": sum(epoch_seconds) / len(epoch_seconds),
        "peak_rss_mb": peak_rss_mb(),
        "final_train_loss": epoch_losses[-1],
        "seed": seed,
        "config": asdict(config),
    }
    path = output_path or artifact_path(models_dir, dataset.name, model_name)
    save_artifact(path, model, model_name=model_name, dataset=dataset, metrics=metrics)
    return TrainResult(path, model_name, dataset.name, best_epoch, len(epoch_losses), epoch_losses, metrics)


def _train_epoch(
    model: SequentialRecommender,
    optimizer: torch.optim.Optimizer,
    seqs: torch.Tensor,
    targets: torch.Tensor,
    config: ModelConfig,
    generator: torch.Generator,
    progress: bool,
    epoch: int,
    n_epochs: int,
) -> float:
    """One pass over shuffled mini-batches; returns the mean training loss."""
    model.train()
    order = torch.randperm(len(targets), generator=generator)
    batches = order.split(config.batch_size)
    total, count = 0.0, 0
    for idx in tqdm(batches, desc=f"epoch {epoch}/{n_epochs}", disable=not progress, leave=False):
        loss = full_softmax_ce(
            model, seqs[idx], targets[idx], config.label_smoothing, mask_history=config.mask_history
        )
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(idx)
        count += len(idx)
    return total / count


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (Linux reports kilobytes)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
