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

import torch
import typer
from tqdm import tqdm

from app.settings import Settings, get_settings
from cli.invocation import command_line
from lab.eval.common import LLM_RUN_SETTINGS, EvalError, RunDir, cost_section, results_envelope
from lab.eval.plots import caption, save_chart
from lab.steering import parser_eval as natural_eval
from lab.steering.command_eval import (
    CommandEvalError,
    commands_chart,
    evaluation_rows,
    report,
    run_command_eval,
    summarize,
)
from lab.steering.natural_labels import FrozenSetError, read_training_set
from lab.steering.scoring import NaturalSetError, read_natural_set
from lab.steering.simulator import simulate
from lab.steering.teacher import LLMTeacher, TeacherReport, teacher_cache_path
from lab.steering.training import ParserTrainConfig, TrainingEstimate, train_parser
from llm.usage import sum_usage
from recmodels.artifacts import code_version, load_latest_scorer
from recmodels.dataset import Dataset, DatasetNotFound
from recmodels.progress import progress_bar
from recmodels.text import TextEncoderUnavailable, load_text_encoder
from steering.catalog_index import CatalogIndex
from steering.choice import PARSER_KINDS, ParserUnavailable, build_parser, learned_artifact
from steering.learned_parser import mention_finder
from steering.parsing import CommandParser
from steering.planner import PlanWeights
from steering.similarity import (
    SimilarityBackend,
    SimilarityUnavailable,
    embedding_cache_path,
    load_similarity,
)
from steering.student import CommandEncoder, StudentConfig

RunDirOpt = typer.Option(None, "--run-dir", help="Run directory (default: a new one).")
JsonOpt = typer.Option(False, "--json", help="End the output with one machine-readable JSON line.")
ProgressOpt = typer.Option(True, "--progress/--no-progress", help="Progress bar on stderr.")


def _threaded_settings() -> Settings:
    """The settings, with torch on their thread count (batch-of-one inference: extra intra-op threads
    only contend on a shared machine)."""
    settings = get_settings()
    torch.set_num_threads(settings.torch_threads)
    return settings


def register(cli: typer.Typer, eval_cli: typer.Typer) -> None:
    """Add this area's commands to the top-level and `eval` command groups."""
    eval_cli.command("commands")(commands)
    eval_cli.command("parser")(eval_parser)
    cli.command("train-parser")(train_parser_command)
    cli.command("prepare-parser")(prepare_parser_command)


def commands(
    dataset: str = typer.Option(..., "--dataset", help="Dataset with genre/year attributes (movielens)."),
    rec_model: str | None = typer.Option(
        None, "--rec-model", help="sasrec | gru4rec | caser (default: settings)."
    ),
    parser: str = typer.Option(
        "offline", "--parser", help="offline, llm (the settings' endpoint) or learned (recloop train-parser)."
    ),
    similarity: str = typer.Option("auto", "--similarity", help="auto | text | collaborative."),
    split: str = typer.Option("test", "--split", help="Rows to simulate users from (val or test)."),
    seed: int = typer.Option(0, "--seed", help="Candidate sampling and command choice."),
    max_rows: int | None = typer.Option(None, "--max-rows", min=1, help="Only the first N rows."),
    semantic_weight: float = typer.Option(PlanWeights.semantic_weight, "--semantic-weight", min=0.0, max=1.0),
    attenuation: float = typer.Option(PlanWeights.attenuation, "--attenuation", min=0.0),
    run_dir: Path | None = RunDirOpt,
    as_json: bool = JsonOpt,
    progress: bool = ProgressOpt,
) -> None:
    """Command-satisfaction rate @1/10/20, HR@1 and Recall@10 before/after a command, parser failures."""
    settings = _threaded_settings()
    model_name = rec_model or settings.rec_model
    weights = PlanWeights(semantic_weight=semantic_weight, attenuation=attenuation)
    try:
        catalog = Dataset.open(settings.datasets_dir, dataset)
        rows = evaluation_rows(catalog, split, seed, settings.n_candidates, max_rows)
        scorer = load_latest_scorer(settings.models_dir, catalog, model_name)
        command_parser = _parser(_choice(parser, PARSER_KINDS, "--parser"), catalog, settings)
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
    except (
        DatasetNotFound, FileNotFoundError, CommandEvalError, EvalError, SimilarityUnavailable,
        ParserUnavailable,
    ) as exc:  # fmt: skip
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc

    started = time.perf_counter()
    with progress_bar(total=len(rows), desc="commands", unit="row", disable=not progress) as bar:
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
    try:
        return build_parser(kind, catalog, settings.parser_config(), catalog.name)  # type: ignore[arg-type]
    except ParserUnavailable as exc:
        raise typer.BadParameter(str(exc)) from exc


