"""The LLM path against a real model: run whenever RECLOOP_TEST_LLM_BASE_URL points at one.

`bench/llm_local.sh start` serves Qwen2.5-Coder-0.5B-Instruct with llama.cpp's server and prints the
variables to export. CI keeps the stub server (tests/fake_openai.py); these tests are the proof that
the same code holds up against a real model: every agent (recommendation, judgement, user
simulation) and the steering parser, with each structured-output method the server supports,
bounded by the output caps, with usage that matches the server's own counters.
"""

from __future__ import annotations

import os
import re

import httpx
import pytest

from app.settings import Settings
from graph.agents.llm_evidence import LLMWeights
from graph.runner import assess_items, run_loop
from lab.calibration.deps import calibrated_deps
from llm.client import server_root
from steering.llm_parser import LLMParser
from steering.preferences import Preferences

BASE_URL = os.environ.get("RECLOOP_TEST_LLM_BASE_URL")
MODEL = os.environ.get("RECLOOP_TEST_LLM_MODEL", "local")
METHODS = ("json_schema", "json_mode", "function_calling")
TOKEN_TOLERANCE = 0.05  # the bound: our totals within 5 % of the server's counters

pytestmark = [
    pytest.mark.llm_real,
    pytest.mark.skipif(not BASE_URL, reason="set RECLOOP_TEST_LLM_BASE_URL (bench/llm_local.sh start)"),
]


def _settings(tmp_path, method: str) -> Settings:
    return Settings(
        _env_file=None,
        data_dir=tmp_path,
        llm_base_url=BASE_URL,
        llm_model=MODEL,
        llm_api_key="local",
        llm_structured_method=method,
        llm_timeout_s=120.0,
        llm_loop_budget_s=600.0,
        llm_max_retries=1,
    )


def _supports(method: str) -> bool:
    """Whether the server accepts this way of asking for structured output (a tiny probe)."""
    body: dict = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "Say hi as JSON."}],
        "max_tokens": 8,
    }
    schema = {"type": "object", "properties": {"hi": {"type": "string"}}, "required": ["hi"]}
    if method == "json_schema":
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "Hi", "schema": schema}}
    elif method == "json_mode":
        body["response_format"] = {"type": "json_object"}
    else:
        body["tools"] = [{"type": "function", "function": {"name": "hi", "parameters": schema}}]
        body["tool_choice"] = {"type": "function", "function": {"name": "hi"}}
    response = httpx.post(f"{BASE_URL}/chat/completions", json=body, timeout=120)
    return response.status_code == 200


@pytest.fixture(params=METHODS)
def method(request) -> str:
    if not _supports(request.param):
        pytest.skip(f"the server does not accept {request.param}")
    return request.param


class ServerCounters:
    """llama.cpp's /metrics (server started with --metrics): tokens it processed and generated."""

    NAMES = ("prompt_tokens_total", "prompt_tokens_cached_total", "tokens_predicted_total")

    def __init__(self) -> None:
        self.url = f"{server_root(BASE_URL or '')}/metrics"

    def read(self) -> dict[str, float] | None:
        try:
            response = httpx.get(self.url, timeout=10)
        except httpx.HTTPError:
            return None
        if response.status_code != 200:
            return None
        values = {}
        for name in self.NAMES:
            found = re.search(rf"^llamacpp:{name} (\S+)$", response.text, re.MULTILINE)
            values[name] = float(found.group(1)) if found else 0.0
        return values

    @staticmethod
    def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
        return {name: after[name] - before[name] for name in before}


def _check_counts(usage: dict, before: dict | None, after: dict | None) -> None:
    """Our totals vs the server's: prompt (processed + reused from cache) and generated tokens."""
    if before is None or after is None:
        pytest.skip("the server exposes no /metrics (start llama-server with --metrics)")
    served = ServerCounters.delta(before, after)
    prompt = served["prompt_tokens_total"] + served["prompt_tokens_cached_total"]
    assert usage["prompt_tokens"] == pytest.approx(prompt, rel=TOKEN_TOLERANCE, abs=8)
    assert usage["completion_tokens"] == pytest.approx(
        served["tokens_predicted_total"], rel=TOKEN_TOLERANCE, abs=8
    )


def _capped(attempts: list[dict], cap_by_agent: dict[str, int]) -> None:
    for attempt in attempts:
        assert attempt["completion_tokens"] <= cap_by_agent[attempt["agent"]], attempt


async def test_loops_with_both_agents_are_bounded_and_fully_counted(tmp_path, ml_dataset, ml_scorers, method):
    settings = _settings(tmp_path, method)
    deps = await calibrated_deps(  # every step asks the LLM (weight 0 would skip the calls under test)
        settings.loop_config(),
        ml_dataset,
        ml_scorers["gru4rec"],
        ml_scorers["sasrec"],
        "llm",
        llm_weights=LLMWeights.obey(),
    )
    counters = ServerCounters()
    before = counters.read()
    results = []
    for row in ml_dataset.eval_rows("test")[0][:2]:
        candidates = [row.next, *[i for i in range(60, 120) if i not in row.history][:9]]
        results.append(await run_loop(deps, list(row.history), candidates, max_rounds=2))
    after = counters.read()

    rounds = [r for result in results for r in result.rounds]
    attempts = [a for r in rounds for a in r["llm_attempts"]]
    assert attempts and {a["agent"] for a in attempts} == {"rec", "user"}
    _capped(attempts, {"rec": settings.llm_max_tokens_rec, "user": settings.llm_max_tokens_user})
    for r in rounds:  # a fallback always says why
        assert not r["rec_fallback"] or r["rec_fallback_cause"]
        assert not r["user_fallback"] or r["user_fallback_cause"]
    if method == "json_schema":  # grammar-constrained: the first attempt is a valid answer
        first = [a for a in attempts if a["attempt"] == 1]
        assert sum(a["ok"] for a in first) >= 0.75 * len(first)
    total = {k: sum(r.usage[k] for r in results) for k in ("prompt_tokens", "completion_tokens")}
    _check_counts(total, before, after)


async def test_user_simulation_judges_every_item(tmp_path, ml_dataset, ml_scorers, method):
    settings = _settings(tmp_path, method)
    deps = await calibrated_deps(  # every step asks the LLM (weight 0 would skip the calls under test)
        settings.loop_config(),
        ml_dataset,
        ml_scorers["sasrec"],
        ml_scorers["sasrec"],
        "llm",
        llm_weights=LLMWeights.obey(),
    )
    row = ml_dataset.eval_rows("test")[0][0]
    items = [row.next, *[i for i in range(200, 260) if i not in row.history][:7]]
    verdict = await assess_items(deps, list(row.history), items)
    assert len(verdict.likes) == len(items)
    _capped(verdict.attempts, {"user": settings.llm_max_tokens_items})
    assert verdict.usage["calls"] >= 1 and verdict.usage["prompt_tokens"] > 0
    assert not verdict.fallback or verdict.fallback_cause


async def test_steering_parser_turns_a_command_into_preferences(tmp_path, ml_dataset, method):
    settings = _settings(tmp_path, method)
    parser = LLMParser(ml_dataset, settings.llm_config())
    result = await parser.parse("no horror please", memory=Preferences(), recommendations=[0, 1, 2])
    assert result.usage["calls"] >= 1
    assert result.parser == "llm"
    if not result.fallback:  # a 0.5B model may say "everything else": any reading but horror-positive
        update = result.update
        assert "Horror" not in update.positive.genres
        assert "Horror" in update.negative.genres or update.positive.genres or result.unparsed
    else:
        assert result.fallback_cause
