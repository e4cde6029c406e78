"""lab/eval/paper.py quotes the paper exactly: checked against the shared transcription of Tables 4-6."""

from __future__ import annotations

import json

import pytest

from lab.eval.paper import PAPER_AGENT_HR1, PAPER_FLOW_HR1, PAPER_MODEL_HR1, TABLE4, TABLE5, TABLE6, paper_prf


@pytest.fixture(scope="module")
def tables(shared_data):
    path = shared_data.parent / "papers" / "afl-tables.json"
    if not path.is_file():
        pytest.fail(f"{path} not found: the shared papers folder sits beside the data")
    return json.loads(path.read_text())


def test_table4_matches_the_transcription(tables):
    for dataset, rows in tables["table4_hr1"].items():
        for model, values in rows.items():
            assert TABLE4[dataset][model.lower()] == (values["model"], values["agent"], values["flow"])
    assert sum(len(rows) for rows in TABLE4.values()) == sum(len(r) for r in tables["table4_hr1"].values())


def test_table5_and_table6_match_the_transcription(tables):
    for dataset, ratios in tables["table5_user_simulation"].items():
        for ratio, methods in ratios.items():
            for method, v in methods.items():
                expected = (v["precision"], v["recall"], v["f1"])
                assert TABLE5[dataset][ratio][method.lower()] == expected
    assert {d: dict(v) for d, v in TABLE6.items()} == tables["table6_hr1"]


def test_lookups_the_reports_use():
    assert (PAPER_MODEL_HR1[("lastfm", "sasrec")], PAPER_AGENT_HR1[("lastfm", "sasrec")]) == (0.2869, 0.3197)
    assert PAPER_FLOW_HR1[("movielens", "caser")] == 0.4
    assert paper_prf("lastfm", "1:1", "reward_model") == (0.6667, 0.0533, 0.0988)
    assert paper_prf("movielens", "1:9", "flow") == (0.4410, 0.4333, 0.4371)
    assert paper_prf("unknown", "1:1", "flow") is None
