"""Aggregation of loop records into the paper's tables, and the candidate orders of Fig. 5."""

from __future__ import annotations

import pytest

from lab.eval.common import CandidateRow
from lab.eval.loops import arrange, hr
from lab.eval.table4 import summarise


def record(source: str, target: int, model: int, agent: int, flow: int, rounds: int = 1) -> dict:
    return {
        "source": source,
        "row_id": target,  # one user per target in these records
        "target": target,
        "model_pick": model,
        "agent_pick": agent,
        "flow_pick": flow,
        "n_rounds": rounds,
    }


def test_table4_row_averages_hr1_over_candidate_seeds() -> None:
    records = [
        # seed0: model 1/2, flow 2/2 ; seed1: model 0/2, flow 1/2
        record("seed0", 5, 5, 5, 5),
        record("seed0", 6, 1, 1, 6, rounds=3),
        record("seed1", 5, 2, 2, 5, rounds=2),
        record("seed1", 6, 1, 1, 1, rounds=2),
    ]
    row = summarise("movielens", "gru4rec", records)
    assert (row["model_hr1"], row["model_hr1_std"]) == pytest.approx((0.25, 0.25))
    assert (row["flow_hr1"], row["flow_hr1_std"]) == pytest.approx((0.75, 0.25))
    assert row["flow_hr1_per_source"] == {"seed0": 1.0, "seed1": 0.5}
    assert (row["n_rows"], row["n_sources"], row["mean_rounds"]) == (2, 2, 2.0)
    assert row["flow_changed_share"] == 0.5
    assert hr(records, "agent_pick") == 0.25
    # expected HR@1: per user, the share of its draws that hit, then the mean over users
    assert row["flow_hr1_expected"] == pytest.approx((1.0 + 0.5) / 2)
    assert row["model_hr1_expected"] == pytest.approx((0.5 + 0.0) / 2)
    gain = row["flow_minus_model"]
    assert gain["mean"] == pytest.approx(0.5) and gain["low"] <= 0.5 <= gain["high"]


def test_table4_sampled_figure_uses_only_the_sampled_seeds() -> None:
    records = [record("seed0", 5, 5, 5, 5), record("seed1", 5, 1, 1, 1), record("seed2", 5, 1, 1, 5)]
    row = summarise("movielens", "sasrec", records, sampled={"seed0", "seed1"})
    assert row["flow_hr1"] == pytest.approx(0.5) and row["n_sources"] == 2 and row["n_draws"] == 3
    assert row["flow_hr1_expected"] == pytest.approx(2 / 3)


def test_paired_interval_is_deterministic_and_brackets_the_mean() -> None:
    from lab.eval.metrics import paired_interval

    diffs = [0.0, 1.0, 0.0, 0.5, 0.0, -0.5, 1.0, 0.0]
    a, b = paired_interval(diffs), paired_interval(diffs)
    assert a == b and a.low <= a.mean <= a.high and a.mean == pytest.approx(sum(diffs) / len(diffs))
    assert paired_interval([0.25] * 10).to_json() == {"mean": 0.25, "low": 0.25, "high": 0.25}
    assert paired_interval([0.1, 0.2, 0.3] * 20).excludes_zero()


def test_arrangements_move_only_the_target() -> None:
    row = CandidateRow(0, (1, 2), target=7, candidates=(3, 7, 4, 5))
    assert arrange(row, "first", "seed0") == (7, 3, 4, 5)
    assert arrange(row, "last", "seed0") == (3, 4, 5, 7)
    assert arrange(row, "as_sampled", "seed0") == row.candidates
    shuffled = arrange(row, "random", "seed0")
    assert [c for c in shuffled if c != 7] == [3, 4, 5] and 7 in shuffled
    assert shuffled == arrange(row, "random", "seed0")  # reproducible per source and row
