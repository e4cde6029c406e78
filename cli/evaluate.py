"""`recloop eval table4|table5|rounds|ablation|position|bias`: the paper's experiments.

Every command writes a run directory (results.json, report.md, PNG plots, rows.jsonl for
resuming), prints the report, and with ``--json`` ends with one JSON line for other tools.
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import torch
import typer

from app.settings import Settings, get_settings
from cli.invocation import command_line
from graph.config import AGENT_MODES, AgentMode
from lab.eval.adapters import ModelBank
from lab.eval.common import (
    LLM_RUN_SETTINGS,
    EvalError,
    ExperimentOutput,
    RunDir,
    cost_section,
    results_envelope,
)
from lab.eval.loops import EvalContext
from recmodels.artifacts import ArtifactError
from recmodels.dataset import Dataset, DatasetError, DatasetNotFound, sha256_file
from recmodels.names import ID_MODEL_NAMES, MODEL_NAMES

PAPER_MODELS = ID_MODEL_NAMES  # table4's and bias's default rec models: the paper's three
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
LLM_WEIGHT_CHOICES = ("fitted", "obey")
LlmWeightsOpt = typer.Option(
    "fitted",
    "--llm-weights",
    help="With --agents llm: fitted (the weights fitted for the endpoint on validation, fitted first "
    "when it has none) or obey (the LLM's answers decide: measures the LLM itself, not the weighed loop).",
)
ProgressOpt = typer.Option(True, "--progress/--no-progress", help="Progress bars on stderr.")
# table5's own defaults of two shared options
Table5SeedsOpt = typer.Option(1, "--seeds", min=1, help="Seeds 0..N-1 drawing candidates and negatives.")
UsersimCandidatesOpt = typer.Option(
    None, "--candidates", help="AFL user-simulation file (lastfm_usersim/usersim_candidates_seed303.jsonl)."
)


@dataclass(frozen=True)
class EvalArgs:
    """The options every experiment takes, declared once (:func:`eval_command` adds them to each)."""

    dataset: str
    rec_model: list[str] | None
    agents: str
    seeds: int
    max_rows: int | None
    run_dir: Path | None
    candidates: Path | None
    as_json: bool
    concurrency: int
    progress: bool
    llm_weights: str = "fitted"

    @property
    def seed_range(self) -> tuple[int, ...]:
        """Candidate seeds 0..seeds-1."""
        return tuple(range(self.seeds))

    @property
    def candidates_file(self) -> str | None:
        return str(self.candidates) if self.candidates else None


def _shared_options(seeds: Any, candidates: Any) -> tuple[list[inspect.Parameter], list[inspect.Parameter]]:
    """The shared options as CLI parameters: those listed before a command's own, and after them."""

    def opt(name: str, annotation: Any, default: Any) -> inspect.Parameter:
        return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)

    before = [
        opt("dataset", str, DatasetOpt),
        opt("rec_model", list[str] | None, RecModelOpt),
        opt("agents", str, AgentsOpt),
        opt("seeds", int, seeds),
        opt("max_rows", int | None, MaxRowsOpt),
        opt("run_dir", Path | None, RunDirOpt),
        opt("candidates", Path | None, candidates),
    ]
    after = [
        opt("as_json", bool, JsonOpt),
        opt("concurrency", int, ConcurrencyOpt),
        opt("progress", bool, ProgressOpt),
        opt("llm_weights", str, LlmWeightsOpt),
    ]
    return before, after


