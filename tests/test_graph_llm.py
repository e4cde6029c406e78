"""The LLM agents end to end: real ChatOpenAI client -> local OpenAI-compatible server -> the loop."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_openai import Reply

from app.settings import Settings
from graph.agents.llm_evidence import LLMWeights
from graph.context import LoopDeps
from graph.runner import LoopRunner, assess_items, judge_items, run_loop
from lab.calibration.deps import calibrated_deps

TIMEOUT_S = 0.3


@pytest.fixture(autouse=True)
def _data_dir(session_data_dir: Path) -> None:
    """Settings built here keep their files (text item vectors) under the session's data dir."""
    DATA_DIR[0] = session_data_dir


DATA_DIR: list[Path] = [Path("unset")]


async def offline_twin(deps: LoopDeps) -> LoopDeps:
    """The same models and settings with the offline agents (what the LLM agents fall back to)."""
    return await calibrated_deps(deps.config, deps.catalog, deps.rec_scorer, deps.reward_scorer, "offline")


async def llm_deps(ml_dataset, ml_scorers, server, **fields) -> LoopDeps:
    """LLM agents whose valid answers always decide (these tests are about the calls; how the
    answers are weighed is tests/test_llm_evidence.py)."""
    weights = fields.pop("llm_weights", LLMWeights.obey())
    settings = Settings(
        _env_file=None,
        data_dir=DATA_DIR[0],
        llm_base_url=server.base_url,
        llm_timeout_s=fields.pop("llm_timeout_s", TIMEOUT_S),
        llm_max_retries=fields.pop("llm_max_retries", 1),
        **fields,
    )
    return await calibrated_deps(
        settings.loop_config(),
        ml_dataset,
        ml_scorers["gru4rec"],
        ml_scorers["sasrec"],
        "llm",
        llm_weights=weights,
    )


@pytest.fixture
def row(ml_dataset) -> tuple[list[int], list[int]]:
    r = ml_dataset.eval_rows("test")[0][0]
    candidates = [r.next, *[i for i in range(40, 80) if i not in r.history][:19]]
    return list(r.history), candidates


def rec(item: int, reason: str = "It matches the history.") -> Reply:
    return Reply.json({"thoughts": "step by step", "item_id": item, "reason": reason})


def user(decision: str, reason: str) -> Reply:
    return Reply.json({"thoughts": "step by step", "decision": decision, "reason": reason})


@pytest.mark.parametrize(
    ("method", "shape"),
    [("json_schema", "json_schema"), ("json_mode", "json_object"), ("function_calling", "tools")],
)
async def test_prompts_carry_history_candidates_prior_and_memory(
    ml_dataset, ml_scorers, fake_openai, row, method, shape
):
    history, candidates = row
    deps = await llm_deps(ml_dataset, ml_scorers, fake_openai, llm_structured_method=method)
    first, second = candidates[3], candidates[7]
    fake_openai.enqueue(
        rec(first, "A first guess."),
        user("reject", "TOO GLOOMY FOR ME."),
        rec(second, "A lighter one."),
        user("accept", "Yes, that one."),
    )
    result = await run_loop(deps, history, candidates, max_rounds=4)

    assert result.stop_reason == "accepted" and result.final_item == second
    assert [r["item"] for r in result.rounds] == [first, second]
    assert not any(r["rec_fallback"] or r["user_fallback"] for r in result.rounds)
    assert result.final_reason == "A lighter one."

    rec1, user1, rec2, user2 = fake_openai.requests
    for request in (rec1, user1, rec2, user2):
        assert all(ml_dataset.title(i) in request.text for i in history if ml_dataset.title(i))
    assert all(f"[{c}] {ml_dataset.title(c)}" in rec1.text for c in candidates)
    assert ml_dataset.title(result.prior_item) in rec1.text
    assert "No earlier rounds." in rec1.text and "No earlier rounds." in user1.text
    # the second round shows both agents the first round's memory {Ir, Rr, Ru}
    for request in (rec2, user2):
        assert ml_dataset.title(first) in request.text
        assert "TOO GLOOMY FOR ME." in request.text and "A first guess." in request.text
    assert "top picks" in user1.text  # reward model shown as its top picks by default

    if shape == "tools":
        assert rec1.body["tools"] and rec1.body["tool_choice"]["function"]["name"] == "RecAnswer"
    else:
        assert rec1.body["response_format"]["type"] == shape

    usage = result.usage
    assert usage["calls"] == 4
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert sum(r["llm_usage"]["calls"] for r in result.rounds) == 4


def failure(kind: str, candidates: list[int]) -> Reply:
    return {
        "malformed": Reply.content('{"item_id": 3, "reason": '),
        "outside": rec(max(candidates) + 1000),
        "http500": Reply.error(500),
        "timeout": rec(candidates[0]).delayed(TIMEOUT_S * 4),
    }[kind]


