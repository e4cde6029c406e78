"""llm.client: every failure becomes a counted, explained fallback; calls are capped and timed.

Two levels: the failure classification and retry loop with a scripted chat model (every exception
class the openai client defines), and the real langchain-openai -> HTTP path against the local
OpenAI-compatible test server (cut-off answers, content filters, missing usage, cached tokens).
"""

from __future__ import annotations

import asyncio
import inspect
import time

import httpx
import openai
import pytest
from fake_openai import FakeOpenAI, Reply
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from openai.types.chat import ChatCompletion
from pydantic import BaseModel, Field

from llm.client import (
    MIN_ATTEMPT_S,
    CallLimits,
    CallOutcome,
    StructuredCaller,
    TokenCounter,
    classify,
    make_chat_model,
    request_options,
)
from llm.config import LLMConfig


class Answer(BaseModel):
    """A test answer."""

    thoughts: str = Field(json_schema_extra={"maxLength": 50})
    value: int


MESSAGES = [SystemMessage("You answer with JSON."), HumanMessage("Pick a number.")]
GOOD = '{"thoughts": "easy", "value": 7}'


def _request() -> httpx.Request:
    return httpx.Request("POST", "http://llm.test/v1/chat/completions")


def _response(status: int) -> httpx.Response:
    return httpx.Response(status, request=_request(), json={"error": {"message": "boom"}})


def _completion(finish_reason: str) -> ChatCompletion:
    return ChatCompletion.model_validate(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": finish_reason,
                    "message": {"role": "assistant", "content": '{"thoughts": "and so on and so'},
                }
            ],
            "usage": {
                "prompt_tokens": 40,
                "completion_tokens": 16,
                "total_tokens": 56,
                "prompt_tokens_details": {"cached_tokens": 24},
            },
        }
    )


# Every exception class the openai client exports, with how to build one and what it must mean.
# A class added by an openai upgrade fails test_every_openai_exception_class_is_covered until it
# is added here, so nothing the client can raise goes unclassified.
OPENAI_ERRORS = {
    "OpenAIError": (lambda: openai.OpenAIError("base"), "error"),
    "APIError": (lambda: openai.APIError("boom", _request(), body=None), "error"),
    "APIConnectionError": (lambda: openai.APIConnectionError(request=_request()), "connection"),
    "APITimeoutError": (lambda: openai.APITimeoutError(_request()), "timeout"),
    "APIResponseValidationError": (
        lambda: openai.APIResponseValidationError(_response(200), body=None),
        "invalid",
    ),
    "APIStatusError": (lambda: openai.APIStatusError("boom", response=_response(502), body=None), "http"),
    "BadRequestError": (lambda: openai.BadRequestError("bad", response=_response(400), body=None), "http"),
    "AuthenticationError": (
        lambda: openai.AuthenticationError("key", response=_response(401), body=None),
        "http",
    ),
    "OAuthError": (lambda: openai.OAuthError(response=_response(401), body=None), "http"),
    "PermissionDeniedError": (
        lambda: openai.PermissionDeniedError("no", response=_response(403), body=None),
        "http",
    ),
    "NotFoundError": (lambda: openai.NotFoundError("no", response=_response(404), body=None), "http"),
    "ConflictError": (lambda: openai.ConflictError("no", response=_response(409), body=None), "http"),
    "UnprocessableEntityError": (
        lambda: openai.UnprocessableEntityError("no", response=_response(422), body=None),
        "http",
    ),
    "RateLimitError": (lambda: openai.RateLimitError("slow", response=_response(429), body=None), "http"),
    "InternalServerError": (
        lambda: openai.InternalServerError("oops", response=_response(500), body=None),
        "http",
    ),
    "LengthFinishReasonError": (
        lambda: openai.LengthFinishReasonError(completion=_completion("length")),
        "length",
    ),
    "ContentFilterFinishReasonError": (lambda: openai.ContentFilterFinishReasonError(), "content_filter"),
    "InvalidWebhookSignatureError": (lambda: openai.InvalidWebhookSignatureError("sig"), "invalid"),
    "WebSocketConnectionClosedError": (
        lambda: openai.WebSocketConnectionClosedError("closed", unsent_messages=[]),
        "error",
    ),
    "WebSocketQueueFullError": (lambda: openai.WebSocketQueueFullError("full"), "error"),
}


