"""`recloop eval table4|table5|rounds|ablation|position|bias`: the paper's experiments.

Every command writes a run directory (results.json, report.md, PNG plots, rows.jsonl for
resuming), prints the report, and with ``--json`` ends with one JSON line for other tools.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import typer

from app.data.dataset import Dataset, DatasetError, DatasetNotFound, sha256_file
from app.eval.adapters import AgentKind, ModelBank
from app.eval.common import (
    LLM_RUN_SETTINGS,
    EvalError,
    ExperimentOutput,
    RunDir,
    cost_section,
    results_envelope,
)
from app.eval.loops import EvalContext
from app.settings import Settings, get_settings
from recmodels.artifacts import ArtifactError
from recmodels.registry import ID_MODEL_NAMES, MODEL_NAMES

MODEL_CHOICES = MODEL_NAMES  # any of them as --rec-model; table4 and bias default to the paper's three
PAPER_MODELS = ID_MODEL_NAMES
DEFAULT_DRAWS = 20  # table4's candidate draws per user for the expected HR@1 (offline agents)

DatasetOpt = typer.Option(..., "--dataset", help="Dataset name under the data dir (e.g. lastfm, movielens).")
RecModelOpt = typer.Option(None, "--rec-model", help=f"{' | '.join(MODEL_NAMES)} (repeatable).")
AgentsOpt = typer.Option("offline", "--agents", help="offline (deterministic) or llm (settings' endpoint).")
SeedsOpt = typer.Option(5, "--seeds", min=1, help="Candidate seeds 0..N-1 (mean and spread over them).")
MaxRowsOpt = typer.Option(None, "--max-rows", min=1, help="Only the first N evaluation rows.")
RunDirOpt = typer.Option(None, "--run-dir", help="Run directory; an existing one is resumed.")
CandidatesOpt = typer.Option(
    None, "--candidates", help="Candidate file instead of sampling (e.g. the shared seed-303 file)."
)
JsonOpt = typer.Option(False, "--json", help="End the output with one machine-readable JSON line.")
ConcurrencyOpt = typer.Option(4, "--concurrency", min=1, help="Rows run at once with LLM agents.")
ProgressOpt = typer.Option(True, "--progress/--no-progress", help="Progress bars on stderr.")


def register(cli: typer.Typer, eval_cli: typer.Typer) -> None:
    """Add this area's commands to the top-level and `eval` command groups."""
    for command in (table4, table5, rounds, ablation, position, bias):
        eval_cli.command(command.__name__)(command)


def _one_model(models: list[str] | None) -> str:
    chosen = _check_models(models, (get_settings().rec_model,))
    if len(chosen) != 1:
        raise typer.BadParameter("this experiment takes one --rec-model")
    return chosen[0]


def _check_models(models: list[str] | None, default: tuple[str, ...]) -> tuple[str, ...]:
    chosen = tuple(models) if models else default
    unknown = [m for m in chosen if m not in MODEL_CHOICES]
    if unknown:
        raise typer.BadParameter(f"unknown rec model(s) {unknown}; choose from {MODEL_CHOICES}")
    return chosen


def _check_agents(settings: Settings, agents: str) -> AgentKind:
    if agents not in ("offline", "llm"):
        raise typer.BadParameter(f"--agents must be offline or llm, got {agents!r}")
    if agents == "llm" and not settings.llm_enabled:
        raise typer.BadParameter("--agents llm needs RECLOOP_LLM_BASE_URL (an OpenAI-compatible endpoint)")
    return agents  # type: ignore[return-value]


def base_config(
    settings: Settings, dataset: Dataset, experiment: str, agents: AgentKind, candidates: Path | None
) -> dict[str, Any]:
    """The settings that decide a run's numbers: stored in config.json and results.json."""
    config: dict[str, Any] = {
        "experiment": experiment,
        "dataset": dataset.name,
        "dataset_fingerprint": dataset.fingerprint,
        "agents": agents,
        "reward_model": settings.reward_model,
        "max_rounds": settings.max_rounds,
        "n_candidates": settings.n_candidates,
        "accept_top_k": settings.accept_top_k,
        "reward_display": settings.reward_display,
        "candidates_file": str(candidates) if candidates else None,
        "candidates_sha256": sha256_file(candidates) if candidates else None,
    }
    if agents == "llm":
        config |= {name: getattr(settings, name) for name in LLM_RUN_SETTINGS}
    return config