@pytest.mark.parametrize("kind", ["malformed", "outside", "http500", "timeout"])
async def test_bad_recommendation_is_retried_then_falls_back(ml_dataset, ml_scorers, fake_openai, row, kind):
    history, candidates = row
    deps = await llm_deps(ml_dataset, ml_scorers, fake_openai, llm_max_retries=1)
    fake_openai.enqueue(failure(kind, candidates), failure(kind, candidates), user("accept", "Fine."))
    result = await run_loop(deps, history, candidates, max_rounds=3)

    assert result.stop_reason == "accepted"
    (only,) = result.rounds
    assert only["rec_fallback"] and not only["user_fallback"]
    # the offline policy answered: the offline recommendation agent's own first proposal
    twin = await run_loop(await offline_twin(deps), history, candidates, max_rounds=1)
    assert only["item"] == twin.final_item
    assert only["llm_usage"]["calls"] == 3  # two recommendation attempts + one judgement
    if kind in ("malformed", "outside"):  # the error is fed back in the retry
        assert "could not be used" in fake_openai.requests[1].text
        assert "could not be used" not in fake_openai.requests[0].text


@pytest.mark.parametrize("kind", ["malformed", "http500", "timeout"])
async def test_bad_judgement_is_retried_then_falls_back(ml_dataset, ml_scorers, fake_openai, row, kind):
    history, candidates = row
    deps = await llm_deps(ml_dataset, ml_scorers, fake_openai, llm_max_retries=1)
    fake_openai.enqueue(rec(candidates[0]), failure(kind, candidates), failure(kind, candidates))
    result = await run_loop(deps, history, candidates, max_rounds=2)

    first = result.rounds[0]
    assert first["user_fallback"] and not first["rec_fallback"]
    offline_accepts = first["reward_rank"] <= (deps.config.accept_top_k or 1)
    assert first["decision"] == ("accept" if offline_accepts else "reject")
    assert "reward model ranks" in first["user_reason"]  # the offline agent's sentence
    assert result.stop_reason in ("accepted", "max_rounds")


async def test_one_bad_answer_then_a_good_one_needs_no_fallback(ml_dataset, ml_scorers, fake_openai, row):
    history, candidates = row
    deps = await llm_deps(ml_dataset, ml_scorers, fake_openai, llm_max_retries=2)
    fake_openai.enqueue(rec(-5), rec(candidates[5]), user("accept", "Good."))
    result = await run_loop(deps, history, candidates)
    (only,) = result.rounds
    assert only["item"] == candidates[5] and not only["rec_fallback"]
    assert f"item_id {-5} is not one of the candidate ids" in fake_openai.requests[1].text


async def test_one_runner_retries_a_server_error_within_the_round(ml_dataset, ml_scorers, fake_openai, row):
    history, candidates = row
    deps = await llm_deps(ml_dataset, ml_scorers, fake_openai)
    fake_openai.enqueue(rec(candidates[2]), user("reject", "No."), Reply.error(503), rec(candidates[4]))
    fake_openai.enqueue(user("accept", "Yes."))
    result = await LoopRunner().run(deps, history, candidates, max_rounds=3)
    assert [r["item"] for r in result.rounds] == [candidates[2], candidates[4]]
    assert result.rounds[1]["llm_usage"]["calls"] == 3


async def test_user_simulation_judges_a_list(ml_dataset, ml_scorers, fake_openai, row):
    history, candidates = row
    deps = await llm_deps(ml_dataset, ml_scorers, fake_openai)
    items = candidates[:4]
    fake_openai.enqueue(
        Reply.json({"thoughts": "t", "decisions": [{"item_id": i, "like": i == items[1]} for i in items]})
    )
    assert await judge_items(deps, history, items) == [False, True, False, False]
    assert all(f"[{i}]" in fake_openai.requests[0].text for i in items)
    # a list that misses an item is invalid twice -> the offline agent judges
    bad = Reply.json({"thoughts": "t", "decisions": [{"item_id": items[0], "like": True}]})
    fake_openai.enqueue(bad, bad)
    assert await judge_items(deps, history, items) == await judge_items(
        await offline_twin(deps), history, items
    )
    assert "every listed item id exactly once" in fake_openai.requests[-1].text


@pytest.mark.parametrize(
    ("reply", "cause"),
    [
        (Reply.cut_off(), "length: "),
        (Reply.content_filtered(), "content_filter: "),
        (Reply.raw({"unexpected": "body"}), "invalid: "),
        (Reply.error(429, "slow down"), "http: "),
    ],
)
async def test_every_failed_step_records_its_cause_and_the_loop_completes(
    ml_dataset, ml_scorers, fake_openai, row, reply, cause
):
    history, candidates = row
    deps = await llm_deps(ml_dataset, ml_scorers, fake_openai, llm_max_retries=1)
    fake_openai.enqueue(reply, reply, reply, reply)  # both steps of round 1 fail twice
    result = await run_loop(deps, history, candidates, max_rounds=1)

    (only,) = result.rounds
    assert result.stop_reason in ("accepted", "max_rounds")
    assert only["rec_fallback"] and only["user_fallback"]
    assert only["rec_fallback_cause"].startswith(cause) and only["user_fallback_cause"].startswith(cause)
    assert only["rec_llm_usage"]["calls"] == 2 and only["user_llm_usage"]["calls"] == 2
    assert only["llm_usage"]["calls"] == 4 == len(only["llm_attempts"])
    assert [a["agent"] for a in only["llm_attempts"]] == ["rec", "rec", "user", "user"]
    assert all(a["failure"].startswith(cause) for a in only["llm_attempts"])


