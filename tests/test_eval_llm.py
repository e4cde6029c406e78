"""`recloop eval table4 --agents llm` through the real ChatOpenAI client against a local
OpenAI-compatible server: rows run concurrently and calls/tokens are recorded."""

from __future__ import annotations

import json
import random
from pathlib import Path

from fake_openai import FakeOpenAI, loop_autoresponder
from typer.testing import CliRunner

from app.settings import get_settings
from cli import cli


def test_llm_table4_with_concurrent_rows_records_calls_and_tokens(
    tmp_path: Path, datasets_dir: Path, ml_models_dir: Path, ml_dataset, monkeypatch
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "datasets").symlink_to(datasets_dir)
    (data_dir / "models").symlink_to(ml_models_dir)
    run_dir = data_dir / "runs" / "llm"
    with FakeOpenAI(default=loop_autoresponder, model_name="fake-table4-obeyed") as server:
        monkeypatch.setenv("RECLOOP_DATA_DIR", str(data_dir))
        monkeypatch.setenv("RECLOOP_LLM_BASE_URL", server.base_url)
        get_settings.cache_clear()
        # --llm-weights obey: the LLM's answers decide (no weights fitted or stored first), which is
        # what the counts below are about
        try:
            result = CliRunner().invoke(
                cli,
                ["eval", "table4", "--dataset", "movielens", "--rec-model", "sasrec", "--agents", "llm"]
                + ["--seeds", "1", "--max-rows", "6", "--concurrency", "3", "--run-dir", str(run_dir)]
                + ["--llm-weights", "obey", "--json", "--no-progress"],
            )
        finally:
            get_settings.cache_clear()
        n_requests = len(server.requests)
    assert result.exit_code == 0, result.output
    row = json.loads(result.output.strip().splitlines()[-1])["rows"][0]

    # The scripted recommender always proposes the first candidate and the user accepts it.
    from recmodels.candidates import sample_candidates

    rows, _ = ml_dataset.eval_rows("test")
    rng = random.Random(0)
    first_is_target = [
        sample_candidates(list(r.history), r.next, ml_dataset.n_items, rng)[0] == r.next for r in rows[:6]
    ]
    assert row["agent_hr1"] == row["flow_hr1"] == sum(first_is_target) / 6

    results = json.loads((run_dir / "results.json").read_text())
    assert results["config"]["agents"] == "llm" and results["config"]["llm_model"]
    assert results["config"]["llm_weights"] == "obey"
    # the exact expectation exists for the picks that rank by one score, not for an LLM's proposal
    stored = results["rows"][0]
    assert "model_hr1_exact" in stored and "agent_hr1_exact" not in stored
    assert "weighted_minus_agent_exact" not in stored and "weighted_minus_model_exact" in stored
    assert results["usage"]["calls"] == n_requests == 6 * 2  # one proposal + one judgement per row
    assert results["usage"]["prompt_tokens"] > 0 and results["usage"]["completion_tokens"] > 0
