"""One bounded, fully counted structured-output call to any OpenAI-compatible endpoint.

The loop's agents and the steering parser share this client. It goes through langchain-openai's
``ChatOpenAI`` (so any endpoint it supports works) but does the structured-output part itself,
because each call must be bounded and counted in ways ``with_structured_output`` cannot express:

- **Bounded.** Every call sends an output cap (``max_tokens``) for its kind, and free-text fields
  carry a ``maxLength`` in the schema sent (servers with grammar-constrained decoding, such as
  llama.cpp, enforce it). Each attempt's timeout is the smaller of ``timeout_s`` and what is left
  of the caller's budget; with less than :data:`MIN_ATTEMPT_S` left no attempt is made.
- **Every outcome is an answer or a failure, never an exception.** A cut-off answer (finish reason
  ``length``; the openai client raises ``LengthFinishReasonError`` for it), a content filter, an
  HTTP error, a timeout, a broken connection, garbage, or an answer the validator refuses: each is
  a failure of one attempt, retried (with the error fed back where the model can act on it) up to
  ``max_retries`` times. The caller then uses its offline fallback and records the cause.
- **Every token counted.** Usage of every attempt is summed, failed and cut-off ones included
  (the openai client keeps a cut-off completion's usage on the exception). Where the server sends
  no usage, the prompt (and any text that came back) is counted with the endpoint's own tokenizer
  when it has one (llama.cpp's ``/apply-template`` + ``/tokenize``), else estimated; each attempt
  records which (:class:`llm.usage.LLMAttempt` ``counted``). A timed-out attempt is charged its
  whole output cap (an upper bound: the server generated an unknown part of it).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar
from urllib.parse import urlsplit, urlunsplit

import httpx
import openai
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, ValidationError

from llm.config import LLMConfig, StructuredMethod
from llm.usage import LLMAttempt, LLMUsage, add_usage, empty_usage

FailureKind = Literal[
    "budget", "length", "content_filter", "timeout", "connection", "http", "invalid", "error"
]
"""Why an attempt (or a whole step) failed; the prefix of every ``fallback_cause``."""
AgentName = Literal["rec", "user", "parser"]

MIN_ATTEMPT_S = 1.0
"""An attempt with less time than this left in the budget would only time out: it is not made."""
FEEDBACK_ECHO_CHARS = 300
CHARS_PER_TOKEN = 4.0
"""The estimate used where neither the server nor its tokenizer can count (English text, BPE)."""
TOKENS_PER_MESSAGE = 4
"""Chat-template overhead per message in that estimate (role markers, separators)."""
NOT_RETRIED_STATUSES = frozenset({401, 403, 404})
"""Errors a retry cannot fix: a wrong key, a missing model or route."""

RETRY_INVALID = """Your previous answer could not be used: {error}
Answer again with only a valid JSON object as described above."""
RETRY_LENGTH = """Your previous answer was cut off after {max_tokens} tokens, so it could not be used.
Answer again with only the JSON object, much shorter: keep every text field to one short sentence."""

AnswerT = TypeVar("AnswerT", bound=BaseModel)
Validator = Callable[[AnswerT], str | None]
"""Returns why a parsed answer cannot be used, or None when it can."""

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CallLimits:
    """The bounds of one kind of call."""

    max_tokens: int
    timeout_s: float
    max_retries: int


def make_chat_model(llm: LLMConfig) -> ChatOpenAI:
    """The chat model of ``llm``'s endpoint (which must be set), with its own connection pool: use
    it from one event loop (build another for another loop)."""
    if not llm.base_url:
        raise ValueError("llm_base_url: not set; LLM agents need an OpenAI-compatible endpoint")
    return ChatOpenAI(
        base_url=llm.base_url,
        model=llm.model,
        api_key=llm.api_key,
        temperature=llm.temperature,
        timeout=llm.timeout_s,
        max_retries=0,  # our own bounded retry loop counts every attempt; see the module doc
        # Its own connection pool: langchain-openai otherwise shares one cached client per endpoint
        # across the process, and a kept-alive connection belongs to the event loop that opened it,
        # so a later event loop (a second asyncio.run, the next test) would reuse a dead one.
        http_async_client=openai.DefaultAsyncHttpxClient(),
    )


# --------------------------------------------------------------------------- counting tokens


class TokenCounter:
    """Counts tokens the server did not report: the endpoint's tokenizer, else an estimate.

    llama.cpp's server exposes ``POST /apply-template`` (the chat template, as the model sees it)
    and ``POST /tokenize``; other servers answer 404 and the estimate is used from then on.
    """

    def __init__(self, base_url: str | None, timeout_s: float = 2.0):
        self._root = server_root(base_url) if base_url else None
        self._timeout_s = timeout_s
        self._available: bool | None = None if self._root else False
        self._lock = threading.Lock()

    def count_messages(self, messages: list[dict[str, Any]]) -> tuple[int, Literal["tokenizer", "estimate"]]:
        if self._usable():
            try:
                prompt = self._post("/apply-template", {"messages": messages})["prompt"]
                return len(self._post("/tokenize", {"content": prompt})["tokens"]), "tokenizer"
            except (httpx.HTTPError, KeyError, TypeError, ValueError):
                self._disable()
        text = sum(len(str(m.get("content") or "")) for m in messages)
        return math.ceil(text / CHARS_PER_TOKEN) + TOKENS_PER_MESSAGE * len(messages), "estimate"

    def count_text(self, text: str) -> tuple[int, Literal["tokenizer", "estimate"]]:
        if not text:
            return 0, "estimate"
        if self._usable():
            try:
                return len(self._post("/tokenize", {"content": text})["tokens"]), "tokenizer"
            except (httpx.HTTPError, KeyError, TypeError, ValueError):
                self._disable()
        return math.ceil(len(text) / CHARS_PER_TOKEN), "estimate"

    def _usable(self) -> bool:
        with self._lock:
            return self._available is not False

    def _disable(self) -> None:
        with self._lock:
            if self._available is not False:
                _log.info("the LLM endpoint has no tokenizer route: unreported tokens are estimated")
            self._available = False

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = httpx.post(f"{self._root}{path}", json=body, timeout=self._timeout_s)
        response.raise_for_status()
        with self._lock:
            self._available = True
        return response.json()


def server_root(base_url: str) -> str:
    """``http://host:8080/v1`` -> ``http://host:8080`` (llama.cpp's own routes live at the root)."""
    parts = urlsplit(base_url.rstrip("/"))
    path = parts.path[: -len("/v1")] if parts.path.endswith("/v1") else parts.path
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


