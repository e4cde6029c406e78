"""Tiny end-to-end runs of every `recloop eval` experiment: a few MovieLens rows, offline agents,
real (small) trained models from the session fixtures."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from plot_data import check_plot
from typer.testing import CliRunner

from cli import cli


def invoke_json(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["eval", *args, "--json", "--no-progress"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output.strip().splitlines()[-1])


def test_table4_matches_the_models_and_resumes_after_interruption(
    cli_data_dir: Path, ml_dataset, ml_scorers
) -> None:
    run_dir = cli_data_dir / "runs" / "t4"
    args = ("table4", "--dataset", "movielens", "--seeds", "2", "--draws", "3", "--max-rows", "5")
    args = (*args, "--run-dir", str(run_dir))
    first = invoke_json(*args)

    assert [r["rec_model"] for r in first["rows"]] == ["sasrec", "gru4rec", "caser"]
    for row in first["rows"]:
        assert {"dataset", "rec_model", "model_hr1", "agent_hr1", "flow_hr1", "n_rows"} <= set(row)
        assert row["n_rows"] == 5 and row["dataset"] == "movielens"
        # paired differences with their bootstrap intervals, FLOW against each baseline
        for other in ("model", "reward", "ensemble", "weighted", "agent"):
            ci = row[f"flow_minus_{other}"]
            assert ci["low"] <= ci["mean"] <= ci["high"]
            assert ci["mean"] == pytest.approx(row["flow_hr1_expected"] - row[f"{other}_hr1_expected"])
    gain = first["flow_minus_model_over_models"]
    assert gain["low"] <= gain["mean"] <= gain["high"]
    # The "Model" column is the rec model's own top candidate, recomputed here independently.
    from recmodels.candidates import sample_candidates

    rows, _ = ml_dataset.eval_rows("test")
    for row in first["rows"]:
        scorer = ml_scorers[row["rec_model"]]
        hits = []
        for seed in (0, 1):
            rng = random.Random(seed)
            for r in rows[:5]:
                cands = sample_candidates(list(r.history), r.next, ml_dataset.n_items, rng)
                hits.append(scorer.rank(list(r.history), cands)[0] == r.next)
        assert row["model_hr1"] == pytest.approx(sum(hits) / len(hits))

    results = json.loads((run_dir / "results.json").read_text())
    assert results["config"]["seeds"] == [0, 1] and results["config"]["draws"] == 3
    assert results["code_version"] and results["sampled_sources"] == ["seed0", "seed1"]
    for row in results["rows"]:  # exact expectations beside the sampled ones, and what was learned
        assert 0.0 <= row["model_hr1_exact"] <= 1.0 and row["n_draws"] == 3
        assert row["calibration"]["trust"] in [i / 20 for i in range(21)]
    assert {m for m in results["models"]} >= {"movielens/sasrec", "movielens/gru4rec", "movielens/caser"}
    assert all(len(m["artifact_sha256"]) == 64 for m in results["models"].values())
    assert "Table 4" in (run_dir / "report.md").read_text()
    plot = check_plot(run_dir / "table4_hr1.png", paper=True)
    flow = next(s for s in plot["series"] if s["label"] == "FLOW")
    assert [e["x"] for e in flow["estimates"]] == ["sasrec", "gru4rec", "caser"]
    assert [e["value"] for e in flow["estimates"]] == pytest.approx(
        [r["flow_hr1_expected"] for r in first["rows"]]
    )
    assert flow["paper"] == {"sasrec": 0.4316, "gru4rec": 0.4632, "caser": 0.4}  # Table 4, MovieLens FLOW
    assert "5 test users x 3 candidate draws" in plot["caption"]

    # Interrupt: keep 7 of the 45 finished rows plus a torn line, then resume the same run dir.
    lines = (run_dir / "rows.jsonl").read_text().splitlines()
    assert len(lines) == 3 * 3 * 5
    (run_dir / "rows.jsonl").write_text("\n".join(lines[:7]) + "\n" + lines[7][:20])
    assert invoke_json(*args) == first
    assert len((run_dir / "rows.jsonl").read_text().splitlines()) == 45

    # Resuming with other settings is refused instead of mixing numbers.
    other = CliRunner().invoke(cli, ["eval", *args[:-2], "--run-dir", str(run_dir), "--max-rows", "4"])
    assert other.exit_code == 2 and "cannot resume with different settings" in other.output


def test_table5_reports_every_ratio_and_method(cli_data_dir: Path) -> None:
    run_dir = cli_data_dir / "runs" / "t5"
    out = invoke_json("table5", "--dataset", "movielens", "--max-rows", "4", "--run-dir", str(run_dir))
    assert [(r["ratio"], r["method"]) for r in out["rows"]] == [
        (f"1:{m}", method) for m in (1, 3, 9) for method in ("reward_model", "agent", "flow")
    ]
    for row in out["rows"]:
        assert set(row) == {"dataset", "ratio", "method", "precision", "recall", "f1"}
        assert 0.0 <= row["f1"] <= 1.0
    for ratio in ("1:1", "1:3", "1:9"):  # FLOW - Agent, paired over users, with its interval
        gain = out["flow_minus_agent_f1"][ratio]
        assert gain["low"] <= gain["mean"] <= gain["high"]
    results = json.loads((run_dir / "results.json").read_text())
    assert results["calibration"]["verdict_threshold"] is not None  # one threshold, learned on val
    assert set(results["verdicts_changed_by_memory"]) == {"1:1", "1:3", "1:9"}
    # MovieLens test users know 11 items: 8 future items, so 1:1 judges 16 items per user.
    one_to_one = next(r for r in results["rows"] if r["ratio"] == "1:1" and r["method"] == "agent")
    assert one_to_one["n_items"] == 4 * 16 and set(one_to_one["macro"]) == {"precision", "recall", "f1"}
    plot = check_plot(run_dir / "table5_f1.png", paper=True)
    flow = next(s for s in plot["series"] if s["label"] == "FLOW")
    assert flow["paper"]["1:1"] == 0.6185  # Table 5, MovieLens FLOW F1
    assert [e["value"] for e in flow["estimates"]] == pytest.approx(
        [r["f1"] for r in results["rows"] if r["method"] == "flow"]
    )


@pytest.mark.parametrize(
    ("command", "plots"),
    [
        ("rounds", {"rounds_hr1.png": True, "rounds_usersim.png": True}),
        ("ablation", {"ablation_hr1.png": True}),
        ("position", {"position_hr1.png": False}),
        ("bias", {"bias_popularity_sasrec.png": False}),
    ],
)
def test_figure_experiments_write_plots_and_json(
    cli_data_dir: Path, command: str, plots: dict[str, bool]
) -> None:
    run_dir = cli_data_dir / "runs" / command
    extra = ["--round-limit", "2"] if command in ("rounds", "position") else []
    model = ["--rec-model", "sasrec"]
    out = invoke_json(
        command,
        "--dataset",
        "movielens",
        "--seeds",
        "1",
        "--max-rows",
        "3",
        "--run-dir",
        str(run_dir),
        *model,
        *extra,
    )
    assert out["rows"]
    for plot, paper in plots.items():  # paper: does the paper give a value for this plot
        check_plot(run_dir / plot, paper=paper)
    report = (run_dir / "report.md").read_text()
    assert all(f"]({plot})" in report for plot in plots)


def test_missing_model_is_a_clear_error(cli_data_dir: Path, lastfm_dataset) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "eval",
            "table4",
            "--dataset",
            "lastfm",
            "--rec-model",
            "sasrec",
            "--max-rows",
            "2",
            "--no-progress",
        ],
    )
    assert result.exit_code == 2
    assert "train it with `recloop train --dataset lastfm --model sasrec`" in result.output
