"""The command written at the top of every report: the options that decide the numbers, no others."""

from __future__ import annotations

from pathlib import Path

import typer
from typer.testing import CliRunner

from cli.invocation import command_line


def _app(seen: list[str]) -> typer.Typer:
    app = typer.Typer()
    sub = typer.Typer()
    app.add_typer(sub, name="eval")

    @sub.command("rounds")
    def rounds(
        dataset: str = typer.Option(..., "--dataset"),
        rec_model: list[str] = typer.Option([], "--rec-model"),
        seeds: int = typer.Option(5, "--seeds"),
        candidates: Path | None = typer.Option(None, "--candidates"),
        run_dir: Path | None = typer.Option(None, "--run-dir"),
        as_json: bool = typer.Option(False, "--json"),
        progress: bool = typer.Option(True, "--progress/--no-progress"),
        exact: bool = typer.Option(True, "--exact/--sampled"),
    ) -> None:
        seen.append(command_line())

    @sub.command("other")
    def other() -> None:  # typer needs two commands to keep the group
        pass

    return app


def test_the_line_keeps_what_decides_the_numbers(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    seen: list[str] = []
    args = ["eval", "rounds", "--dataset", "lastfm", "--rec-model", "sasrec", "--rec-model", "caser",
            "--candidates", str(tmp_path / "data" / "c 1.jsonl"), "--run-dir", "/tmp/x", "--json",
            "--no-progress", "--sampled"]  # fmt: skip
    result = CliRunner().invoke(_app(seen), args)
    assert result.exit_code == 0, result.output
    assert seen == [
        "recloop eval rounds --dataset lastfm --rec-model sasrec --rec-model caser "
        "--candidates 'data/c 1.jsonl' --sampled"
    ]
    CliRunner().invoke(_app(seen), ["eval", "rounds", "--dataset", "movielens", "--seeds", "5"])
    assert seen[-1] == "recloop eval rounds --dataset movielens"  # defaults are left out
