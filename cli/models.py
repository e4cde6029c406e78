"""`recloop` commands of the models area: `recloop train` and `recloop eval model`."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, NoReturn

import torch
import typer

from app.settings import get_settings
from cli.invocation import command_line
from lab.eval.common import EvalError, RunDir, results_envelope
from lab.eval.metrics import Interval, bootstrap_interval, paired_interval
from lab.eval.model_report import model_report
from recmodels.artifacts import ArtifactError, load_latest_scorer, load_scorer
from recmodels.coldstart import cold_artifact_path, cold_rows, held_out_items, pool_results
from recmodels.dataset import Dataset, DatasetNotFound
from recmodels.evaluation import DEFAULT_SEEDS, evaluate_model
from recmodels.registry import MODEL_NAMES, UnknownModelError, config_class, make_train_config
from recmodels.scorer import Scorer
from recmodels.text import TextEncoderUnavailable, embedding_cache_path
from recmodels.train_config import TrainConfig, resolve_device
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
    device: str = typer.Option(
        "auto", "--device", help="auto (a CUDA GPU when torch sees one), cpu or cuda."
    ),
) -> None:
    """Train a model (selected on validation) and save it; the last line is a JSON object of metrics.

    With --members K the artifact is a seed ensemble scored by the mean of the members' log-softmax.
    """
    settings = get_settings()
    torch.set_num_threads(settings.torch_threads)
    data = _open_dataset(dataset)
    config_overrides = _parse_overrides(model, overrides)
    try:
        resolve_device(device)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--device") from None
    try:
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
            text_cache=embedding_cache_path(settings.data_dir, data.name, data.fingerprint),
            device=device,
        )
    except TextEncoderUnavailable as exc:
        _fail(str(exc))
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
    compare: list[str] = typer.Option(
        [],
        "--compare",
        help="Another model (repeatable): paired differences on the same users and candidates, "
        "with 95 % bootstrap intervals.",
    ),
    cold_items: float | None = typer.Option(
        None,
        "--cold-items",
        min=0.0,
        max=1.0,
        help="Cold-start protocol: hold out this share of items (fixed seed), train every model without "
        "the rows whose target is held out (artifacts under models/DATASET/cold/, reused), evaluate on "
        "the split's rows whose target is held out.",
    ),
    cold_seeds: int = typer.Option(
        1,
        "--cold-seeds",
        min=1,
        help="Cold-start: repeat the hold-out with seeds 0..K-1 (each its own items and models) and pool "
        "their cold rows.",
    ),
    epochs: int | None = typer.Option(None, "--epochs", min=1, help="Cold-start training: epochs cap."),
    max_train_rows: int | None = typer.Option(
        None, "--max-train-rows", min=1, help="Cold-start training: the first N training rows."
    ),
    retrain: bool = typer.Option(False, "--retrain", help="Cold-start: train even if an artifact exists."),
    overrides: list[str] = typer.Option(
        [],
        "--set",
        help="Cold-start training of --model: config override KEY=VALUE on top of its preset (repeatable; "
        "its artifacts are kept apart, named by the overrides).",
    ),
    run_dir: Path | None = typer.Option(
        None, "--run-dir", help="Where results.json, report.md and the plot go (default: new, under runs/)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Also print one JSON object as the last line."),
) -> None:
    """HR@1-of-20 (mean/std over 5 candidate seeds), the exact expected HR@1 with its 95 % bootstrap
    interval over users, full-ranking Hit@10 and NDCG@10; paired differences with --compare. Writes
    a run directory: results.json, report.md (the paper's numbers beside ours) and an interval plot."""
    settings = get_settings()
    torch.set_num_threads(settings.torch_threads)
    if split not in ("val", "test"):
        raise typer.BadParameter(f"split must be val or test, got {split!r}", param_hint="--split")
    data = _open_dataset(dataset)
    names = [model, *[m for m in compare if m != model]]
    if overrides and cold_items is None:
        raise typer.BadParameter("only for cold-start training (with --cold-items)", param_hint="--set")
    config_overrides = _parse_overrides(model, overrides)
    cold: dict[str, Any] = {}
    try:
        if cold_items is not None:
            results, cold = _cold_results(
                data, names, split, cold_items, range(cold_seeds), {model: config_overrides},
                epochs=epochs, max_train_rows=max_train_rows, retrain=retrain,
            )  # fmt: skip
        else:
            scorers = {m: load_latest_scorer(settings.models_dir, data, m) for m in names}
            results = {m: evaluate_model(scorers[m], data, split=split, seeds=DEFAULT_SEEDS) for m in names}
    except (ArtifactError, TextEncoderUnavailable, UnknownModelError) as exc:
        _fail(str(exc))
    summaries = {m: _with_intervals(results[m]) for m in names}
    result = dict(summaries[model])
    if cold:
        result["cold_start"] = cold
    paired = {other: _paired(results[model], results[other]) for other in names[1:]}
    if paired:
        result["compare"] = paired
    config = {
        "experiment": "model", "dataset": data.name, "dataset_fingerprint": data.fingerprint,
        "split": split, "model": model, "compare": names[1:], "cold_items": cold_items,
        "cold_seeds": cold_seeds, "overrides": config_overrides,
    }  # fmt: skip
    try:
        run = RunDir.create(run_dir, settings.runs_dir, f"model-{data.name}", config)
    except EvalError as exc:
        _fail(str(exc))
    run.write_results(results_envelope("model", config, results=summaries, compare=paired, cold_start=cold))
    report = model_report(run.path, summaries, paired, dataset=data.name, split=split, cold=cold)
    run.write_report(f"Reproduce: `{command_line()}`\n\n{report}")
    result["run_dir"] = str(run.path)
    typer.echo(_table(result))
    for other, diff in paired.items():
        typer.echo(_paired_line(model, other, diff))
    typer.echo(f"run directory: {run.path}")
    if as_json:
        typer.echo(json.dumps(result))


def _cold_results(
    data: Dataset,
    names: list[str],
    split: str,
    fraction: float,
    seeds: range,
    overrides: dict[str, dict[str, Any]],
    **train_opts: Any,
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Each model's result on the split's rows whose target is held out, pooled over the hold-out
    seeds (each seed: its own held-out items and its own models), and what was held out.
    ``overrides[m]``: config overrides of model ``m``'s cold-start training."""
    per_seed: dict[str, list[dict[str, Any]]] = {m: [] for m in names}
    held_outs = {seed: held_out_items(data.n_items, fraction, seed) for seed in seeds}
    rows = {seed: cold_rows(data.eval_rows(split)[0], held) for seed, held in held_outs.items()}
    if not any(rows.values()):
        _fail(f"no {split} row of {data.name} has a held-out target; hold out a larger share or more seeds")
    for seed, held in held_outs.items():
        if rows[seed]:
            for m in names:
                scorer = _cold_scorer(data, m, fraction, held, seed, overrides.get(m, {}), **train_opts)
                result = evaluate_model(scorer, data, split=split, seeds=DEFAULT_SEEDS, rows=rows[seed])
                per_seed[m].append(result)
    cold = {
        "fraction": fraction,
        "seed": seeds[0],  # the first hold-out seed; "seeds" lists them all
        "seeds": list(seeds),
        "held_out_items": len(held_outs[seeds[0]]),  # per hold-out
        "rows": sum(len(r) for r in rows.values()),  # pooled over the hold-outs
        "rows_per_seed": [len(rows[seed]) for seed in seeds],
        **({"overrides": overrides} if any(overrides.values()) else {}),
    }
    return {m: pool_results(per_seed[m]) for m in names}, cold


def _cold_scorer(
    data: Dataset,
    model: str,
    fraction: float,
    held: frozenset[int],
    seed: int,
    overrides: dict[str, Any],
    *,
    epochs: int | None,
    max_train_rows: int | None,
    retrain: bool,
) -> Scorer:
    """The model trained under the cold-start protocol: its artifact if there is one, else trained."""
    settings = get_settings()
    path = cold_artifact_path(settings.models_dir, data.name, model, fraction, seed, overrides)
    if retrain or not path.is_file():
        train(
            data,
            model,
            models_dir=settings.models_dir,
            epochs=epochs,
            max_train_rows=max_train_rows,
            output_path=path,
            text_cache=embedding_cache_path(settings.data_dir, data.name, data.fingerprint),
            drop_targets=held,
            config_overrides=overrides,
            progress=False,
        )
    return load_scorer(path, data)


def _with_intervals(result: dict[str, Any]) -> dict[str, Any]:
    """The result without its per-row lists, plus 95 % bootstrap intervals over users."""
    out = {k: v for k, v in result.items() if k != "per_row"}
    per_row = result["per_row"]
    out["hr1_expected_ci95"] = list(bootstrap_interval(per_row["hr1_expected"]))
    out["hr1_sampled_ci95"] = list(bootstrap_interval(per_row["hr1_sampled"]))
    return out


def _paired(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """``a`` minus ``b`` user by user (same rows, same candidate draws), with bootstrap intervals."""
    out: dict[str, Any] = {"other_hr1_expected": b["hr1_expected"], "other_hr1_mean": b["hr1_mean"]}
    out["other_hr1_expected_ci95"] = list(bootstrap_interval(b["per_row"]["hr1_expected"]))
    for key in ("hr1_expected", "hr1_sampled"):
        diffs = [x - y for x, y in zip(a["per_row"][key], b["per_row"][key], strict=True)]
        out[f"{key}_diff"] = paired_interval(diffs).to_json()
    return out


def _paired_line(model: str, other: str, diff: dict[str, Any]) -> str:
    exp, smp = Interval(**diff["hr1_expected_diff"]), Interval(**diff["hr1_sampled_diff"])
    return (
        f"  {model} - {other} (paired, same users and candidates; {other} expected "
        f"{diff['other_hr1_expected']:.4f}): expected {exp}, 5-seed sampled {smp}"
    )


def _table(result: dict[str, Any]) -> str:
    seeds = ", ".join(f"{v:.3f}" for v in result["hr1_per_seed"].values())
    members = f" (ensemble of {result['members']})" if result.get("members", 1) > 1 else ""
    return "\n".join(
        [
            f"{result['model']}{members} on {result['dataset']} / {result['split']}: {result['n_rows']} rows "
            f"({result['n_dropped']} dropped: {result['note']})",
            f"  HR@1 of 20    {result['hr1_mean']:.4f} ± {result['hr1_std']:.4f}  (seeds: {seeds})",
            f"  HR@1 expected {result['hr1_expected']:.4f}  (exact mean over all candidate draws)"
            + _ci(result.get("hr1_expected_ci95")),
            f"  Hit@10        {result['hit10']:.4f}  (full ranking, history masked)",
            f"  NDCG@10       {result['ndcg10']:.4f}",
        ]
    )


def _ci(interval: list[float] | None) -> str:
    return f"  95 % bootstrap [{interval[0]:.4f}, {interval[1]:.4f}]" if interval else ""


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
    try:  # the configs' own checks (e.g. a choice among names), before anything trains
        make_train_config(model, **parsed)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--set") from None
    return parsed


def _parse_bool(raw: str) -> bool:
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(raw)


_FIELD_PARSERS: dict[str, Any] = {"float": float, "int": int, "bool": _parse_bool, "str": str}


def _fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=1)
