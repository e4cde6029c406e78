"""Train one sequential recommender (or a seed ensemble of them) on a dataset's training windows.

Full-softmax cross-entropy on the next item (gSASRec's gBCE over sampled negatives above a catalog
size: ``TrainConfig.loss``), AdamW, and checkpoint selection on
the *validation* split only: the exact expected HR@1-of-20 (see
:func:`recmodels.metrics.expected_hr_at_1`), which is what the sampled test
protocol estimates, without its candidate noise. Early stopping with patience.
"""

from __future__ import annotations

import copy
import resource
import time
from collections import Counter
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from recmodels.artifacts import artifact_path, save_artifact
from recmodels.base import SequentialRecommender
from recmodels.columns import NO_ITEM, RowColumns, columns_path, split_columns
from recmodels.dataset import Dataset, Row
from recmodels.ensemble import SeedEnsemble
from recmodels.evaluation import full_ranking_stats, ranking_summary
from recmodels.losses import all_positions_ce, full_softmax_ce, gbce
from recmodels.optimizers import LazyItemsAdamW, make_optimizer, sparse_item_gradients
from recmodels.presets import preset_overrides
from recmodels.progress import progress_bar
from recmodels.registry import build_model, model_class, model_config, split_overrides
from recmodels.text import (
    EXTRA_HINT,
    TextEncoderUnavailable,
    cached_text_vectors,
    item_texts,
    text_available,
)
from recmodels.train_config import TrainConfig, resolve_device

SELECTION_METRIC = "val_hr1_expected"


@dataclass
class MemberResult:
    """One trained model: its seed, its best validation epoch and its own validation metrics."""

    seed: int
    best_epoch: int  # 1-based epoch whose weights were kept
    epochs_run: int
    epoch_losses: list[float]
    metrics: dict[str, Any] = field(default_factory=dict)


@dataclass
class TrainResult:
    artifact_path: Path
    model_name: str
    dataset: str
    members: list[MemberResult]  # one per training seed; a single model has one
    metrics: dict[str, Any] = field(default_factory=dict)  # of the saved model or ensemble

    @property
    def best_epoch(self) -> int:
        """The first member's (the only one unless an ensemble was trained)."""
        return self.members[0].best_epoch

    @property
    def epochs_run(self) -> int:
        return self.members[0].epochs_run

    @property
    def epoch_losses(self) -> list[float]:
        return self.members[0].epoch_losses