def _openai_exception_classes() -> set[str]:
    classes = {name: getattr(openai, name) for name in dir(openai) if not name.startswith("_")}
    return {
        name for name, value in classes.items() if inspect.isclass(value) and issubclass(value, Exception)
    }


def test_every_openai_exception_class_is_covered():
    assert _openai_exception_classes() <= set(OPENAI_ERRORS), "classify the new openai exception classes"


@pytest.mark.parametrize("name", sorted(OPENAI_ERRORS))
def test_every_openai_exception_is_classified(name):
    make, kind = OPENAI_ERRORS[name]
    failure = classify(make(), max_tokens=64)
    assert failure.kind == kind
    assert str(failure).startswith(f"{kind}: ")


class ScriptedChat:
    """Stands in for ChatOpenAI: answers (AIMessage) or raises, in order; records each call's kwargs."""

    def __init__(self, *results):
        self.results = list(results)
        self.calls: list[dict] = []

    def invoke(self, messages, **kwargs):
        self.calls.append({"messages": list(messages), **kwargs})
        result = self.results.pop(0)
        if isinstance(result, BaseException):
            raise result
        return result

    async def ainvoke(self, messages, **kwargs):
        return self.invoke(messages, **kwargs)


def _message(content: str, prompt: int = 30, completion: int = 9, cached: int = 0) -> AIMessage:
    return AIMessage(
        content=content,
        usage_metadata={
            "input_tokens": prompt,
            "output_tokens": completion,
            "total_tokens": prompt + completion,
            "input_token_details": {"cache_read": cached},
        },
        response_metadata={"finish_reason": "stop"},
    )


def _caller(chat, *, retries: int = 2, max_tokens: int = 64, timeout_s: float = 9.0, method="json_schema"):
    return StructuredCaller(
        chat,
        Answer,
        method=method,
        limits=CallLimits(max_tokens, timeout_s, retries),
        agent="rec",
        counter=TokenCounter(None),
    )


def _ok(answer: Answer) -> str | None:
    return None


@pytest.mark.parametrize("name", sorted(OPENAI_ERRORS))
async def test_a_raising_client_never_escapes_and_every_attempt_is_counted(name):
    make, kind = OPENAI_ERRORS[name]
    errors = [make() for _ in range(3)]
    chat = ScriptedChat(*errors)
    outcome = await _caller(chat).acall(MESSAGES, _ok)

    assert outcome.answer is None
    assert outcome.cause is not None and outcome.cause.startswith(f"{kind}: ")
    tried = len(chat.calls)
    assert tried == (1 if getattr(errors[0], "status_code", None) in (401, 403, 404) else 3)
    assert outcome.usage["calls"] == tried == len(outcome.attempts)
    assert all(not a["ok"] and a["failure"].startswith(kind) for a in outcome.attempts)
    if name == "LengthFinishReasonError":  # the cut-off completion's own usage is kept
        assert (
            outcome.usage["prompt_tokens"] == 40 * tried and outcome.usage["completion_tokens"] == 16 * tried
        )
        assert outcome.usage["cached_tokens"] == 24 * tried and outcome.usage["counted_calls"] == 0
    else:  # nothing reported: the prompt was counted locally (an estimate without a tokenizer)
        assert outcome.usage["prompt_tokens"] > 0 and outcome.usage["counted_calls"] == tried
        assert {a["counted"] for a in outcome.attempts} == {"estimate"}


async def test_a_failure_then_a_good_answer_keeps_the_answer_and_counts_both():
    chat = ScriptedChat(openai.LengthFinishReasonError(completion=_completion("length")), _message(GOOD))
    outcome = await _caller(chat).acall(MESSAGES, _ok)
    assert outcome.answer == Answer(thoughts="easy", value=7) and outcome.cause is None
    assert [a["ok"] for a in outcome.attempts] == [False, True]
    assert outcome.usage["calls"] == 2
    assert outcome.usage["prompt_tokens"] == 40 + 30 and outcome.usage["completion_tokens"] == 16 + 9
    # the retry tells the model it was cut off and asks for a shorter answer
    retry_text = chat.calls[1]["messages"][-1].content
    assert "cut off after 64 tokens" in retry_text and "shorter" in retry_text


