"""`recloop eval commands`: natural-language steering measured with simulated commands.

Writes a run directory (config.json, results.json with per-command rows and per-kind
summaries, report.md), prints the report, and with ``--json`` ends with one JSON line:
{"csr1", "csr10", "csr20", "hr1_before", "hr1_after", "recall10_before", "recall10_after",
"parser_failure_rate", "parser_fallback_rate", "n_commands"}.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Literal

import torch
import typer
from tqdm import tqdm

from app.cli.invocation import command_line
from app.eval.common import LLM_RUN_SETTINGS, EvalError, RunDir, cost_section, results_envelope
from app.eval.plots import caption, save_chart
from app.eval.steering import (
    CommandEvalError,
    commands_chart,
    evaluation_rows,
    report,
    run_command_eval,
    summarize,
)
from app.settings import Settings, get_settings
from app.steering.llm_parser import LLMParser
from app.steering.parser import CommandParser, OfflineParser
from app.steering.planner import PlanWeights
from graph.state import sum_usage
from graph.steering.similarity import (
    SimilarityBackend,
    SimilarityUnavailable,
    embedding_cache_path,
    load_similarity,
)
from recmodels.artifacts import code_version, load_latest_scorer
from recmodels.dataset import Dataset, DatasetNotFound

ParserKind = Literal["offline", "llm"]


def register(cli: typer.Typer, eval_cli: typer.Typer) -> None:
    """Add this area's commands to the top-level and `eval` command groups."""
    eval_cli.command("commands")(commands)


def commands(
    dataset: str = typer.Option(..., "--dataset", help="Dataset with genre/year attributes (movielens)."),
    rec_model: str | None = typer.Option(
        None, "--rec-model", help="sasrec | gru4rec | caser (default: settings)."
    ),
    parser: str = typer.Option("offline", "--parser", help="offline, or llm (the settings' endpoint)."),
    similarity: str = typer.Option("auto", "--similarity", help="auto | text | collaborative."),
    split: str = typer.Option("test", "--split", help="Rows to simulate users from (val or test)."),
    seed: int = typer.Option(0, "--seed", help="Candidate sampling and command choice."),
    max_rows: int | None = typer.Option(None, "--max-rows", min=1, help="Only the first N rows."),
    semantic_weight: float = typer.Option(PlanWeights.semantic_weight, "--semantic-weight", min=0.0, max=1.0),
    attenuation: float = typer.Option(PlanWeights.attenuation, "--attenuation", min=0.0),
    run_dir: Path | None = typer.Option(None, "--run-dir", help="Run directory (default: a new one)."),
    as_json: bool = typer.Option(False, "--json", help="End the output with one machine-readable JSON line."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar on stderr."),
) -> None:
    """Command-satisfaction rate @1/10/20, HR@1 and Recall@10 before/after a command, parser failures."""
    settings = get_settings()
    torch.set_num_threads(settings.torch_threads)
    model_name = rec_model or settings.rec_model
    weights = PlanWeights(semantic_weight=semantic_weight, attenuation=attenuation)
    try:
        catalog = Dataset.open(settings.datasets_dir, dataset)
        rows = evaluation_rows(catalog, split, seed, settings.n_candidates, max_rows)
        scorer = load_latest_scorer(settings.models_dir, catalog, model_name)
        command_parser = _parser(_choice(parser, ("offline", "llm"), "--parser"), catalog, settings)
        backend: SimilarityBackend = _choice(similarity, ("auto", "text", "collaborative"), "--similarity")
        cache = embedding_cache_path(settings.data_dir, catalog.name, catalog.fingerprint)
        sim = load_similarity(catalog, scorer, backend=backend, cache_path=cache)
        config = {
            "experiment": "commands", "dataset": catalog.name, "dataset_fingerprint": catalog.fingerprint,
            "split": split, "seed": seed, "max_rows": max_rows, "rec_model": model_name,
            "parser": command_parser.name, "similarity": sim.name, "n_candidates": settings.n_candidates,
            "semantic_weight": weights.semantic_weight, "attenuation": weights.attenuation,
        }  # fmt: skip
        if command_parser.name == "llm":
            config |= {name: getattr(settings, name) for name in LLM_RUN_SETTINGS}
        run = RunDir.create(run_dir, settings.runs_dir, f"commands-{catalog.name}", config)
    except (DatasetNotFound, FileNotFoundError, CommandEvalError, EvalError, SimilarityUnavailable) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc

    started = time.perf_counter()
    with tqdm(total=len(rows), desc="commands", unit="row", disable=not progress) as bar:
        outcomes = asyncio.run(
            run_command_eval(
                rows, parser=command_parser, scorer=scorer, catalog=catalog, similarity=sim, weights=weights,
                seed=seed, on_row=bar.update,
            )
        )  # fmt: skip
    header = (
        f"# Natural-language commands: {catalog.name} {split}, {model_name}, parser {command_parser.name}, "
        f"similarity {sim.name}\n\n{len(rows)} rows, {settings.n_candidates} candidates (LLaRA protocol) for "
        "HR@1/Recall@10; CSR@k over the steered top-k of the whole unseen catalog."
    )
    wall_s = time.perf_counter() - started
    markdown, by_kind = report(outcomes, header)
    n_users = len({o.row_id for o in outcomes})
    protocol = (
        f"{catalog.name} {split}, rec model {model_name}, parser {command_parser.name}, similarity {sim.name}"
    )
    plot = save_chart(
        run.path,
        commands_chart(outcomes, caption(n=f"{n_users} users", protocol=protocol, code=code_version())),
    )
    markdown += f"\n![commands]({plot.name})\n"
    summary = summarize(outcomes)
    usage = dict(sum_usage(o.usage for o in outcomes))
    markdown += cost_section({"usage": usage}, wall_s)
    run.write_results(
        results_envelope(
            "commands",
            config,
            summary=summary,
            by_kind=by_kind,
            usage=usage,
            wall_seconds=round(wall_s, 2),
            outcomes=[o.to_json() for o in outcomes],
        )  # fmt: skip
    )
    run.write_report(f"Reproduce: `{command_line()}`\n\n{markdown}")
    typer.echo(markdown)
    typer.echo(f"run directory: {run.path}")
    if as_json:
        typer.echo(json.dumps(summary, sort_keys=True))


def _choice(value: str, allowed: tuple[str, ...], option: str) -> str:
    if value not in allowed:
        raise typer.BadParameter(f"{option} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def _parser(kind: str, catalog: Dataset, settings: Settings) -> CommandParser:
    if kind == "llm":
        if not settings.llm_enabled:
            raise typer.BadParameter(
                "--parser llm needs RECLOOP_LLM_BASE_URL (an OpenAI-compatible endpoint)"
            )
        return LLMParser(catalog, settings)
    return OfflineParser(catalog)