def training_tensors(
    rows: list[Row], max_len: int, pad_id: int, all_positions: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """Histories -> left-padded seqs [R, T], targets [R]; with ``all_positions`` targets [R, T]:
    ``targets[r, t]`` is the item after ``seqs[r, t]`` (the row's next item at the newest position),
    ``pad_id`` under the padding. Long tensors, as the models take them."""
    seqs, targets = columns_tensors(RowColumns.of_rows(rows), max_len, pad_id, all_positions)
    return seqs.long(), targets.long()


def columns_tensors(
    columns: RowColumns, max_len: int, pad_id: int, all_positions: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`training_tensors` of a split's columns, as int32 (half the memory of a long log;
    each batch is made long as it is taken)."""
    histories = torch.from_numpy(np.ascontiguousarray(columns.histories))  # [R, W], NO_ITEM-padded
    next_items = torch.from_numpy(np.array(columns.next_items, dtype=np.int32))  # [R]
    seqs = _last_columns(histories, max_len)  # [R, T]
    if all_positions:  # history[1:] + [next], left-padded alike, lines up one step ahead of seqs
        following = _last_columns(torch.cat([histories[:, 1:], next_items.unsqueeze(1)], dim=1), max_len)
        following = following.masked_fill(seqs == NO_ITEM, NO_ITEM)
        following[:, -1] = next_items  # an empty history still predicts its next item
        targets = following.masked_fill(following == NO_ITEM, pad_id)
    else:
        targets = next_items
    return seqs.masked_fill(seqs == NO_ITEM, pad_id), targets


def _last_columns(matrix: torch.Tensor, width: int) -> torch.Tensor:
    """The newest ``width`` columns of a left-padded [R, W] matrix, padded on the left with
    ``NO_ITEM`` when ``width`` > W."""
    have = matrix.shape[1]
    if width <= have:
        return matrix[:, have - width :].clone()
    return torch.cat([matrix.new_full((matrix.shape[0], width - have), NO_ITEM), matrix], dim=1)


def train(
    dataset: Dataset,
    model_name: str,
    *,
    models_dir: Path,
    epochs: int | None = None,
    seed: int = 0,
    members: int = 1,
    max_train_rows: int | None = None,
    config_overrides: dict[str, Any] | None = None,
    use_preset: bool = True,
    progress: bool = True,
    output_path: Path | None = None,
    text_cache: Path | None = None,
    drop_targets: frozenset[int] = frozenset(),
    device: str = "auto",
) -> TrainResult:
    """Train, keep the best validation epoch, save the artifact (default: ``artifact_path``).

    ``members`` > 1 trains that many models with seeds ``seed, seed + 1, ...`` (each selected on
    validation on its own) and saves them as one :class:`SeedEnsemble` artifact; the first member
    is the model ``members=1`` trains. The config is the model's defaults, then the dataset's
    preset (:mod:`recmodels.presets`, unless ``use_preset`` is false), then ``config_overrides``.
    ``max_train_rows`` keeps the first rows of the training split (a quick, deterministic slice).
    ``drop_targets`` leaves out every training and validation row whose target is one of them (the
    cold-start protocol, :mod:`recmodels.coldstart`: those items have no interactions to learn
    from). A text-aware model reads the items' text vectors from ``text_cache`` (computed there on
    a miss; see :mod:`recmodels.text`). ``device`` (auto, cpu, cuda) is where the model trains; the
    artifact is saved from the CPU either way.
    """
    if members < 1:
        raise ValueError(f"members must be >= 1, got {members}")
    item_text = item_text_vectors(dataset, model_name, text_cache)
    overrides = {
        **(preset_overrides(dataset.name, model_name) if use_preset else {}),
        **(config_overrides or {}),
    }
    # Columns, memory-mapped (recmodels.columns): a log of 10^7 rows is 350 MB, not 7.6 GB of Rows.
    if progress and max_train_rows is None and not columns_path(dataset, "train").is_file():
        tqdm.write(f"{dataset.name}: reading the training split into columns (once per dataset)")
    train_rows = split_columns(dataset, "train", max_train_rows)
    if drop_targets:
        train_rows = train_rows.where(~np.isin(train_rows.next_items, sorted(drop_targets)))
    if not len(train_rows):
        raise ValueError(f"{dataset.root}: the training split is empty")
    val_rows = [r for r in dataset.eval_rows("val")[0] if r.next not in drop_targets]

    fitted: list[tuple[SequentialRecommender, MemberResult]] = []
    epoch_seconds: list[float] = []
    for i in range(members):
        label = f"member {i + 1}/{members} " if members > 1 else ""
        model, train_config, result, seconds = _fit_one(
            model_name, dataset.n_items, train_rows, val_rows, overrides,
            seed=seed + i, epochs=epochs, progress=progress, label=label, item_text=item_text,
            device=resolve_device(device),
        )  # fmt: skip
        fitted.append((model, result))
        epoch_seconds += seconds

    common = {
        "selection_metric": SELECTION_METRIC,
        "train_rows": len(train_rows),
        "seconds_per_epoch": sum(epoch_seconds) / len(epoch_seconds),
        "peak_rss_mb": peak_rss_mb(),
        "seed": seed,
        "config": asdict(model_config(fitted[0][0])) | asdict(train_config),
        **({"cold_items_dropped": len(drop_targets)} if drop_targets else {}),
    }
    saved: SequentialRecommender
    if members == 1:
        saved, first = fitted[0]
        metrics: dict[str, Any] = {
            **first.metrics,
            **common,
            "best_epoch": first.best_epoch,
            "epochs_run": first.epochs_run,
            "final_train_loss": first.epoch_losses[-1],
        }
    else:
        models = [m for m, _ in fitted]
        saved = SeedEnsemble(models)
        # The ensemble of the first k members for k = 1..K: how much each member adds on validation.
        by_size = [fitted[0][1].metrics[SELECTION_METRIC]] + [
            _validate(SeedEnsemble(models[:k]), val_rows)[SELECTION_METRIC] for k in range(2, members)
        ]
        metrics = {**_validate(saved, val_rows), **common, "members": members}
        metrics[f"{SELECTION_METRIC}_by_size"] = [*by_size, metrics[SELECTION_METRIC]]
        metrics["member_metrics"] = [
            {
                "seed": r.seed,
                **r.metrics,
                "best_epoch": r.best_epoch,
                "epochs_run": r.epochs_run,
                "final_train_loss": r.epoch_losses[-1],
            }
            for _, r in fitted
        ]
    path = output_path or artifact_path(models_dir, dataset.name, model_name)
    save_artifact(
        path, saved, model_name=model_name, dataset=dataset, metrics=metrics, train_config=train_config
    )
    return TrainResult(path, model_name, dataset.name, [r for _, r in fitted], metrics)


def item_text_vectors(dataset: Dataset, model_name: str, cache_path: Path | None) -> torch.Tensor | None:
    """[N, D] text vectors of the dataset's items for a model that reads item text (None for the
    others); refuses clearly when the embeddings extra is missing, even on a cache hit."""
    if not getattr(model_class(model_name), "needs_item_text", False):
        return None
    if not text_available():
        raise TextEncoderUnavailable(f"the {model_name} model needs the embeddings extra: {EXTRA_HINT}")
    return torch.from_numpy(cached_text_vectors(item_texts(dataset.items), cache_path=cache_path))


def _validate(model: SequentialRecommender, val_rows: list[Row]) -> dict[str, float]:
    with model.selection_scores():
        return {f"val_{k}": v for k, v in ranking_summary(full_ranking_stats(model, val_rows)).items()}


def _fit_one(
    model_name: str,
    n_items: int,
    train_rows: RowColumns,
    val_rows: list[Row],
    overrides: dict[str, Any],
    *,
    seed: int,
    epochs: int | None,
    progress: bool,
    label: str,
    item_text: torch.Tensor | None = None,
    device: torch.device = torch.device("cpu"),
) -> tuple[SequentialRecommender, TrainConfig, MemberResult, list[float]]:
    """Train one model with ``seed``; returns it with its best validation weights loaded, the
    training config, its result and the seconds of each epoch. A text-aware model gets
    ``item_text`` [N, D] and how often each item is the target of ``train_rows`` (the targets are
    the items with a trainable id embedding)."""
    model_overrides, train_overrides = split_overrides(model_name, overrides)
    config = TrainConfig(**train_overrides)
    torch.manual_seed(seed)
    model = build_model(model_name, n_items, **model_overrides)
    if config.all_positions and not model.trains_all_positions:
        raise ValueError(f"all_positions: {model_name} trains on the newest position only")
    if item_text is not None:
        targets_seen, times = np.unique(train_rows.next_items, return_counts=True)
        model.attach_items(item_text, Counter(dict(zip(targets_seen.tolist(), times.tolist(), strict=True))))
    n_epochs = epochs if epochs is not None else config.epochs
    if n_epochs < 1:
        raise ValueError(f"epochs must be >= 1, got {n_epochs}")
    if config.patience < 1:
        raise ValueError(f"patience must be >= 1, got {config.patience}")
    seqs, targets = columns_tensors(train_rows, model.max_len, model.pad_id, config.all_positions)
    model.to(device)
    sampled = config.loss_for(n_items) == "gbce"
    optimizer = make_optimizer(model, lr=config.lr, weight_decay=config.weight_decay, sampled=sampled)
    generator = torch.Generator().manual_seed(seed)

    best_score, best_epoch, best_state = float("-inf"), 0, copy.deepcopy(model.state_dict())
    best_val: dict[str, float] = {}
    epoch_losses: list[float] = []
    epoch_seconds: list[float] = []
    for epoch in range(1, n_epochs + 1):
        started = time.perf_counter()
        desc = f"{label}epoch {epoch}/{n_epochs} ({config.loss_for(n_items)})"
        with sparse_item_gradients(model) if sampled else nullcontext():
            loss = _train_epoch(model, optimizer, seqs, targets, config, generator, progress, desc)
        epoch_seconds.append(time.perf_counter() - started)
        epoch_losses.append(loss)
        val = _validate(model, val_rows)
        if progress:
            tqdm.write(
                f"{label}epoch {epoch}: loss {loss:.4f} " + " ".join(f"{k} {v:.4f}" for k, v in val.items())
            )
        if val[SELECTION_METRIC] > best_score:
            best_score, best_epoch, best_val = val[SELECTION_METRIC], epoch, val
            best_state = copy.deepcopy(model.state_dict())
        elif epoch - best_epoch >= config.patience:
            break
    model.load_state_dict(best_state)
    model.to("cpu").eval()
    return (
        model,
        config,
        MemberResult(seed, best_epoch, len(epoch_losses), epoch_losses, best_val),
        epoch_seconds,
    )


def _train_epoch(
    model: SequentialRecommender,
    optimizer: torch.optim.Optimizer | LazyItemsAdamW,
    seqs: torch.Tensor,
    targets: torch.Tensor,
    config: TrainConfig,
    generator: torch.Generator,
    progress: bool,
    desc: str,
) -> float:
    """One pass over shuffled mini-batches; returns the mean training loss."""
    model.train()
    order = torch.randperm(len(targets), generator=generator)
    batches = order.split(config.batch_size)
    total, count = 0.0, 0
    sampled = config.loss_for(model.n_items) == "gbce"
    device = next(model.parameters()).device
    for idx in progress_bar(batches, desc=desc, disable=not progress, leave=False):
        batch_seqs, batch_targets = seqs[idx].to(device, torch.long), targets[idx].to(device, torch.long)
        if sampled:
            loss = gbce(
                model, batch_seqs, batch_targets, config.negatives, config.gbce_t, generator,
                shared=config.shared_negatives,
            )  # fmt: skip
        elif config.all_positions:
            loss = all_positions_ce(
                model, batch_seqs, batch_targets, model.pad_id, config.label_smoothing, config.mask_history
            )
        else:
            loss = full_softmax_ce(
                model, batch_seqs, batch_targets, config.label_smoothing, mask_history=config.mask_history
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