def train_parser_command(
    dataset: str = typer.Option(..., "--dataset", help="Dataset whose catalog the commands are about."),
    n_train: int = typer.Option(
        ParserTrainConfig.n_train, "--n-train", min=10, help="Simulated training commands."
    ),
    n_val: int = typer.Option(
        ParserTrainConfig.n_val, "--n-val", min=10, help="Simulated validation commands."
    ),
    epochs: int = typer.Option(ParserTrainConfig.epochs, "--epochs", min=1),
    seed: int = typer.Option(ParserTrainConfig.seed, "--seed"),
    natural: list[Path] = typer.Option(
        [],
        "--natural",
        help="A retired natural-command set (development data) to train on too; repeatable. "
        "A set whose README does not mark it retired is refused.",
    ),
    natural_repeat: int = typer.Option(ParserTrainConfig.natural_repeat, "--natural-repeat", min=1),
    refit_epochs: int | None = typer.Option(
        ParserTrainConfig.refit_epochs,
        "--refit-epochs",
        min=1,
        help="Refit warm: the selected student goes on for this many epochs over every command, at a "
        "lower rate (default: a new student trained again for --epochs).",
    ),
    encoder_layers: int = typer.Option(
        StudentConfig.encoder_layers, "--encoder-layers", min=1, max=6, help="MiniLM layers read."
    ),
    tune_layers: int = typer.Option(
        StudentConfig.tune_layers,
        "--tune-layers",
        min=0,
        max=6,
        help="The top ones of those layers fine-tuned with the head (0: a frozen encoder).",
    ),
    encoder_lr: float = typer.Option(ParserTrainConfig.encoder_lr, "--encoder-lr", min=0.0),
    teacher: int = typer.Option(
        0,
        "--teacher",
        min=0,
        help="Have the configured LLM rewrite this many simulated commands; a rewrite is trained on only "
        "when the LLM reads it back as the simulator's label (2 calls each, cached in --cache-dir).",
    ),
    teacher_concurrency: int = typer.Option(2, "--teacher-concurrency", min=1, max=32),
    output: Path | None = typer.Option(None, "--output", help="Artifact path (default: beside the models)."),
    cache_dir: Path | None = typer.Option(
        None,
        "--cache-dir",
        help="Keep the encoder's vectors of the simulated commands here (re-training the "
        "head with other settings then skips the encoding).",
    ),
    as_json: bool = JsonOpt,
    progress: bool = ProgressOpt,
) -> None:
    """Train the learned command parser on simulated commands; thresholds chosen on held-out phrasings."""
    settings = get_settings()
    torch.set_num_threads(settings.parser_train_threads())  # batch training: every core it may use
    try:
        catalog = Dataset.open(settings.datasets_dir, dataset)
        encoder = CommandEncoder(load_text_encoder("the learned steering parser"))
        for path in natural:
            read_training_set(path)  # refused before any work when the set is frozen
    except (DatasetNotFound, TextEncoderUnavailable, FrozenSetError, NaturalSetError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    config = ParserTrainConfig(
        n_train=n_train, n_val=n_val, epochs=epochs, seed=seed, natural=tuple(natural),
        natural_repeat=natural_repeat, encoder_lr=encoder_lr, refit_epochs=refit_epochs,
    )  # fmt: skip
    if tune_layers > encoder_layers:
        raise typer.BadParameter(f"--tune-layers ({tune_layers}) exceeds --encoder-layers ({encoder_layers})")
    student_config = StudentConfig(encoder_layers=encoder_layers, tune_layers=tune_layers)
    index = CatalogIndex(catalog)
    taught: list = []
    if teacher:
        if not settings.llm_enabled:
            typer.echo("error: --teacher needs an LLM endpoint (RECLOOP_LLM_BASE_URL)", err=True)
            raise typer.Exit(2)
        taught, teaching = _teach(
            index, encoder, settings, teacher, seed, cache_dir, progress, teacher_concurrency
        )
        typer.echo(
            f"LLM teacher: {teaching.asked} commands, {teaching.rewritten} rewritten, "
            f"{teaching.read_back} read back as labelled, {teaching.kept} kept; "
            f"{teaching.cached} from the cache; "
            f"{int(teaching.usage.get('calls', 0))} calls"
        )
    bars: dict[str, tqdm] = {}

    def on_progress(stage: str, done: int, total: int) -> None:
        bar = bars.get(stage)
        if bar is None:
            bar = bars[stage] = progress_bar(total=total, desc=stage, disable=not progress)
        bar.update(done - bar.n)

    parser, trained = train_parser(
        index, encoder, config, student_config, on_progress=on_progress, cache_dir=cache_dir, taught=taught
    )
    for bar in bars.values():
        bar.close()
    path = output or learned_artifact(settings.parser_config(), catalog.name)
    parser.save(path)
    val = trained.val
    typer.echo(
        f"learned parser for {catalog.name}: {trained.n_train} training commands, {trained.seconds:.0f} s; "
        f"held-out phrasings ({trained.n_val}): exact {val['exact']} (95% CI {val['exact_ci95']}), "
        f"inversions {val['inversions']}, hard-constraint confidence {trained.thresholds.hard_confidence}"
        f"{'' if trained.thresholds.rules_veto else ' (no rules veto)'}; "
        f"look-up ceiling {trained.oracle_val_exact}; natural commands trained on {trained.n_natural} "
        f"({trained.natural_dropped} not rebuilt by the look-up, skipped)"
    )
    typer.echo(f"artifact: {path}")
    if as_json:
        summary = {
            "dataset": catalog.name, "artifact": str(path), "seconds": trained.seconds,
            "n_train": trained.n_train, "n_val": trained.n_val, "val_exact": val["exact"],
            "val_exact_ci95": val["exact_ci95"], "val_inversions": val["inversions"],
            "val_f1": val["f1"], "hard_confidence": trained.thresholds.hard_confidence,
            "rules_veto": trained.thresholds.rules_veto,
            "oracle_val_exact": trained.oracle_val_exact, "n_natural": trained.n_natural,
            "natural_dropped": trained.natural_dropped, "taught": len(taught),
        }  # fmt: skip
        typer.echo(json.dumps(summary, sort_keys=True))


RETIRED_SETS = Path(__file__).resolve().parents[1] / "tests" / "data"
"""Where a checkout keeps the natural-command sets (a wheel has none: it trains on simulated ones)."""


def retired_sets(dataset: str) -> list[Path]:
    """The retired natural sets of ``dataset`` in this checkout (the frozen one is never among them)."""
    found = []
    for path in sorted(RETIRED_SETS.glob(f"steering_natural*/{dataset}.jsonl")):
        try:
            read_training_set(path)
        except (FrozenSetError, NaturalSetError):
            continue
        found.append(path)
    return found


PROGRESS_EVERY_S = 15.0


def prepare_parser(
    settings: Settings, dataset: Dataset, echo, config: ParserTrainConfig | None = None
) -> Path | None:
    """The learned parser for the served catalog, trained if absent (the default recipe: simulated
    commands from the catalog's own titles, genres and years, plus the retired natural sets of the
    checkout for MovieLens and LastFM). None when it cannot be trained here (no embeddings extra)."""
    from app.services.parser_status import write_status

    path = learned_artifact(settings.parser_config(), dataset.name)
    if path.is_file():
        return path
    torch.set_num_threads(settings.parser_train_threads())
    natural = retired_sets(dataset.name)
    config = config or ParserTrainConfig(natural=tuple(natural))
    estimate = TrainingEstimate.for_recipe(config)  # started before the encoder loads: that counts too
    try:
        encoder = CommandEncoder(load_text_encoder("the learned steering parser"))
    except TextEncoderUnavailable as exc:
        echo(f"no learned parser for {dataset.name}: {exc}; commands are read by the rules")
        write_status(settings, dataset.name, "failed", error=str(exc))
        return None
    write_status(settings, dataset.name, "training")
    echo(f"training the learned steering parser for {dataset.name} ({len(natural)} retired natural sets)")
    last_said = [time.monotonic()]

    def on_progress(stage: str, done: int, total: int) -> None:
        # Every 15 s: the status file's expected_ready_at (what /readyz and commands announce) from how
        # far the training is, and a progress line (a log, a job's output: no bars).
        remaining = estimate.remaining_s(stage, done, total)
        if remaining is None or time.monotonic() - last_said[0] < PROGRESS_EVERY_S:
            return
        last_said[0] = time.monotonic()
        write_status(settings, dataset.name, "training", expected_s=remaining)
        echo(f"learned parser: {stage} {done}/{total}, about {remaining / 60:.1f} min left")

    try:
        parser, trained = train_parser(CatalogIndex(dataset), encoder, config, on_progress=on_progress)
        parser.save(path)
    except Exception as exc:
        write_status(settings, dataset.name, "failed", error=f"{type(exc).__name__}: {exc}")
        raise
    write_status(settings, dataset.name, "ready")
    echo(f"learned parser for {dataset.name} in {trained.seconds:.0f} s: {path}")
    return path


def prepare_parser_command(
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object (what is in place) last."),
) -> None:
    """Train the learned steering parser for the served dataset if absent (idempotent): the compose and
    Kubernetes parser jobs, and what a first `recloop serve` starts in the background."""
    settings = get_settings()
    started = time.perf_counter()
    try:
        dataset = Dataset.open(settings.datasets_dir, settings.dataset)
        dataset.meta  # noqa: B018 -- fails now, not minutes later, when the dataset is not prepared
    except (DatasetNotFound, OSError) as exc:
        typer.echo(f"error: {exc}; run `recloop prepare` first", err=True)
        raise typer.Exit(2) from exc
    path = prepare_parser(settings, dataset, lambda line: typer.echo(line, err=True))
    seconds = round(time.perf_counter() - started, 2)
    if as_json:
        artifact = str(path) if path else None
        typer.echo(json.dumps({"dataset": dataset.name, "artifact": artifact, "seconds": seconds}))


def _teach(
    index: CatalogIndex,
    encoder: CommandEncoder,
    settings: Settings,
    n: int,
    seed: int,
    cache_dir: Path | None,
    progress: bool,
    concurrency: int,
) -> tuple[list, TeacherReport]:
    """The LLM teacher's checked rewrites of ``n`` simulated commands (their own seed, the training
    share of the templates; abstentions are not rewritten)."""
    finder = mention_finder(index, encoder)
    sources = [c for c in simulate(index, n, split="train", seed=seed + 20_000) if c.expected is not None]
    cache = teacher_cache_path(cache_dir, settings, sources) if cache_dir is not None else None
    with progress_bar(total=len(sources), desc="teacher", disable=not progress) as bar:
        return asyncio.run(
            LLMTeacher(index, settings, finder).teach(
                sources, cache=cache, concurrency=concurrency, on_command=lambda: bar.update()
            )
        )


def eval_parser(
    dataset: str = typer.Option(..., "--dataset", help="The catalog the commands are about."),
    commands_file: Path = typer.Option(..., "--set", help="A natural-command set (JSON lines)."),
    parsers: str = typer.Option(
        "offline,learned", "--parsers", help="Comma-separated: offline, llm, learned."
    ),
    run_dir: Path | None = RunDirOpt,
    as_json: bool = JsonOpt,
    progress: bool = ProgressOpt,
) -> None:
    """Exact reading, per-field F1, polarity inversions and latency of each parser on a natural set."""
    settings = _threaded_settings()
    kinds = [_choice(k.strip(), PARSER_KINDS, "--parsers") for k in parsers.split(",") if k.strip()]
    try:
        catalog = Dataset.open(settings.datasets_dir, dataset)
        natural = read_natural_set(commands_file)
        built = [_parser(kind, catalog, settings) for kind in kinds]
        config = {
            "experiment": "parser", "dataset": catalog.name, "set": commands_file.name, "parsers": kinds,
            "dataset_fingerprint": catalog.fingerprint, "n_commands": len(natural),
        }  # fmt: skip
        run = RunDir.create(run_dir, settings.runs_dir, f"parser-{catalog.name}", config)
    except (DatasetNotFound, NaturalSetError, EvalError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    runs = []
    for command_parser in built:
        with progress_bar(total=len(natural), desc=command_parser.name, disable=not progress) as bar:
            runs.append(asyncio.run(natural_eval.run_parser(command_parser, natural, on_command=bar.update)))
    markdown = natural_eval.report(
        runs, f"# Natural commands: {commands_file.name} on {catalog.name} ({len(natural)} commands)"
    )
    summary = {run.parser: run.summary() for run in runs}
    run.write_results(
        results_envelope("parser", config, summary=summary, rows={r.parser: r.rows for r in runs})
    )
    run.write_report(markdown)
    typer.echo(markdown)
    typer.echo(f"run directory: {run.path}")
    if as_json:
        typer.echo(json.dumps(summary, sort_keys=True))
