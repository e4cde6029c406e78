"""The `eval model` report: intervals in every row, the paper's numbers only where the paper has them."""

from __future__ import annotations

from pathlib import Path

from plot_data import check_plot

from lab.eval.model_report import model_report
from lab.eval.paper import PAPER_MODEL_HR1


def _result(hr1: float, low: float, high: float, members: int = 1) -> dict:
    return {
        "hr1_expected": hr1, "hr1_expected_ci95": [low, high], "hr1_mean": hr1 - 0.01, "hr1_std": 0.02,
        "hit10": 0.1, "ndcg10": 0.05, "n_rows": 122, "members": members,
    }  # fmt: skip


PAIRED = {"sasrec": {"hr1_expected_diff": {"mean": 0.05, "low": 0.01, "high": 0.09},
                     "hr1_sampled_diff": {"mean": 0.04, "low": -0.01, "high": 0.08}}}  # fmt: skip


def test_the_test_report_quotes_the_paper_beside_our_intervals(tmp_path: Path):
    results = {"textrec": _result(0.38, 0.31, 0.45, members=3), "sasrec": _result(0.33, 0.26, 0.40)}
    report = model_report(tmp_path, results, PAIRED, dataset="lastfm", split="test")
    assert (
        "| textrec x3 | 122 | 0.3800 [0.3100, 0.4500] | 0.3700 ± 0.0200 | 0.1000 | 0.0500 | n/a |" in report
    )
    assert "| sasrec | 122 | 0.3300 [0.2600, 0.4000] |" in report and "| 0.2869 |" in report
    assert "llara 0.4426, morec 0.1639" in report
    assert "| textrec − sasrec | +0.0500 [+0.0100, +0.0900] | +0.0400 [-0.0100, +0.0800] |" in report
    assert "](hr1.png)" in report
    plot = check_plot(tmp_path / "hr1.png", paper=True)
    (ours,) = plot["series"]
    assert ours["estimates"][0] == {"x": "textrec", "value": 0.38, "low": 0.31, "high": 0.45}
    assert ours["paper"] == {"sasrec": 0.2869}  # no paper value for textrec
    assert {r["label"]: r["value"] for r in plot["references"]} == {
        "paper llara": 0.4426, "paper morec": 0.1639, "chance (1/20)": 0.05,
    }  # fmt: skip
    assert plot["caption"].startswith("n = 122 rows. lastfm / test")


def test_validation_and_cold_start_reports_carry_no_paper_numbers(tmp_path: Path):
    results = {"textrec": _result(0.16, 0.14, 0.19), "sasrec": _result(0.05, 0.04, 0.06)}
    cold = {"fraction": 0.1, "held_out_items": 358, "seeds": [0, 1, 2, 3, 4], "rows": 638}
    for split, cold_start in (("test", cold), ("val", None)):
        report = model_report(tmp_path, results, {}, dataset="steam", split=split, cold=cold_start)
        assert "| 0.3800 |" not in report and "llara" not in report  # Steam's paper SASRec / LLaRA
        assert "no paper column here" in report
        check_plot(tmp_path / "hr1.png", paper=False)
    assert (
        "10% of the items held out (358 per hold-out, hold-out seeds 0, 1, 2, 3, 4); 638 rows"
        in model_report(tmp_path, results, {}, dataset="steam", split="test", cold=cold)
    )


def test_paper_values_are_table_4s_model_column():
    assert PAPER_MODEL_HR1.get(("movielens", "gru4rec")) == 0.4526
    assert PAPER_MODEL_HR1.get(("movielens", "textrec")) is None
    assert PAPER_MODEL_HR1.get(("nowhere", "sasrec")) is None
