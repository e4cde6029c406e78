"""`recloop` commands of the models area: `recloop train` and `recloop eval model`."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, NoReturn

import torch
import typer

from app.settings import get_settings
from recmodels.artifacts import ArtifactError, load_latest_scorer
from recmodels.dataset import Dataset, DatasetNotFound
from recmodels.evaluation import DEFAULT_SEEDS, evaluate_model
from recmodels.registry import MODEL_NAMES, UnknownModelError, config_class
from recmodels.train_config import TrainConfig
from recmodels.training import train

_MODEL_HELP = f"One of: {', '.join(MODEL_NAMES)}."


def register(cli: typer.Typer, eval_cli: typer.Typer) -> None:
    """Add this area's commands to the top-level and `eval` command groups."""
    cli.command("train")(train_command)
    eval_cli.command("model")(eval_model_command)


def train_command(
    dataset: str = typer.Option(..., "--dataset", help="Dataset name under the data dir's datasets/."),
    model: str = typer.Option(..., "--model", help=_MODEL_HELP),
    epochs: int | None = typer.Option(None, "--epochs", min=1, help="Default: the model config's epochs."),
    seed: int = typer.Option(0, "--seed", help="Training seed (of the first member)."),
    members: int = typer.Option(
        1, "--members", min=1, help="Train K models (seeds SEED..SEED+K-1) saved as one seed ensemble."
    ),
    max_train_rows: int | None = typer.Option(
        None, "--max-train-rows", min=1, help="Train on the first N training rows."
    ),
    overrides: list[str] = typer.Option(
        [], "--set", help="Config override KEY=VALUE (e.g. --set weight_decay=1e-5); repeatable."
    ),
    use_preset: bool = typer.Option(
        True,
        "--preset/--no-preset",
        help="Apply the dataset's validation-selected config preset (recmodels/presets.py).",
    ),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
    as_json: bool = typer.Option(  # unused: the JSON line is printed either way
        False, "--json", help="Accepted for uniformity: the last line is always one JSON object of metrics."
    ),
) -> None:
    """Train a model (selected on validation) and save it; the last line is a JSON object of metrics.

    With --members K the artifact is a seed ensemble scored by the mean of the members' log-softmax.
    """
    settings = get_settings()
    torch.set_num_threads(settings.torch_threads)
    data = _open_dataset(dataset)
    config_overrides = _parse_overrides(model, overrides)
    result = train(
        data,
        model,
        models_dir=settings.models_dir,
        epochs=epochs,
        seed=seed,
        members=members,
        max_train_rows=max_train_rows,
        config_overrides=config_overrides,
        use_preset=use_preset,
        progress=progress,
    )
    summary = {"model": model, "dataset": dataset, "artifact": str(result.artifact_path), **result.metrics}
    summary.pop("config", None)
    epochs = ", ".join(f"{m.best_epoch} of {m.epochs_run}" for m in result.members)
    kind = f"ensemble of {members}, best epochs" if members > 1 else "best epoch"
    typer.echo(f"saved {result.artifact_path} ({kind} {epochs})")
    typer.echo(json.dumps(summary))


def eval_model_command(
    dataset: str = typer.Option(..., "--dataset"),
    model: str = typer.Option(..., "--model", help=_MODEL_HELP),
    split: str = typer.Option("test", "--split", help="val or test."),
    as_json: bool = typer.Option(False, "--json", help="Also print one JSON object as the last line."),
) -> None:
    """HR@1-of-20 (mean/std over 5 candidate seeds), full-ranking Hit@10 and NDCG@10."""
    settings = get_settings()
    torch.set_num_threads(settings.torch_threads)
    if split not in ("val", "test"):
        raise typer.BadParameter(f"split must be val or test, got {split!r}", param_hint="--split")
    data = _open_dataset(dataset)
    try:
        scorer = load_latest_scorer(settings.models_dir, data, model)
    except ArtifactError as exc:
        _fail(str(exc))
    result = evaluate_model(scorer, data, split=split, seeds=DEFAULT_SEEDS)
    typer.echo(_table(result))
    if as_json:
        typer.echo(json.dumps(result))


def _table(result: dict[str, Any]) -> str:
    seeds = ", ".join(f"{v:.3f}" for v in result["hr1_per_seed"].values())
    members = f" (ensemble of {result['members']})" if result.get("members", 1) > 1 else ""
    return "\n".join(
        [
            f"{result['model']}{members} on {result['dataset']} / {result['split']}: {result['n_rows']} rows "
            f"({result['n_dropped']} dropped: {result['note']})",
            f"  HR@1 of 20    {result['hr1_mean']:.4f} ± {result['hr1_std']:.4f}  (seeds: {seeds})",
            f"  HR@1 expected {result['hr1_expected']:.4f}  (exact mean over all candidate draws)",
            f"  Hit@10        {result['hit10']:.4f}  (full ranking, history masked)",
            f"  NDCG@10       {result['ndcg10']:.4f}",
        ]
    )


def _open_dataset(name: str) -> Dataset:
    try:
        return Dataset.open(get_settings().datasets_dir, name)
    except DatasetNotFound as exc:
        _fail(str(exc))


def _parse_overrides(model: str, pairs: list[str]) -> dict[str, Any]:
    """KEY=VALUE strings -> typed values, using the field types of the model's config class."""
    try:
        fields = {
            f.name: f for f in (*dataclasses.fields(config_class(model)), *dataclasses.fields(TrainConfig))
        }
    except UnknownModelError as exc:
        raise typer.BadParameter(str(exc), param_hint="--model") from None
    parsed: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or key not in fields:
            raise typer.BadParameter(
                f"{pair!r}: expected KEY=VALUE with KEY one of {sorted(fields)}", param_hint="--set"
            )
        kind = _FIELD_PARSERS.get(str(fields[key].type), int)
        try:
            parsed[key] = kind(raw)
        except ValueError:
            raise typer.BadParameter(
                f"{pair!r}: {key} needs a {fields[key].type}", param_hint="--set"
            ) from None
    return parsed


def _parse_bool(raw: str) -> bool:
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(raw)


_FIELD_PARSERS: dict[str, Any] = {"float": float, "int": int, "bool": _parse_bool}


def _fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=1)
