"""`recloop` commands of the graph area: `recloop simulate`."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
from typing import NoReturn

import torch
import typer

from app.settings import get_settings
from graph.config import AGENT_MODES
from graph.runner import LoopResult, default_candidates, run_loop
from graph.transcript import format_transcript
from lab.calibration.deps import calibrated_deps
from recmodels.artifacts import ArtifactError, load_latest_scorer
from recmodels.candidates import sample_candidates
from recmodels.dataset import Dataset, DatasetNotFound
from recmodels.registry import MODEL_NAMES


def register(cli: typer.Typer, eval_cli: typer.Typer) -> None:
    """Add this area's commands to the top-level and `eval` command groups."""
    cli.command("simulate")(simulate_command)


def simulate_command(
    dataset: str = typer.Option(..., "--dataset", help="Dataset name under the data dir's datasets/."),
    user_row: int = typer.Option(..., "--user-row", min=0, help="0-based row of the split's file."),
    agents: str = typer.Option("offline", "--agents", help="offline | llm (needs RECLOOP_LLM_BASE_URL)."),
    rec_model: str | None = typer.Option(
        None, "--rec-model", help=f"One of {MODEL_NAMES}; default settings."
    ),
    max_rounds: int | None = typer.Option(None, "--max-rounds", min=1, help="Default: settings (4)."),
    split: str = typer.Option("test", "--split", help="train | val | test."),
    candidates_from: str = typer.Option(
        "sampled",
        "--candidates",
        help="sampled: target + random items (LLaRA protocol); top: rec model's top-k.",
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the sampled candidate list."),
    as_json: bool = typer.Option(False, "--json", help="Also print the result as one JSON line (last line)."),
) -> None:
    """Run one feedback loop on a dataset row and print it as a transcript."""
    settings = get_settings()
    torch.set_num_threads(settings.torch_threads)
    if agents not in AGENT_MODES:
        _fail(f"--agents: must be offline or llm, got {agents!r}")
    if agents == "llm" and not settings.llm_enabled:
        _fail("--agents llm: set RECLOOP_LLM_BASE_URL to an OpenAI-compatible endpoint")
    if candidates_from not in ("sampled", "top"):
        _fail(f"--candidates: must be sampled or top, got {candidates_from!r}")
    try:
        catalog = Dataset.open(settings.datasets_dir, dataset)
        rows = catalog.rows(split)
        rec = load_latest_scorer(settings.models_dir, catalog, rec_model or settings.rec_model)
        reward = load_latest_scorer(settings.models_dir, catalog, settings.reward_model)
    except (DatasetNotFound, ArtifactError, ValueError) as exc:
        _fail(str(exc))
    if user_row >= len(rows):
        _fail(f"--user-row: {user_row} is past the last row of {dataset}/{split} ({len(rows) - 1})")
    row = rows[user_row]
    history = list(row.history)

    weights: list[str] = []

    async def simulate() -> tuple[list[int], LoopResult]:
        deps = await calibrated_deps(settings.loop_config(), catalog, rec, reward, agents)  # type: ignore[arg-type]
        if deps.llm_weights is not None:
            weights.append(deps.llm_weights.status)
        if candidates_from == "sampled":
            rng = random.Random(seed)
            candidates = sample_candidates(history, row.next, catalog.n_items, rng, n=settings.n_candidates)
        else:
            candidates = default_candidates(deps, history)
        return candidates, await run_loop(deps, history, candidates, max_rounds)

    candidates, result = asyncio.run(simulate())
    typer.echo(f"{dataset} {split} row {user_row}: {agents} agents, rec model {rec.info.model_name}")
    if weights:
        typer.echo(f"LLM weights: {weights[0]}")
    typer.echo(format_transcript(catalog, result, history, candidates, target=row.next))
    if as_json:
        extra = {"llm_weights": weights[0]} if weights else {}
        typer.echo(
            json.dumps({"candidates": candidates, "target": row.next, **extra, **dataclasses.asdict(result)})
        )


def _fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)
