"""`recloop train-parser` from the command line: a small run with a retired natural set and the
LLM teacher (through ChatOpenAI against a local OpenAI-compatible server), its JSON line and
artifact; and the refusals that need no training (a frozen set, a teacher without an endpoint)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import torch
from cli_runner import invoke
from fake_openai import Reply

DATA = Path(__file__).parent / "data"
RETIRED = DATA / "steering_natural" / "movielens.jsonl"
FROZEN = DATA / "steering_natural_v7" / "movielens.jsonl"
SMALL = ["--n-train", "120", "--n-val", "40", "--epochs", "1", "--encoder-layers", "2", "--tune-layers", "1"]


def test_a_frozen_set_or_a_teacher_without_an_endpoint_is_refused_before_any_training(cli_env):
    frozen = invoke("train-parser", "--dataset", "movielens", "--natural", str(FROZEN), *SMALL)
    assert frozen.exit_code == 2 and "never trained on" in frozen.output
    no_llm = invoke("train-parser", "--dataset", "movielens", "--teacher", "3", *SMALL)
    assert no_llm.exit_code == 2 and "--teacher needs an LLM endpoint" in no_llm.output
    assert not (cli_env / "models" / "movielens" / "command-parser.pt").exists()


def test_train_parser_with_natural_commands_and_the_llm_teacher(cli_env, fake_openai, monkeypatch, tmp_path):
    # Every rewrite is "no horror" and every read-back says so: kept only where the simulator's
    # label is exactly that, so the JSON line's count is what the two checks let through.
    def answer(request) -> Reply:
        if "Rewrite the user's command" in request.text:
            return Reply.json({"thoughts": "t", "paraphrase": "horror? not for me"})
        empty = dict(genres=[], year_start=None, year_end=None, titles=[], like_titles=[], soft=[])
        return Reply.json(
            {"thoughts": "t", "reset": False, "positive": empty, "negative": empty | {"genres": ["Horror"]},
             "lift": empty, "not_understood": []}
        )  # fmt: skip

    fake_openai.default = answer
    monkeypatch.setenv("RECLOOP_LLM_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("RECLOOP_LLM_MAX_RETRIES", "0")
    cache = tmp_path / "cache"
    args = ["train-parser", "--dataset", "movielens", "--natural", str(RETIRED), *SMALL, "--teacher", "12"]
    result = invoke(*args, "--cache-dir", str(cache), "--json", "--no-progress")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert summary["n_natural"] > 150 and summary["n_train"] >= 120
    assert 0 <= summary["taught"] <= 12 and 0.0 <= summary["val_exact"] <= 1.0
    assert "LLM teacher: " in result.output
    asked = len(fake_openai.requests)
    assert asked >= 2  # a rewrite and its read-back at least
    artifact = cli_env / "models" / "movielens" / "command-parser.pt"
    payload = torch.load(artifact, weights_only=True)
    assert payload["config"]["tune_layers"] == 1 and payload["info"]["train"]["taught"] == summary["taught"]
    assert payload["info"]["train"]["natural_select"] > 0

    again = invoke(*args, "--cache-dir", str(cache), "--json", "--no-progress")
    assert again.exit_code == 0, again.output
    assert len(fake_openai.requests) == asked  # the teacher's answers came from the cache


def test_the_refit_beside_the_first_fit_trains_the_same_parser_as_in_turn(cli_env, tmp_path):
    """With two torch threads the cold refit trains in a forked process beside the first fit, one
    thread each; with one, the two fits run in turn. Same seed and commands: the same thresholds and
    the same student, bit for bit (each run in a process of its own, as the command line runs it)."""
    artifacts = {}
    for threads in (1, 2):
        output = tmp_path / f"parser-{threads}.pt"
        env = os.environ | {
            "RECLOOP_DATA_DIR": str(cli_env), "RECLOOP_STEERING_PARSER_TRAIN_THREADS": str(threads),
        }  # fmt: skip
        args = ["train-parser", "--dataset", "movielens", "--natural", str(RETIRED), *SMALL]
        done = subprocess.run(  # noqa: S603 -- our own command line
            [sys.executable, "-m", "cli", *args, "--output", str(output), "--json", "--no-progress"],
            env=env, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        assert json.loads(done.stdout.strip().splitlines()[-1])["artifact"] == str(output)
        artifacts[threads] = torch.load(output, weights_only=True)
    in_turn, beside = artifacts[1], artifacts[2]
    assert in_turn["info"]["train"]["refit_beside"] is False
    assert beside["info"]["train"]["refit_beside"] is True
    assert in_turn["thresholds"] == beside["thresholds"]
    assert in_turn["state"].keys() == beside["state"].keys()
    for name, weights in in_turn["state"].items():
        assert torch.equal(weights, beside["state"][name]), name
    # the refit's CPU (the child's) is counted in its phase, not lost
    assert beside["info"]["phases"]["refit"]["cpu"] > beside["info"]["phases"]["refit"]["wall"]