async def test_invalid_answers_are_fed_back_and_validation_errors_name_the_problem():
    chat = ScriptedChat(
        _message("not json at all"), _message('{"thoughts": "x", "value": 3}'), _message(GOOD)
    )
    outcome = await _caller(chat).acall(MESSAGES, lambda a: "value must be 7" if a.value != 7 else None)
    assert outcome.answer is not None and outcome.answer.value == 7
    assert "not valid JSON" in chat.calls[1]["messages"][-1].content
    assert "value must be 7" in chat.calls[2]["messages"][-1].content
    assert "You answered: " in chat.calls[2]["messages"][-1].content


async def test_each_call_is_capped_and_carries_its_timeout():
    chat = ScriptedChat(_message(GOOD))
    await _caller(chat, max_tokens=77, timeout_s=12.5).acall(MESSAGES, _ok)
    (sent,) = chat.calls
    assert sent["max_tokens"] == 77 and sent["timeout"] == 12.5
    schema = sent["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["thoughts"]["maxLength"] == 50


async def test_the_budget_shortens_timeouts_and_stops_attempts_when_spent():
    chat = ScriptedChat(openai.APITimeoutError(_request()), _message(GOOD))
    outcome = await _caller(chat, timeout_s=30.0).acall(MESSAGES, _ok, budget_s=5.0)
    assert chat.calls[0]["timeout"] <= 5.0  # never longer than what is left of the loop's budget
    assert outcome.answer is not None

    spent = ScriptedChat(_message(GOOD))
    outcome = await _caller(spent).acall(MESSAGES, _ok, budget_s=MIN_ATTEMPT_S / 2)
    assert spent.calls == [] and outcome.answer is None and outcome.usage["calls"] == 0
    assert outcome.cause is not None and outcome.cause.startswith("budget: ")


async def test_a_slow_first_attempt_leaves_no_time_for_a_second():
    class Slow(ScriptedChat):
        def invoke(self, messages, **kwargs):
            time.sleep(0.3)
            return super().invoke(messages, **kwargs)

    chat = Slow(openai.APITimeoutError(_request()), _message(GOOD))
    outcome = await _caller(chat).acall(MESSAGES, _ok, budget_s=MIN_ATTEMPT_S + 0.2)
    assert len(chat.calls) == 1 and outcome.cause is not None and outcome.cause.startswith("budget: ")


@pytest.mark.parametrize("method", ["json_schema", "json_mode", "function_calling"])
def test_request_options_ask_for_the_schema_in_each_method(method):
    options = request_options(Answer, method, 99)
    assert options["max_tokens"] == 99
    if method == "json_schema":
        assert options["response_format"]["json_schema"]["name"] == "Answer"
    elif method == "json_mode":
        assert options["response_format"] == {"type": "json_object"}
    else:
        assert options["tool_choice"]["function"]["name"] == "Answer"
        assert options["tools"][0]["function"]["parameters"]["properties"]["value"]["type"] == "integer"


# --- the real client against the local OpenAI-compatible server ------------------------------------


def _http_caller(server: FakeOpenAI, method: str = "json_schema", retries: int = 1, timeout_s: float = 5.0):
    endpoint = LLMConfig(base_url=server.base_url, model="m", api_key="k", timeout_s=timeout_s)
    return StructuredCaller(
        make_chat_model(endpoint),
        Answer,
        method=method,
        limits=CallLimits(48, timeout_s, retries),
        agent="user",
        counter=TokenCounter(server.base_url),
    )


@pytest.mark.parametrize("method", ["json_schema", "json_mode", "function_calling"])
async def test_cut_off_answers_over_http_are_retried_then_reported(method):
    with FakeOpenAI() as server:
        server.enqueue(Reply.cut_off(), Reply.cut_off())
        outcome = await _http_caller(server, method).acall(MESSAGES, _ok)
        sent = [r.body for r in server.requests]
    assert outcome.answer is None and outcome.cause is not None and outcome.cause.startswith("length: ")
    assert len(sent) == 2 and all(body["max_completion_tokens"] == 48 for body in sent)
    assert outcome.usage["calls"] == 2 and outcome.usage["completion_tokens"] > 0  # cut-off text counted
    assert outcome.usage["counted_calls"] == 0  # the server reported usage even for the cut-off answers


async def test_content_filter_over_http_is_a_failure_with_its_cause():
    with FakeOpenAI() as server:
        server.enqueue(Reply.content_filtered(), Reply.json({"thoughts": "t", "value": 1}))
        outcome = await _http_caller(server).acall(MESSAGES, _ok)
    assert outcome.answer is not None and outcome.answer.value == 1
    assert outcome.attempts[0]["failure"].startswith("content_filter: ")


async def test_garbage_bodies_and_errors_over_http_fall_back_without_raising():
    with FakeOpenAI() as server:
        server.enqueue(Reply.raw({"no": "choices"}), Reply.raw("<html>proxy error</html>", status=502))
        outcome = await _http_caller(server).acall(MESSAGES, _ok)
    assert outcome.answer is None
    assert outcome.attempts[0]["failure"].startswith("invalid: ")
    assert outcome.attempts[1]["failure"].startswith("http: the LLM endpoint answered HTTP 502")


async def test_unreachable_endpoint_is_a_connection_failure():
    endpoint = LLMConfig(base_url="http://127.0.0.1:9/v1", model="m", api_key="k", timeout_s=2.0)
    caller = StructuredCaller(
        make_chat_model(endpoint),
        Answer,
        method="json_schema",
        limits=CallLimits(32, 2.0, 0),
        agent="rec",
        counter=TokenCounter(endpoint.base_url),
    )
    outcome = await caller.acall(MESSAGES, _ok)
    assert outcome.cause is not None and outcome.cause.startswith("connection: ")
    assert outcome.attempts[0]["counted"] == "estimate"  # no tokenizer answered either


async def test_missing_usage_is_counted_with_the_endpoint_tokenizer_and_cached_tokens_reported():
    with FakeOpenAI(tokenizer=True) as server:
        server.enqueue(
            Reply.json({"thoughts": "t", "value": 1}).with_usage(usage=False),
            Reply.json({"thoughts": "t", "value": 2}).with_usage(cached_tokens=5),
        )
        caller = _http_caller(server)
        first = await caller.acall(MESSAGES, _ok)
        second = await caller.acall(MESSAGES, _ok)
        assert server.tokenizer_requests >= 2  # apply-template + tokenize for the first call only
    (counted,) = first.attempts
    assert counted["counted"] == "tokenizer"
    # one token per word: the tokenizer route counts the prompt as the fake server does
    assert counted["prompt_tokens"] == len(" ".join(m.content for m in MESSAGES).split())
    assert first.usage["counted_calls"] == 1
    assert second.attempts[0]["counted"] == "server" and second.usage["cached_tokens"] == 5


async def test_a_timeout_over_http_counts_the_attempt_and_its_time():
    with FakeOpenAI() as server:
        server.enqueue(Reply.json({"thoughts": "t", "value": 1}).delayed(1.5))
        outcome = await _http_caller(server, retries=0, timeout_s=0.4).acall(MESSAGES, _ok)
    (attempt,) = outcome.attempts
    assert attempt["failure"].startswith("timeout: ") and 0.3 < attempt["seconds"] < 1.5
    assert outcome.usage["seconds"] == pytest.approx(attempt["seconds"], abs=1e-3)
    # the server may have generated up to the cap before it saw the client leave: charged in full
    assert attempt["completion_tokens"] == 48 and attempt["counted"] == "estimate"
    assert attempt["prompt_tokens"] > 0 and outcome.usage["completion_tokens"] == 48


def test_chat_models_on_successive_event_loops_never_share_a_dead_loops_connections():
    """Two runs in one process, each on its own event loop (sequential ``asyncio.run``, or two
    tests), against a server that keeps connections alive. A pooled connection belongs to the loop
    that opened it; reusing it from the next loop fails with 'Event loop is closed'."""

    def one_run(server: FakeOpenAI) -> CallOutcome:
        return asyncio.run(_http_caller(server).acall(MESSAGES, _ok))

    with FakeOpenAI(keep_alive=True) as server:
        server.enqueue(Reply.json({"thoughts": "t", "value": 1}), Reply.json({"thoughts": "t", "value": 2}))
        first, second = one_run(server), one_run(server)
    assert first.answer is not None and first.answer.value == 1
    assert second.cause is None and second.answer is not None and second.answer.value == 2
