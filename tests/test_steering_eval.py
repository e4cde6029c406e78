"""`recloop eval commands`: simulated commands and the CLI's JSON contract, on tiny real models."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import typer
from plot_data import check_plot
from typer.testing import CliRunner

from cli import steering as cli_steering
from lab.eval.common import sampled_candidate_rows
from lab.steering.command_eval import CommandEvalError, evaluation_rows, simulate_commands

JSON_KEYS = {
    "csr1", "csr10", "csr20", "hr1_before", "hr1_after", "recall10_before", "recall10_after",
    "parser_failure_rate", "parser_fallback_rate", "n_commands",
}  # fmt: skip


def _cli() -> typer.Typer:
    """A `recloop`-shaped CLI with only this area registered, exactly as cli/__init__.py wires areas."""
    cli, eval_cli = typer.Typer(), typer.Typer()
    cli.add_typer(eval_cli, name="eval")
    cli_steering.register(cli, eval_cli)
    return cli


def test_commands_are_derived_from_the_held_out_target(ml_dataset):
    rows, _ = ml_dataset.eval_rows("test")
    row = sampled_candidate_rows(rows[:1], ml_dataset.n_items, seed=0)[0]
    target = ml_dataset.item(row.target)
    commands = {c.kind: c for c in simulate_commands(row, ml_dataset, random.Random(0))}
    assert set(commands) == {"genre_include", "genre_exclude", "decade", "more_like"}
    # Every command is one the target itself satisfies, so steering can only help finding it.
    assert all(c.satisfied(target) for c in commands.values())
    include = commands["genre_include"].expected.positive.genres[0]
    assert include in target.genres and commands["genre_include"].text == f"more {include.lower()}"
    exclude = commands["genre_exclude"].expected.negative.genres[0]
    assert all(exclude not in ml_dataset.item(i).genres for i in (*row.history, row.target))
    decade = commands["decade"].expected.positive.year_range
    assert decade.start <= target.year <= decade.end and decade.end - decade.start == 9
    anchor = commands["more_like"].expected.positive.soft[0].item
    assert anchor in row.history and commands["more_like"].text == f"more like {ml_dataset.title(anchor)}"


def test_title_only_datasets_are_refused(lastfm_dataset):
    with pytest.raises(CommandEvalError, match="items.jsonl: no item has 'genres'"):
        evaluation_rows(lastfm_dataset, "test", 0, 20, None)


def test_cli_reports_the_json_contract_and_hard_constraints_always_hold(cli_data_dir: Path):
    run_dir = cli_data_dir / "runs" / "cmd"
    args = ["eval", "commands", "--dataset", "movielens", "--max-rows", "6", "--similarity", "collaborative"]
    result = CliRunner().invoke(_cli(), [*args, "--run-dir", str(run_dir), "--json", "--no-progress"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert set(summary) == JSON_KEYS
    assert summary["n_commands"] == 24 and summary["parser_failure_rate"] == 0.0
    assert summary["parser_fallback_rate"] == 0.0  # the offline parser never falls back
    results = json.loads((run_dir / "results.json").read_text())
    assert results["summary"] == summary and (run_dir / "report.md").is_file()
    for kind in ("genre_include", "genre_exclude", "decade"):
        kind_summary = results["by_kind"][kind]
        assert kind_summary["csr1"] == kind_summary["csr20"] == 1.0, f"{kind}: a filter never violates"
        assert kind_summary["hr1_after"] >= kind_summary["hr1_before"]
        assert kind_summary["recall10_after"] >= kind_summary["recall10_before"]
    plot = check_plot(run_dir / "commands.png", paper=False)  # AFL/FLOW has no steering numbers
    csr10 = {e["x"]: e["value"] for s in plot["series"] if s["label"] == "CSR@10" for e in s["estimates"]}
    assert csr10["all"] == pytest.approx(summary["csr10"], abs=1e-4)  # 4 commands per user: same mean
    assert "](commands.png)" in (run_dir / "report.md").read_text()


def test_cli_names_a_missing_dataset(cli_data_dir: Path):
    result = CliRunner().invoke(_cli(), ["eval", "commands", "--dataset", "nope", "--no-progress"])
    assert result.exit_code == 2 and "no dataset at" in result.output


def test_eval_parser_scores_a_command_set_side_by_side(cli_data_dir: Path):
    """`recloop eval parser` on the hand-written dev set with the rules (the learned parser's own
    path is tests/test_steering_learned.py): the JSON line, the run directory, the figures' ranges."""
    dev = Path(__file__).parent / "data" / "steering_dev" / "movielens.jsonl"
    run_dir = cli_data_dir / "runs" / "parser"
    args = ["eval", "parser", "--dataset", "movielens", "--set", str(dev), "--parsers", "offline"]
    result = CliRunner().invoke(_cli(), [*args, "--run-dir", str(run_dir), "--json", "--no-progress"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.strip().splitlines()[-1])["offline"]
    assert summary["n"] == 30 and 0.0 < summary["exact"] < 1.0
    low, high = summary["exact_ci95"]
    assert low <= summary["exact"] <= high
    assert set(summary["f1"]) == {"genres", "years", "items", "soft", "reset"}
    assert summary["p50_ms"] <= summary["p99_ms"]
    rows = json.loads((run_dir / "results.json").read_text())["rows"]["offline"]
    assert len(rows) == 30 and sum(r["exact"] for r in rows) == round(summary["exact"] * 30)
    missing = CliRunner().invoke(_cli(), [*args[:4], "--set", "nope.jsonl", "--parsers", "offline"])
    assert missing.exit_code == 2 and "no such natural-command set" in missing.output
    learned = CliRunner().invoke(_cli(), [*args[:6], "--parsers", "learned", "--no-progress"])
    assert learned.exit_code == 2  # no artifact in this data dir: refused, naming the option