async def test_each_kind_of_call_sends_its_own_output_cap_and_length_limits(
    ml_dataset, ml_scorers, fake_openai, row
):
    history, candidates = row
    deps = await llm_deps(
        ml_dataset,
        ml_scorers,
        fake_openai,
        llm_max_tokens_rec=111,
        llm_max_tokens_user=99,
        llm_thoughts_max_chars=80,
        llm_reason_max_chars=150,
    )
    await run_loop(deps, history, candidates, max_rounds=1)
    rec_request, user_request = fake_openai.requests
    assert rec_request.body["max_completion_tokens"] == 111
    assert user_request.body["max_completion_tokens"] == 99
    for request in (rec_request, user_request):
        fields = request.body["response_format"]["json_schema"]["schema"]["properties"]
        assert fields["thoughts"]["maxLength"] == 80 and fields["reason"]["maxLength"] == 150
    assert "at most 80 characters" in rec_request.text and "at most 150 characters" in rec_request.text


async def test_no_thoughts_field_when_its_length_is_zero(ml_dataset, ml_scorers, fake_openai, row):
    history, candidates = row
    deps = await llm_deps(ml_dataset, ml_scorers, fake_openai, llm_thoughts_max_chars=0)
    fake_openai.enqueue(
        Reply.json({"item_id": candidates[1], "reason": "Short."}),
        Reply.json({"decision": "accept", "reason": "Fine."}),
    )
    result = await run_loop(deps, history, candidates, max_rounds=1)
    assert result.final_item == candidates[1] and not result.rounds[0]["rec_fallback"]
    schema = fake_openai.requests[0].body["response_format"]["json_schema"]["schema"]
    assert "thoughts" not in schema["properties"] and "thoughts" not in fake_openai.requests[0].text


async def test_the_loop_budget_sends_the_remaining_steps_to_the_offline_agents(
    ml_dataset, ml_scorers, fake_openai, row
):
    history, candidates = row
    deps = await llm_deps(ml_dataset, ml_scorers, fake_openai, llm_loop_budget_s=2.5, llm_timeout_s=5.0)
    fake_openai.enqueue(rec(candidates[3]).delayed(0.8), user("reject", "No.").delayed(0.8))
    result = await run_loop(deps, history, candidates, max_rounds=3)

    first, second, *_ = result.rounds
    assert not first["rec_fallback"] and not first["user_fallback"]
    assert second["rec_fallback"] and second["rec_fallback_cause"].startswith("budget: ")
    assert second["user_fallback"] and second["user_fallback_cause"].startswith("budget: ")
    assert second["llm_usage"]["calls"] == 0  # nothing was sent once the budget was spent
    assert len(fake_openai.requests) == 2
    assert result.usage["seconds"] >= 1.6


async def test_prompts_put_what_changes_last_so_the_server_can_reuse_its_prefix_cache(
    ml_dataset, ml_scorers, fake_openai, row
):
    history, candidates = row
    deps = await llm_deps(ml_dataset, ml_scorers, fake_openai)
    fake_openai.enqueue(
        rec(candidates[2]), user("reject", "Not that."), rec(candidates[4]), user("accept", "Yes.")
    )
    await run_loop(deps, history, candidates, max_rounds=2)
    rec1, user1, rec2, user2 = (r.messages for r in fake_openai.requests)
    # system and loop context identical across rounds; only the last message differs
    assert rec1[:2] == rec2[:2] and user1[:2] == user2[:2]
    assert rec1[-1] != rec2[-1] and user1[-1] != user2[-1]
    assert "Not that." in rec2[-1]["content"] and "Not that." not in rec2[1]["content"]
    assert ml_dataset.title(candidates[4]) in user2[-1]["content"]


async def test_long_item_lists_are_judged_in_bounded_calls(ml_dataset, ml_scorers, fake_openai, row):
    history, _ = row
    deps = await llm_deps(ml_dataset, ml_scorers, fake_openai)
    items = [i for i in range(100, 160) if i not in history][:45]
    verdict = await assess_items(deps, history, items)
    assert len(fake_openai.requests) == 3  # 20 + 20 + 5 items
    assert verdict.likes == [True] * 45 and verdict.usage["calls"] == 3 and not verdict.fallback
