"""`recloop simulate` on real (tiny) trained models."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cli import cli


def test_simulate_prints_a_transcript_and_json(cli_data_dir, ml_dataset):
    args = ["simulate", "--dataset", "movielens", "--user-row", "2", "--rec-model", "caser", "--json"]
    out = CliRunner().invoke(cli, args)
    assert out.exit_code == 0, out.output
    *text, last = out.output.strip().splitlines()
    result = json.loads(last)
    row = ml_dataset.rows("test")[2]
    assert result["target"] == row.next and row.next in result["candidates"]
    transcript = "\n".join(text)
    assert "Round 1" in transcript and f"Round {result['n_rounds']}" in transcript
    assert all(ml_dataset.title(i) in transcript for i in row.history)
    for r in result["rounds"]:
        assert ml_dataset.title(r["item"]) in transcript and r["user_reason"][:40] in transcript.replace(
            "\n", " "
        )
    assert f"Final: {ml_dataset.title(result['final_item'])}" in transcript


def test_simulate_rejects_bad_arguments(cli_data_dir):
    runner = CliRunner()
    out = runner.invoke(cli, ["simulate", "--dataset", "movielens", "--user-row", "100000"])
    assert out.exit_code == 2 and "--user-row" in out.output
    out = runner.invoke(cli, ["simulate", "--dataset", "movielens", "--user-row", "0", "--agents", "llm"])
    assert out.exit_code == 2 and "RECLOOP_LLM_BASE_URL" in out.output
    out = runner.invoke(cli, ["simulate", "--dataset", "nope", "--user-row", "0"])
    assert out.exit_code == 2 and "nope" in out.output