# --------------------------------------------------------------------------- one call


@dataclass
class CallOutcome(Generic[AnswerT]):
    """The answer (None after the last failed attempt), what every attempt cost, and why it failed."""

    answer: AnswerT | None
    usage: LLMUsage = field(default_factory=empty_usage)
    attempts: list[LLMAttempt] = field(default_factory=list)
    cause: str | None = None
    """``kind: detail`` of the last failure when there is no answer."""


class AttemptFailed(Exception):
    """One attempt gave no usable answer: ``kind`` (a :data:`FailureKind`) and a detail."""

    def __init__(self, kind: FailureKind, detail: str, *, retry: bool = True, feedback: str | None = None):
        super().__init__(f"{kind}: {detail}")
        self.kind, self.detail, self.retry, self.feedback = kind, detail, retry, feedback


class StructuredCaller(Generic[AnswerT]):
    """Structured answers of one schema and one kind of call, with bounded, counted retries."""

    def __init__(
        self,
        chat: ChatOpenAI,
        schema: type[AnswerT],
        *,
        method: StructuredMethod,
        limits: CallLimits,
        agent: AgentName,
        counter: TokenCounter,
    ):
        self.chat, self.schema, self.method = chat, schema, method
        self.limits, self.agent, self.counter = limits, agent, counter
        self.request = request_options(schema, method, limits.max_tokens)

    async def acall(
        self, messages: list[BaseMessage], validate: Validator[AnswerT], *, budget_s: float | None = None
    ) -> CallOutcome[AnswerT]:
        outcome: CallOutcome[AnswerT] = CallOutcome(None)
        conversation, deadline = list(messages), _deadline(budget_s)
        for attempt in range(1, self.limits.max_retries + 2):
            timeout = self._timeout(deadline, outcome)
            if timeout is None:
                break
            started = time.perf_counter()
            try:
                message = await self.chat.ainvoke(conversation, timeout=timeout, **self.request)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 -- the LLM boundary: every failure becomes a fallback
                message = exc
            settle = (self._settle, message, started, attempt, validate, outcome, conversation)
            # Counting what the server did not report may ask the endpoint's tokenizer (blocking HTTP).
            done = settle[0](*settle[1:]) if reported_usage(message) else await asyncio.to_thread(*settle)
            if done:
                break
        return outcome

    # --- one attempt ---------------------------------------------------------------------------

    def _timeout(self, deadline: float | None, outcome: CallOutcome[AnswerT]) -> float | None:
        """This attempt's timeout, or None (and the cause recorded) when the budget is spent."""
        if deadline is None:
            return self.limits.timeout_s
        left = deadline - time.monotonic()
        if left < MIN_ATTEMPT_S:
            outcome.cause = f"budget: the loop's LLM time budget was spent ({max(left, 0.0):.1f} s left)"
            return None
        return min(self.limits.timeout_s, left)

    def _settle(
        self,
        result: AIMessage | BaseException,
        started: float,
        attempt: int,
        validate: Validator[AnswerT],
        outcome: CallOutcome[AnswerT],
        conversation: list[BaseMessage],
    ) -> bool:
        """Count the attempt, keep a valid answer or the failure; True when no retry should follow."""
        seconds = time.perf_counter() - started
        try:
            if isinstance(result, BaseException):
                raise classify(result, self.limits.max_tokens) from result
            answer = self._parse(result)
            problem = validate(answer)
            if problem is not None:
                raise AttemptFailed("invalid", problem, feedback=RETRY_INVALID.format(error=problem))
        except AttemptFailed as failure:
            self._count(outcome, attempt, seconds, result, conversation, failure=f"{failure}")
            outcome.cause = f"{failure}"
            if failure.feedback is not None:
                echo = _echo(result)
                said = f"You answered: {echo}\n" if echo else ""
                conversation.append(HumanMessage(said + failure.feedback))
            return not failure.retry
        self._count(outcome, attempt, seconds, result, conversation, failure=None)
        outcome.answer, outcome.cause = answer, None
        return True

    def _parse(self, message: AIMessage) -> AnswerT:
        finish = (message.response_metadata or {}).get("finish_reason")
        if finish == "length":  # function calling: a cut-off tool call arrives without an exception
            raise length_failure(self.limits.max_tokens)
        if self.method == "function_calling":
            if not message.tool_calls:
                detail = "no tool call in the answer" + (
                    f" ({message.invalid_tool_calls[0].get('error')})" if message.invalid_tool_calls else ""
                )
                raise AttemptFailed("invalid", detail, feedback=RETRY_INVALID.format(error=detail))
            payload: Any = message.tool_calls[0].get("args", {})
        else:
            text = message.content if isinstance(message.content, str) else ""
            try:
                payload = json.loads(_json_text(text))
            except json.JSONDecodeError as exc:
                detail = f"the answer is not valid JSON ({exc.msg})"
                raise AttemptFailed("invalid", detail, feedback=RETRY_INVALID.format(error=detail)) from exc
        try:
            return self.schema.model_validate(payload)
        except ValidationError as exc:
            detail = "the JSON does not have the requested shape: " + "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'answer'}: {e['msg']}" for e in exc.errors()[:3]
            )
            raise AttemptFailed("invalid", detail, feedback=RETRY_INVALID.format(error=detail)) from exc

    def _count(
        self,
        outcome: CallOutcome[AnswerT],
        attempt: int,
        seconds: float,
        result: AIMessage | BaseException,
        conversation: list[BaseMessage],
        *,
        failure: str | None,
    ) -> None:
        reported = reported_usage(result)
        if reported is not None:
            prompt, completion, cached = reported
            counted: Literal["server", "tokenizer", "estimate"] = "server"
        else:
            prompt, counted = self.counter.count_messages(_as_dicts(conversation))
            completion, _ = self.counter.count_text(_echo(result, limit=None))
            cached = 0
            if isinstance(result, openai.APITimeoutError):
                # The server went on generating until it saw the client leave (llama.cpp checks
                # about once a second) and told no one how far it got: charge the whole cap, an
                # upper bound, so a budget is never under-spent.
                completion, counted = max(completion, self.limits.max_tokens), "estimate"
        record: LLMAttempt = {
            "agent": self.agent,
            "attempt": attempt,
            "ok": failure is None,
            "seconds": round(seconds, 4),
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "cached_tokens": cached,
            "counted": counted,
            "failure": failure,
        }
        outcome.attempts.append(record)
        outcome.usage = add_usage(
            outcome.usage,
            {
                "calls": 1,
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "cached_tokens": cached,
                "counted_calls": 0 if counted == "server" else 1,
                "seconds": seconds,
            },
        )


