"""`recloop calibrate`: learn on the validation split how much each agent's evidence counts."""

from __future__ import annotations

import asyncio
import json
from typing import Any, NoReturn

import torch
import typer

from app.settings import get_settings
from graph.agents.llm_evidence import PROMPT_FORMS
from graph.item_vectors import available_backends
from lab.calibration.llm import DEFAULT_ROWS
from lab.calibration.offline import ensure_loop_calibration
from lab.eval.llm_calibrate import calibrate_llm
from recmodels.artifacts import ArtifactError, load_latest_scorer
from recmodels.dataset import Dataset, DatasetNotFound


def register(cli: typer.Typer, eval_cli: typer.Typer) -> None:
    """Add this area's commands to the top-level and `eval` command groups."""
    cli.command("calibrate")(calibrate_command)


def calibrate_command(
    dataset: str = typer.Option(..., "--dataset", help="Dataset name under the data dir's datasets/."),
    agents: str = typer.Option(
        "llm",
        "--agents",
        help="llm: the LLM weights of the configured endpoint; offline: the offline agents'.",
    ),
    rows: int = typer.Option(DEFAULT_ROWS, "--rows", min=1, help="Validation rows to ask about."),
    budget_calls: int | None = typer.Option(
        None,
        "--budget-calls",
        min=1,
        help="Stop after this many LLM calls (answers are kept: rerun to resume).",
    ),
    forms: str = typer.Option(
        ",".join(PROMPT_FORMS), "--forms", help=f"Prompt forms to try: {PROMPT_FORMS}."
    ),
    items: bool = typer.Option(True, "--items/--no-items", help="Also fit the user-simulation weight."),
    items_rows: int | None = typer.Option(
        None, "--items-rows", min=1, help="Fit the user-simulation weight on the first N rows only."
    ),
    refit: bool = typer.Option(
        False, "--refit", help="Fit again even if weights are stored for this endpoint."
    ),
    concurrency: int = typer.Option(
        1, "--concurrency", min=1, help="Validation rows asked at once (up to the server's slots)."
    ),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar on stderr."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object (last line)."),
) -> None:
    """Fit the weights on validation rows and store them beside the offline calibration."""
    settings = get_settings()
    torch.set_num_threads(settings.torch_threads)
    if agents not in ("llm", "offline"):
        _fail(f"--agents: must be llm or offline, got {agents!r}")
    if agents == "llm" and not settings.llm_enabled:
        _fail("--agents llm: set RECLOOP_LLM_BASE_URL to an OpenAI-compatible endpoint")
    chosen = [f.strip() for f in forms.split(",") if f.strip()]
    unknown = [f for f in chosen if f not in PROMPT_FORMS]
    if unknown or not chosen:
        _fail(f"--forms: must be a comma-separated subset of {PROMPT_FORMS}, got {forms!r}")
    try:
        catalog = Dataset.open(settings.datasets_dir, dataset)
        rec = load_latest_scorer(settings.models_dir, catalog, settings.rec_model)
        reward = load_latest_scorer(settings.models_dir, catalog, settings.reward_model)
    except (DatasetNotFound, ArtifactError, ValueError) as exc:
        _fail(str(exc))
    config = settings.loop_config()
    echo = (lambda line: typer.echo(line, err=True)) if as_json else typer.echo
    if agents == "offline":
        calibration = asyncio.run(
            ensure_loop_calibration(config, catalog, rec, reward, available_backends(catalog))
        )
        result: dict[str, Any] = {
            "agents": "offline",
            "dataset": dataset,
            "calibration": calibration.summary(),
        }
    else:
        run = asyncio.run(
            calibrate_llm(
                config,
                catalog,
                rec,
                reward,
                n_rows=rows,
                budget_calls=budget_calls,
                forms=chosen,  # type: ignore[arg-type]
                items=items,
                refit=refit,
                progress=progress,
                echo=echo,
                concurrency=concurrency,
                items_rows=items_rows,
            )
        )
        result = {"agents": "llm", "dataset": dataset, **run.summary()}
        echo(f"LLM weights: {result['status']}" + (" (stored before)" if run.reused else ""))
        if run.weights is not None and not run.reused:
            for form, report in run.weights.provenance.get("forms", {}).items():
                echo(
                    f"  form {form}: weight {report['rec_weight']:g}, val HR@1 {report['val_hr1']:.3f} "
                    f"(offline {report['val_hr1_offline']:.3f}), first-attempt valid "
                    f"{report['first_attempt_valid_rate']:.2f}, "
                    f"LLM's own hit rate {report['llm_hit_rate']:.3f}"
                )
    if as_json:
        typer.echo(json.dumps(result, default=str))
    elif agents == "offline":
        typer.echo(json.dumps(result["calibration"], indent=2))
    if agents == "llm" and result["weights"] is None:
        raise typer.Exit(3)  # budget spent before the fit could finish


def _fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)