def eval_command(
    eval_cli: typer.Typer, *, seeds: Any = SeedsOpt, candidates: Any = CandidatesOpt
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register ``body(args: EvalArgs, **own_options)`` as ``recloop eval <body name>``: its CLI
    parameters are the shared options (:class:`EvalArgs`) around the body's own, so ``--help``
    lists them all; ``seeds`` / ``candidates`` replace the defaults of those two options."""

    def register(body: Callable[..., None]) -> Callable[..., None]:
        own = [p for name, p in inspect.signature(body, eval_str=True).parameters.items() if name != "args"]
        before, after = _shared_options(seeds, candidates)
        shared = {f.name for f in fields(EvalArgs)}

        def command(**options: Any) -> None:
            body(EvalArgs(**{k: options.pop(k) for k in shared}), **options)

        params = [*before, *(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own), *after]
        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        command.__doc__ = body.__doc__
        command.__name__ = body.__name__
        eval_cli.command(body.__name__)(command)
        return body

    return register


def register(cli: typer.Typer, eval_cli: typer.Typer) -> None:
    """Add this area's commands to the top-level and `eval` command groups."""
    eval_command(eval_cli)(table4)
    eval_command(eval_cli, seeds=Table5SeedsOpt, candidates=UsersimCandidatesOpt)(table5)
    for body in (rounds, ablation, position, bias):
        eval_command(eval_cli)(body)


def _one_model(models: list[str] | None) -> str:
    chosen = _check_models(models, (get_settings().rec_model,))
    if len(chosen) != 1:
        raise typer.BadParameter("this experiment takes one --rec-model")
    return chosen[0]


def _check_models(models: list[str] | None, default: tuple[str, ...]) -> tuple[str, ...]:
    chosen = tuple(models) if models else default
    unknown = [m for m in chosen if m not in MODEL_NAMES]
    if unknown:
        raise typer.BadParameter(f"unknown rec model(s) {unknown}; choose from {MODEL_NAMES}")
    return chosen


def _check_agents(settings: Settings, agents: str) -> AgentMode:
    if agents not in AGENT_MODES:
        raise typer.BadParameter(f"--agents must be offline or llm, got {agents!r}")
    if agents == "llm" and not settings.llm_enabled:
        raise typer.BadParameter("--agents llm needs RECLOOP_LLM_BASE_URL (an OpenAI-compatible endpoint)")
    return agents  # type: ignore[return-value]


def base_config(
    settings: Settings, dataset: Dataset, experiment: str, agents: AgentMode, candidates: Path | None
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
    args: EvalArgs,
    *,
    extra_config: dict[str, Any],
    body: Callable[[EvalContext], ExperimentOutput],
    settings: Settings | None = None,
    models: ModelBank | None = None,
) -> ExperimentOutput:
    """Open the dataset and run dir, run ``body``, write results.json + report.md, print."""
    settings = settings or get_settings()
    kind = _check_agents(settings, args.agents)
    if args.llm_weights not in LLM_WEIGHT_CHOICES:
        raise typer.BadParameter(
            f"--llm-weights must be one of {', '.join(LLM_WEIGHT_CHOICES)}, got {args.llm_weights!r}"
        )
    candidates = args.candidates
    # Batch-of-one inference: extra intra-op threads only contend on a shared machine.
    torch.set_num_threads(settings.torch_threads)
    try:
        dataset = Dataset.open(settings.datasets_dir, args.dataset)
        config = base_config(settings, dataset, experiment, kind, candidates) | extra_config
        if kind == "llm":
            config["llm_weights"] = args.llm_weights
        run = RunDir.create(args.run_dir, settings.runs_dir, f"{experiment}-{dataset.name}", config)
    except (DatasetNotFound, EvalError, FileNotFoundError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    ctx = EvalContext(
        settings=settings,
        dataset=dataset,
        models=models or ModelBank(settings.models_dir),
        run=run,
        agents=kind,
        concurrency=args.concurrency,
        progress=args.progress,
        llm_weights=args.llm_weights,
    )
    started = time.perf_counter()
    try:
        with ctx.aio:  # one event loop for every batch of loops of the experiment
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
    reproduce = f"Reproduce: `{command_line()}`\n\n"
    run.write_report(
        reproduce + report + f"\n\nRun directory: `{run.path.name}`; settings in results.json.\n"
    )
    typer.echo(report)
    typer.echo(f"run directory: {run.path}")
    if args.as_json:
        typer.echo(json.dumps(output.json_line, sort_keys=True))
    return output


def table4(
    args: EvalArgs,
    draws: int | None = typer.Option(
        None,
        "--draws",
        min=1,
        help="Candidate draws per user for the expected HR@1 (seeds 0..N-1); default 20 with "
        "offline agents, only the --seeds draws with an LLM (each draw is a paid loop per row).",
    ),
) -> None:
    """Table 4: HR@1 of Model, Agent and FLOW for each rec model (default: all three), beside the
    reward model alone and the two-model ensembles, with paired 95 % intervals over users."""
    from lab.eval.table4 import Table4Options, run_table4

    options = Table4Options(
        rec_models=_check_models(args.rec_model, PAPER_MODELS),
        seeds=args.seed_range,
        max_rows=args.max_rows,
        candidates_file=args.candidates_file,
        draws=draws if draws is not None else (DEFAULT_DRAWS if args.agents == "offline" else args.seeds),
    )
    execute(
        "table4",
        args,
        extra_config={
            "rec_models": list(options.rec_models),
            "seeds": list(options.seeds),
            "draws": options.draws,
            "max_rows": args.max_rows,
        },
        body=lambda ctx: run_table4(ctx, options),
    )


def table5(
    args: EvalArgs,
) -> None:
    """Table 5: user simulation P/R/F1 of reward model, Agent and FLOW at 1:1, 1:3, 1:9."""
    from lab.eval.table5 import Table5Options, run_table5

    options = Table5Options(
        rec_model=_one_model(args.rec_model),
        seeds=args.seed_range,
        max_rows=args.max_rows,
        usersim_file=args.candidates_file,
    )
    execute(
        "table5",
        args,
        extra_config={
            "rec_model": options.rec_model,
            "seeds": list(options.seeds),
            "ratios": list(options.ratios),
            "n_eval": options.n_eval,
            "max_rows": args.max_rows,
        },
        body=lambda ctx: run_table5(ctx, options),
    )


def rounds(
    args: EvalArgs,
    usersim: Path | None = typer.Option(None, "--usersim", help="AFL user-simulation file (LastFM)."),
    round_limit: int = typer.Option(5, "--round-limit", min=1, max=20, help="Round limits 1..N."),
) -> None:
    """Fig. 3: HR@1 and user-simulation P/R/F1 for round limits 1..N (one plot each)."""
    from lab.eval.rounds import RoundsOptions, run_rounds

    options = RoundsOptions(
        rec_model=_one_model(args.rec_model),
        seeds=args.seed_range,
        max_round_limit=round_limit,
        max_rows=args.max_rows,
        candidates_file=args.candidates_file,
        usersim_file=str(usersim) if usersim else None,
    )
    execute(
        "rounds",
        args,
        extra_config={
            "rec_model": options.rec_model,
            "seeds": list(options.seeds),
            "round_limit": round_limit,
            "usersim_file": options.usersim_file,
            "max_rows": args.max_rows,
        },
        body=lambda ctx: run_rounds(ctx, options),
    )


def ablation(
    args: EvalArgs,
) -> None:
    """Table 6: Base, +Rec model, +Reward model, FLOW."""
    from lab.eval.ablation import AblationOptions, run_ablation

    options = AblationOptions(
        rec_model=_one_model(args.rec_model),
        seeds=args.seed_range,
        max_rows=args.max_rows,
        candidates_file=args.candidates_file,
    )
    execute(
        "ablation",
        args,
        extra_config={
            "rec_model": options.rec_model,
            "seeds": list(options.seeds),
            "max_rows": args.max_rows,
        },
        body=lambda ctx: run_ablation(ctx, options),
    )


def position(
    args: EvalArgs,
    round_limit: int = typer.Option(5, "--round-limit", min=1, max=20, help="Round limits 1..N."),
) -> None:
    """Fig. 5: target first / random / last in the candidate order, per round limit."""
    from lab.eval.position import PositionOptions, run_position

    options = PositionOptions(
        rec_model=_one_model(args.rec_model),
        seeds=args.seed_range,
        max_round_limit=round_limit,
        max_rows=args.max_rows,
        candidates_file=args.candidates_file,
    )
    execute(
        "position",
        args,
        extra_config={
            "rec_model": options.rec_model,
            "seeds": list(options.seeds),
            "round_limit": round_limit,
            "max_rows": args.max_rows,
        },
        body=lambda ctx: run_position(ctx, options),
    )


def bias(
    args: EvalArgs,
) -> None:
    """Popularity bias of Model vs FLOW picks: mean popularity percentile and Gini."""
    from lab.eval.bias import BiasOptions, run_bias

    options = BiasOptions(
        rec_models=_check_models(args.rec_model, PAPER_MODELS),
        seeds=args.seed_range,
        max_rows=args.max_rows,
        candidates_file=args.candidates_file,
    )
    execute(
        "bias",
        args,
        extra_config={
            "rec_models": list(options.rec_models),
            "seeds": list(options.seeds),
            "max_rows": args.max_rows,
        },
        body=lambda ctx: run_bias(ctx, options),
    )