def _deadline(budget_s: float | None) -> float | None:
    return None if budget_s is None else time.monotonic() + budget_s


# --------------------------------------------------------------------------- pure helpers


def answer_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema sent to the server (pydantic's, with ``maxLength`` where fields declare it)."""
    return schema.model_json_schema()


def request_options(schema: type[BaseModel], method: StructuredMethod, max_tokens: int) -> dict[str, Any]:
    """The request fields that ask for a structured answer of ``schema``, capped at ``max_tokens``."""
    name, body = schema.__name__, answer_schema(schema)
    options: dict[str, Any] = {"max_tokens": max_tokens}
    if method == "json_schema":
        options["response_format"] = {"type": "json_schema", "json_schema": {"name": name, "schema": body}}
    elif method == "json_mode":
        options["response_format"] = {"type": "json_object"}
    elif method == "function_calling":
        description = (schema.__doc__ or name).strip()
        options["tools"] = [
            {"type": "function", "function": {"name": name, "description": description, "parameters": body}}
        ]
        options["tool_choice"] = {"type": "function", "function": {"name": name}}
    else:
        raise ValueError(f"method: must be json_schema, json_mode or function_calling, got {method!r}")
    return options


def length_failure(max_tokens: int) -> AttemptFailed:
    return AttemptFailed(
        "length",
        f"the answer was cut off at the output limit ({max_tokens} tokens or the server's own)",
        feedback=RETRY_LENGTH.format(max_tokens=max_tokens),
    )


def classify(exc: BaseException, max_tokens: int) -> AttemptFailed:
    """The failure an exception from the client stands for (every class the openai client raises)."""
    if isinstance(exc, AttemptFailed):
        return exc
    if isinstance(exc, openai.LengthFinishReasonError):
        return length_failure(max_tokens)
    if isinstance(exc, openai.ContentFilterFinishReasonError):
        return AttemptFailed("content_filter", "the server's content filter stopped the answer")
    if isinstance(exc, openai.APITimeoutError):
        return AttemptFailed("timeout", "the LLM call timed out")
    if isinstance(exc, openai.APIConnectionError):
        return AttemptFailed("connection", f"could not reach the LLM endpoint ({_short(exc)})")
    if isinstance(exc, openai.APIStatusError):
        return AttemptFailed(
            "http",
            f"the LLM endpoint answered HTTP {exc.status_code} ({_short(exc)})",
            retry=exc.status_code not in NOT_RETRIED_STATUSES,
        )
    if isinstance(exc, openai.APIResponseValidationError | ValueError | KeyError | TypeError):
        detail = f"the endpoint's response could not be read ({type(exc).__name__}: {_short(exc)})"
        return AttemptFailed("invalid", detail)
    _log.warning("unexpected error from the LLM client", exc_info=exc)
    return AttemptFailed("error", f"{type(exc).__name__}: {_short(exc)}")


def reported_usage(result: AIMessage | BaseException) -> tuple[int, int, int] | None:
    """(prompt, completion, cached) tokens the server reported for an attempt, if it did."""
    if isinstance(result, AIMessage):
        meta = result.usage_metadata
        if not meta:
            return None
        details = meta.get("input_token_details") or {}
        return int(meta["input_tokens"]), int(meta["output_tokens"]), int(details.get("cache_read") or 0)
    completion = getattr(result, "completion", None)  # Length/ContentFilterFinishReasonError keep it
    usage = getattr(completion, "usage", None)
    if usage is None:
        return None
    details = getattr(usage, "prompt_tokens_details", None)
    cached = int(getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
    return int(usage.prompt_tokens), int(usage.completion_tokens), cached


def _json_text(text: str) -> str:
    """The JSON object in an answer: small models wrap it in code fences or add words around it."""
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if 0 <= start < end else text


def _echo(result: AIMessage | BaseException, limit: int | None = FEEDBACK_ECHO_CHARS) -> str:
    """The model's raw answer (text or tool-call arguments), to show it its mistake or count it."""
    if isinstance(result, BaseException):
        completion = getattr(result, "completion", None)
        choices = getattr(completion, "choices", None) or []
        text = (getattr(choices[0].message, "content", None) or "") if choices else ""
    elif isinstance(result.content, str) and result.content:
        text = result.content
    elif result.tool_calls:
        text = json.dumps(result.tool_calls[0].get("args", {}))
    elif result.invalid_tool_calls:
        text = str(result.invalid_tool_calls[0].get("args") or "")
    else:
        text = ""
    return text if limit is None else text[:limit]


def _as_dicts(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    roles = {"system": "system", "human": "user", "ai": "assistant"}
    return [{"role": roles.get(m.type, "user"), "content": m.content} for m in messages]


def _short(exc: BaseException) -> str:
    return str(exc).replace("\n", " ")[:200]


@dataclass(frozen=True)
class LLMClient:
    """One chat model and token counter shared by every caller of a process."""

    llm: LLMConfig
    chat: ChatOpenAI
    counter: TokenCounter

    @classmethod
    def from_config(cls, llm: LLMConfig) -> LLMClient:
        return cls(llm, make_chat_model(llm), TokenCounter(str(llm.base_url)))

    def caller(self, schema: type[BaseModel], max_tokens: int, agent: AgentName) -> StructuredCaller[Any]:
        limits = CallLimits(max_tokens, self.llm.timeout_s, self.llm.max_retries)
        return StructuredCaller(
            self.chat,
            schema,
            method=self.llm.structured_method,
            limits=limits,
            agent=agent,
            counter=self.counter,
        )


def endpoint_model(llm: LLMConfig, timeout_s: float = 3.0) -> str:
    """The model name the endpoint reports (``GET /models``): the configured one when it is listed,
    else the first listed; the configured name when the endpoint lists none or cannot be asked.
    llama.cpp serves any configured name with the one model it loaded, so its own name is what
    the LLM weights are keyed by."""
    try:
        response = httpx.get(
            f"{str(llm.base_url).rstrip('/')}/models",
            headers={"Authorization": f"Bearer {llm.api_key}"},
            timeout=timeout_s,
        )
        response.raise_for_status()
        ids = [str(m.get("id")) for m in response.json().get("data", []) if m.get("id")]
    except (httpx.HTTPError, ValueError, AttributeError) as exc:
        _log.info("the LLM endpoint does not list its models (%s); keyed by the configured name", _short(exc))
        return llm.model
    return llm.model if llm.model in ids or not ids else ids[0]
