"""`recloop calibrate --agents llm`: estimate first, budget, resume from the cached answers, stored
weights reused by `simulate` (known-skill server over HTTP through ChatOpenAI)."""

from __future__ import annotations

import json
from pathlib import Path

from cli_runner import invoke
from known_skill import KnownSkill, known_skill_server, tell_rows

ROWS = 10


def test_calibrate_respects_its_budget_resumes_and_stores_the_weights(
    cli_data_dir: Path, ml_dataset, monkeypatch
):
    skill = KnownSkill(p=0.8, seed=11)
    rows, _ = ml_dataset.eval_rows("val")
    tell_rows(skill, ml_dataset, rows[:ROWS])
    with known_skill_server(skill) as server:
        monkeypatch.setenv("RECLOOP_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("RECLOOP_LLM_TIMEOUT_S", "5")
        common = ["calibrate", "--agents", "llm", "--dataset", "movielens", "--rows", str(ROWS), "--no-items"]
        stopped = invoke(*common, "--budget-calls", "7", "--json", "--no-progress")
        assert stopped.exit_code == 3, stopped.output
        partial = json.loads(stopped.output.strip().splitlines()[-1])
        assert partial["complete"] is False and partial["weights"] is None
        assert partial["calls_made"] == 7 and len(server.requests) == 7
        assert partial["estimate"]["calls"] >= ROWS * 3  # two prompt forms and the verdicts per row
        assert "about" in stopped.output and "calls" in stopped.output  # the estimate, printed first
        assert partial["key"]["endpoint_model"] == "known-skill-p0.80-s11"

        done = invoke(*common, "--json", "--no-progress")
        assert done.exit_code == 0, done.output
        result = json.loads(done.output.strip().splitlines()[-1])
        assert result["complete"] and not result["reused"]
        asked = len(server.requests) - 7
        assert result["calls_made"] == asked and asked >= ROWS * 3 - 7  # only what was missing
        weights = result["weights"]
        assert (
            weights["learned"]
            and weights["rec_weight"] > 0
            and weights["prompt_form"] in ("pick", "shortlist")
        )
        forms = result["validation"]["forms"]
        assert set(forms) == {"pick", "shortlist"}
        for report in forms.values():
            assert 0 <= report["first_attempt_valid_rate"] <= 1 and 0 <= report["llm_hit_rate"] <= 1
        stored = Path(result["path"])
        assert stored.is_file() and stored.parent.name == "calibration"
        assert json.loads(stored.read_text())["key"]["structured_method"] == "json_schema"

        again = invoke(*common, "--json", "--no-progress")
        assert again.exit_code == 0 and json.loads(again.output.strip().splitlines()[-1])["reused"]
        before = len(server.requests)
        assert before == 7 + asked  # reused: nothing asked

        simulated = invoke("simulate", "--dataset", "movielens", "--user-row", "0", "--agents", "llm")
        assert simulated.exit_code == 0, simulated.output
        assert f"LLM weights: fitted on {ROWS} validation rows" in simulated.output


def test_calibrate_needs_an_endpoint_and_known_forms(cli_data_dir: Path, monkeypatch):
    result = invoke("calibrate", "--agents", "llm", "--dataset", "movielens")
    assert result.exit_code == 2 and "RECLOOP_LLM_BASE_URL" in result.output
    monkeypatch.setenv("RECLOOP_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    bad = invoke("calibrate", "--agents", "llm", "--dataset", "movielens", "--forms", "pick,nope")
    assert bad.exit_code == 2 and "--forms" in bad.output