def execute(
    experiment: str,
    *,
    dataset_name: str,
    agents: str,
    run_dir: Path | None,
    candidates: Path | None,
    as_json: bool,
    concurrency: int,
    progress: bool,
    extra_config: dict[str, Any],
    body: Callable[[EvalContext], ExperimentOutput],
    settings: Settings | None = None,
    models: ModelBank | None = None,
) -> ExperimentOutput:
    """Open the dataset and run dir, run ``body``, write results.json + report.md, print."""
    settings = settings or get_settings()
    kind = _check_agents(settings, agents)
    # Batch-of-one inference: extra intra-op threads only contend on a shared machine.
    torch.set_num_threads(settings.torch_threads)
    try:
        dataset = Dataset.open(settings.datasets_dir, dataset_name)
        config = base_config(settings, dataset, experiment, kind, candidates) | extra_config
        run = RunDir.create(run_dir, settings.runs_dir, f"{experiment}-{dataset.name}", config)
    except (DatasetNotFound, EvalError, FileNotFoundError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    ctx = EvalContext(
        settings=settings,
        dataset=dataset,
        models=models or ModelBank(settings.models_dir),
        run=run,
        agents=kind,
        concurrency=concurrency,
        progress=progress,
    )
    started = time.perf_counter()
    try:
        output = body(ctx)
    except (ArtifactError, DatasetError, EvalError) as exc:
        # Rows finished so far stay in rows.jsonl: fixing the cause and rerunning resumes.
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    wall_s = time.perf_counter() - started
    results = results_envelope(
        experiment, config, models=ctx.models.fingerprints(), wall_seconds=round(wall_s, 2), **output.results
    )
    run.write_results(results)
    report = output.report + cost_section(output.results, wall_s)
    run.write_report(report + f"\n\nRun directory: `{run.path.name}`; settings in results.json.\n")
    typer.echo(report)
    typer.echo(f"run directory: {run.path}")
    if as_json:
        typer.echo(json.dumps(output.json_line, sort_keys=True))
    return output


def table4(
    dataset: str = DatasetOpt,
    rec_model: list[str] | None = RecModelOpt,
    agents: str = AgentsOpt,
    seeds: int = SeedsOpt,
    max_rows: int | None = MaxRowsOpt,
    run_dir: Path | None = RunDirOpt,
    candidates: Path | None = CandidatesOpt,
    draws: int | None = typer.Option(
        None,
        "--draws",
        min=1,
        help="Candidate draws per user for the expected HR@1 (seeds 0..N-1); default 20 with "
        "offline agents, only the --seeds draws with an LLM (each draw is a paid loop per row).",
    ),
    as_json: bool = JsonOpt,
    concurrency: int = ConcurrencyOpt,
    progress: bool = ProgressOpt,
) -> None:
    """Table 4: HR@1 of Model, Agent and FLOW for each rec model (default: all three), beside the
    reward model alone and the two-model ensembles, with paired 95 % intervals over users."""
    from app.eval.table4 import Table4Options, run_table4

    options = Table4Options(
        rec_models=_check_models(rec_model, PAPER_MODELS),
        seeds=tuple(range(seeds)),
        max_rows=max_rows,
        candidates_file=str(candidates) if candidates else None,
        draws=draws if draws is not None else (DEFAULT_DRAWS if agents == "offline" else seeds),
    )
    execute(
        "table4",
        dataset_name=dataset,
        agents=agents,
        run_dir=run_dir,
        candidates=candidates,
        as_json=as_json,
        concurrency=concurrency,
        progress=progress,
        extra_config={
            "rec_models": list(options.rec_models),
            "seeds": list(options.seeds),
            "draws": options.draws,
            "max_rows": max_rows,
        },
        body=lambda ctx: run_table4(ctx, options),
    )


def table5(
    dataset: str = DatasetOpt,
    rec_model: list[str] | None = RecModelOpt,
    agents: str = AgentsOpt,
    seeds: int = typer.Option(1, "--seeds", min=1, help="Seeds 0..N-1 drawing candidates and negatives."),
    max_rows: int | None = MaxRowsOpt,
    run_dir: Path | None = RunDirOpt,
    candidates: Path | None = typer.Option(
        None,
        "--candidates",
        help="AFL user-simulation file (lastfm_usersim/usersim_candidates_seed303.jsonl).",
    ),
    as_json: bool = JsonOpt,
    concurrency: int = ConcurrencyOpt,
    progress: bool = ProgressOpt,
) -> None:
    """Table 5: user simulation P/R/F1 of reward model, Agent and FLOW at 1:1, 1:3, 1:9."""
    from app.eval.table5 import Table5Options, run_table5

    options = Table5Options(
        rec_model=_one_model(rec_model),
        seeds=tuple(range(seeds)),
        max_rows=max_rows,
        usersim_file=str(candidates) if candidates else None,
    )
    execute(
        "table5",
        dataset_name=dataset,
        agents=agents,
        run_dir=run_dir,
        candidates=candidates,
        as_json=as_json,
        concurrency=concurrency,
        progress=progress,
        extra_config={
            "rec_model": options.rec_model,
            "seeds": list(options.seeds),
            "ratios": list(options.ratios),
            "n_eval": options.n_eval,
            "max_rows": max_rows,
        },
        body=lambda ctx: run_table5(ctx, options),
    )


def rounds(
    dataset: str = DatasetOpt,
    rec_model: list[str] | None = RecModelOpt,
    agents: str = AgentsOpt,
    seeds: int = SeedsOpt,
    max_rows: int | None = MaxRowsOpt,
    run_dir: Path | None = RunDirOpt,
    candidates: Path | None = CandidatesOpt,
    usersim: Path | None = typer.Option(None, "--usersim", help="AFL user-simulation file (LastFM)."),
    round_limit: int = typer.Option(5, "--round-limit", min=1, max=20, help="Round limits 1..N."),
    as_json: bool = JsonOpt,
    concurrency: int = ConcurrencyOpt,
    progress: bool = ProgressOpt,
) -> None:
    """Fig. 3: HR@1 and user-simulation P/R/F1 for round limits 1..N (one plot each)."""
    from app.eval.rounds import RoundsOptions, run_rounds

    options = RoundsOptions(
        rec_model=_one_model(rec_model),
        seeds=tuple(range(seeds)),
        max_round_limit=round_limit,
        max_rows=max_rows,
        candidates_file=str(candidates) if candidates else None,
        usersim_file=str(usersim) if usersim else None,
    )
    execute(
        "rounds",
        dataset_name=dataset,
        agents=agents,
        run_dir=run_dir,
        candidates=candidates,
        as_json=as_json,
        concurrency=concurrency,
        progress=progress,
        extra_config={
            "rec_model": options.rec_model,
            "seeds": list(options.seeds),
            "round_limit": round_limit,
            "usersim_file": options.usersim_file,
            "max_rows": max_rows,
        },
        body=lambda ctx: run_rounds(ctx, options),
    )


def ablation(
    dataset: str = DatasetOpt,
    rec_model: list[str] | None = RecModelOpt,
    agents: str = AgentsOpt,
    seeds: int = SeedsOpt,
    max_rows: int | None = MaxRowsOpt,
    run_dir: Path | None = RunDirOpt,
    candidates: Path | None = CandidatesOpt,
    as_json: bool = JsonOpt,
    concurrency: int = ConcurrencyOpt,
    progress: bool = ProgressOpt,
) -> None:
    """Table 6: Base, +Rec model, +Reward model, FLOW."""
    from app.eval.ablation import AblationOptions, run_ablation

    options = AblationOptions(
        rec_model=_one_model(rec_model),
        seeds=tuple(range(seeds)),
        max_rows=max_rows,
        candidates_file=str(candidates) if candidates else None,
    )
    execute(
        "ablation",
        dataset_name=dataset,
        agents=agents,
        run_dir=run_dir,
        candidates=candidates,
        as_json=as_json,
        concurrency=concurrency,
        progress=progress,
        extra_config={"rec_model": options.rec_model, "seeds": list(options.seeds), "max_rows": max_rows},
        body=lambda ctx: run_ablation(ctx, options),
    )


def position(
    dataset: str = DatasetOpt,
    rec_model: list[str] | None = RecModelOpt,
    agents: str = AgentsOpt,
    seeds: int = SeedsOpt,
    max_rows: int | None = MaxRowsOpt,
    run_dir: Path | None = RunDirOpt,
    candidates: Path | None = CandidatesOpt,
    round_limit: int = typer.Option(5, "--round-limit", min=1, max=20, help="Round limits 1..N."),
    as_json: bool = JsonOpt,
    concurrency: int = ConcurrencyOpt,
    progress: bool = ProgressOpt,
) -> None:
    """Fig. 5: target first / random / last in the candidate order, per round limit."""
    from app.eval.position import PositionOptions, run_position

    options = PositionOptions(
        rec_model=_one_model(rec_model),
        seeds=tuple(range(seeds)),
        max_round_limit=round_limit,
        max_rows=max_rows,
        candidates_file=str(candidates) if candidates else None,
    )
    execute(
        "position",
        dataset_name=dataset,
        agents=agents,
        run_dir=run_dir,
        candidates=candidates,
        as_json=as_json,
        concurrency=concurrency,
        progress=progress,
        extra_config={
            "rec_model": options.rec_model,
            "seeds": list(options.seeds),
            "round_limit": round_limit,
            "max_rows": max_rows,
        },
        body=lambda ctx: run_position(ctx, options),
    )


def bias(
    dataset: str = DatasetOpt,
    rec_model: list[str] | None = RecModelOpt,
    agents: str = AgentsOpt,
    seeds: int = SeedsOpt,
    max_rows: int | None = MaxRowsOpt,
    run_dir: Path | None = RunDirOpt,
    candidates: Path | None = CandidatesOpt,
    as_json: bool = JsonOpt,
    concurrency: int = ConcurrencyOpt,
    progress: bool = ProgressOpt,
) -> None:
    """Popularity bias of Model vs FLOW picks: mean popularity percentile and Gini."""
    from app.eval.bias import BiasOptions, run_bias

    options = BiasOptions(
        rec_models=_check_models(rec_model, PAPER_MODELS),
        seeds=tuple(range(seeds)),
        max_rows=max_rows,
        candidates_file=str(candidates) if candidates else None,
    )
    execute(
        "bias",
        dataset_name=dataset,
        agents=agents,
        run_dir=run_dir,
        candidates=candidates,
        as_json=as_json,
        concurrency=concurrency,
        progress=progress,
        extra_config={
            "rec_models": list(options.rec_models),
            "seeds": list(options.seeds),
            "max_rows": max_rows,
        },
        body=lambda ctx: run_bias(ctx, options),
    )
