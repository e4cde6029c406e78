"""LLM agents on any OpenAI-compatible endpoint, through langchain-openai's ChatOpenAI.

Each step is one structured-output call (``Settings.llm_structured_method``:
json_schema, json_mode or function_calling -- llama.cpp's server, for one,
rejects json_schema). An answer that cannot be used (unparseable, an item that
is not a candidate, an empty reason) or a failed HTTP call (5xx, timeout) is
retried up to ``Settings.llm_max_retries`` times with the error fed back; after
that the offline agent answers that step and the round records the fallback.
ChatOpenAI's own HTTP retries are switched off so this is the only retry loop
and every attempt is counted.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

import openai
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, Field

from app.data.dataset import Dataset
from app.settings import Settings
from graph import describe, prompts
from graph.agents.base import (
    JudgeItemsContext,
    Judgement,
    Proposal,
    RecAgent,
    RecContext,
    UserAgent,
    UserContext,
)
from graph.agents.offline import OfflineRecAgent, OfflineUserAgent
from graph.state import LLMUsage, MemoryEntry, add_usage, empty_usage

FEEDBACK_ECHO_CHARS = 500


class RecAnswer(BaseModel):
    """The recommendation agent's structured answer."""

    thoughts: str = Field(description="Step-by-step reasoning.")
    item_id: int = Field(description="Id of the recommended candidate.")
    reason: str = Field(description="Why this item, in one or two sentences.")


class UserAnswer(BaseModel):
    """The user agent's structured answer."""

    thoughts: str = Field(description="Step-by-step reasoning.")
    decision: Literal["accept", "reject"]
    reason: str = Field(description="Why, in one or two sentences.")


class ItemDecision(BaseModel):
    item_id: int
    like: bool


class ItemsAnswer(BaseModel):
    """The user agent's verdict on a list of items (user simulation)."""

    thoughts: str = Field(description="Step-by-step reasoning.")
    decisions: list[ItemDecision]


AnswerT = TypeVar("AnswerT", bound=BaseModel)
Validator = Callable[[AnswerT], str | None]


def make_chat_model(settings: Settings) -> ChatOpenAI:
    if not settings.llm_base_url:
        raise ValueError("llm_base_url: not set; LLM agents need an OpenAI-compatible endpoint")
    return ChatOpenAI(
        base_url=settings.llm_base_url,
        model=settings.llm_model,
        api_key=settings.llm_api_key,
        temperature=settings.llm_temperature,
        timeout=settings.llm_timeout_s,
        max_retries=0,  # our own bounded retry loop feeds validation errors back; see module doc
    )


@dataclass
class CallOutcome(Generic[AnswerT]):
    answer: AnswerT | None
    usage: LLMUsage = field(default_factory=empty_usage)
    error: str | None = None


class StructuredCaller(Generic[AnswerT]):
    """One structured-output call with bounded, error-feeding retries."""

    def __init__(self, chat: ChatOpenAI, schema: type[AnswerT], settings: Settings):
        self.schema = schema
        self.max_retries = settings.llm_max_retries
        self.runnable: Runnable[Any, dict[str, Any]] = chat.with_structured_output(
            schema, method=settings.llm_structured_method, include_raw=True
        )

    def call(self, messages: list[BaseMessage], validate: Validator[AnswerT]) -> CallOutcome[AnswerT]:
        outcome: CallOutcome[AnswerT] = CallOutcome(None)
        conversation = list(messages)
        for _ in range(1 + self.max_retries):
            try:
                result = self.runnable.invoke(conversation)
            except (openai.APIError, ValueError) as exc:
                self._failed(exc, outcome, conversation)
                continue
            if self._accept(result, validate, outcome, conversation):
                return outcome
        return outcome

    async def acall(self, messages: list[BaseMessage], validate: Validator[AnswerT]) -> CallOutcome[AnswerT]:
        outcome: CallOutcome[AnswerT] = CallOutcome(None)
        conversation = list(messages)
        for _ in range(1 + self.max_retries):
            try:
                result = await self.runnable.ainvoke(conversation)
            except (openai.APIError, ValueError) as exc:
                self._failed(exc, outcome, conversation)
                continue
            if self._accept(result, validate, outcome, conversation):
                return outcome
        return outcome

    @staticmethod
    def _failed(exc: Exception, outcome: CallOutcome[AnswerT], conversation: list[BaseMessage]) -> None:
        """A call that raised: an HTTP failure (nothing to feed back) or an unparseable answer."""
        outcome.usage, outcome.error = add_usage(outcome.usage, _one_call()), _describe_failure(exc)
        if not isinstance(exc, openai.APIError):
            conversation.append(HumanMessage(prompts.RETRY_FEEDBACK.format(error=outcome.error)))

    def _accept(
        self,
        result: dict[str, Any],
        validate: Validator[AnswerT],
        outcome: CallOutcome[AnswerT],
        conversation: list[BaseMessage],
    ) -> bool:
        """Record usage; keep a valid answer, or append the error as feedback for the next attempt."""
        raw = result.get("raw")
        outcome.usage = add_usage(outcome.usage, _usage_of(raw))
        answer = result.get("parsed")
        if result.get("parsing_error") is not None or not isinstance(answer, self.schema):
            error = f"the answer is not valid JSON of the requested shape ({result.get('parsing_error')})"
        else:
            error = validate(answer)
        if error is None:
            outcome.answer, outcome.error = answer, None
            return True
        outcome.error = error
        echo = _echo(raw)
        said = f"You answered: {echo}\n" if echo else ""
        conversation.append(HumanMessage(said + prompts.RETRY_FEEDBACK.format(error=error)))
        return False


def _one_call() -> LLMUsage:
    return {"calls": 1, "prompt_tokens": 0, "completion_tokens": 0}


def _usage_of(raw: Any) -> LLMUsage:
    meta = getattr(raw, "usage_metadata", None) or {}
    return {
        "calls": 1,
        "prompt_tokens": int(meta.get("input_tokens", 0)),
        "completion_tokens": int(meta.get("output_tokens", 0)),
    }


def _echo(raw: Any) -> str:
    """The model's raw answer (text or tool-call arguments), shortened, to show it its mistake."""
    if not isinstance(raw, AIMessage):
        return ""
    text = raw.content if isinstance(raw.content, str) and raw.content else ""
    if not text and raw.tool_calls:
        text = json.dumps(raw.tool_calls[0].get("args", {}))
    return text[:FEEDBACK_ECHO_CHARS]


def _describe_failure(exc: Exception) -> str:
    if isinstance(exc, openai.APITimeoutError):
        return "the LLM call timed out"
    if isinstance(exc, openai.APIStatusError):
        return f"the LLM endpoint answered HTTP {exc.status_code}"
    if isinstance(exc, openai.APIError):
        return f"the LLM call failed: {type(exc).__name__}: {exc}"[:FEEDBACK_ECHO_CHARS]
    return f"the answer could not be parsed: {exc}"[:FEEDBACK_ECHO_CHARS]


class PromptBook:
    """Renders the prompt templates for one catalog."""

    def __init__(self, catalog: Dataset):
        self.catalog = catalog
        self.domain, self.item_kind = prompts.DOMAINS.get(catalog.name, prompts.DEFAULT_DOMAIN)

    def history(self, history: Sequence[int]) -> str:
        return describe.listing(self.catalog, history)

    def memory(self, memory: Sequence[MemoryEntry]) -> str:
        if not memory:
            return prompts.MEMORY_EMPTY
        memory = memory[-prompts.MEMORY_SHOWN :]  # a long-lived session must not grow the prompt forever
        lines = [
            prompts.MEMORY_ENTRY.format(
                item=describe.label(self.catalog, m["item"]),
                rec_reason=m["rec_reason"],
                user_reason=m["user_reason"],
            )
            for m in memory
        ]
        return "\n".join([prompts.MEMORY_HEADER, *lines])

    @staticmethod
    def preferences(preferences: dict[str, Any] | None) -> str:
        if not preferences:
            return prompts.NO_PREFERENCES
        return prompts.PREFERENCES.format(preferences=json.dumps(preferences, sort_keys=True))

    def system(self, template: str) -> SystemMessage:
        return SystemMessage(template.format(domain=self.domain, item_kind=self.item_kind))


class LLMRecAgent(RecAgent):
    def __init__(self, catalog: Dataset, settings: Settings, chat: ChatOpenAI, *, use_prior: bool = True):
        self.book = PromptBook(catalog)
        self.use_prior = use_prior
        self.fallback = OfflineRecAgent(catalog, use_prior=use_prior)
        self.caller = StructuredCaller(chat, RecAnswer, settings)

    def messages(self, ctx: RecContext) -> list[BaseMessage]:
        catalog = self.book.catalog
        prior = (
            prompts.REC_PRIOR.format(prior=describe.label(catalog, ctx.prior_item))
            if self.use_prior and ctx.prior_item is not None
            else prompts.REC_NO_PRIOR
        )
        text = prompts.REC_USER.format(
            history=self.book.history(ctx.history),
            candidates=describe.listing(catalog, ctx.candidates),
            prior=prior,
            memory=self.book.memory(ctx.memory),
            preferences=self.book.preferences(ctx.preferences),
        )
        return [self.book.system(prompts.REC_SYSTEM), HumanMessage(text)]

    @staticmethod
    def _validator(ctx: RecContext) -> Validator[RecAnswer]:
        allowed = set(ctx.candidates)

        def validate(answer: RecAnswer) -> str | None:
            if answer.item_id not in allowed:
                return f"item_id {answer.item_id} is not one of the candidate ids"
            if not answer.reason.strip():
                return "reason is empty"
            return None

        return validate

    def _finish(self, ctx: RecContext, outcome: CallOutcome[RecAnswer]) -> Proposal:
        if outcome.answer is not None:
            return Proposal(outcome.answer.item_id, outcome.answer.reason.strip(), usage=outcome.usage)
        offline = self.fallback.propose(ctx)
        return Proposal(offline.item, offline.reason, fallback=True, usage=outcome.usage, error=outcome.error)

    def propose(self, ctx: RecContext) -> Proposal:
        return self._finish(ctx, self.caller.call(self.messages(ctx), self._validator(ctx)))

    async def apropose(self, ctx: RecContext) -> Proposal:
        return self._finish(ctx, await self.caller.acall(self.messages(ctx), self._validator(ctx)))


class LLMUserAgent(UserAgent):
    def __init__(
        self,
        catalog: Dataset,
        settings: Settings,
        chat: ChatOpenAI,
        fallback: OfflineUserAgent,
        *,
        use_reward: bool = True,
    ):
        self.book = PromptBook(catalog)
        self.use_reward = use_reward
        self.reward_display = settings.reward_display
        self.fallback = fallback
        self.judge_caller = StructuredCaller(chat, UserAnswer, settings)
        self.items_caller = StructuredCaller(chat, ItemsAnswer, settings)

    def _reward(self, ctx: UserContext) -> str:
        if not self.use_reward:
            return prompts.REWARD_NONE
        rank, n = describe.ordinal(ctx.reward_rank), len(ctx.candidates)
        if self.reward_display == "score":
            return prompts.REWARD_SCORE.format(score=ctx.reward_score)
        picks = describe.listing(self.book.catalog, ctx.top_picks)
        return prompts.REWARD_TOP_PICKS.format(rank=rank, n=n, top_picks=picks)

    def messages(self, ctx: UserContext) -> list[BaseMessage]:
        text = prompts.USER_JUDGE.format(
            history=self.book.history(ctx.history),
            item=describe.label(self.book.catalog, ctx.item),
            rec_reason=ctx.rec_reason,
            reward=self._reward(ctx),
            memory=self.book.memory(ctx.memory),
            preferences=self.book.preferences(ctx.preferences),
        )
        return [self.book.system(prompts.USER_SYSTEM), HumanMessage(text)]

    @staticmethod
    def _validate(answer: UserAnswer) -> str | None:
        return "reason is empty" if not answer.reason.strip() else None

    def _finish(self, ctx: UserContext, outcome: CallOutcome[UserAnswer]) -> Judgement:
        if outcome.answer is not None:
            return Judgement(outcome.answer.decision, outcome.answer.reason.strip(), usage=outcome.usage)
        offline = self.fallback.judge(ctx)
        return Judgement(
            offline.decision,
            offline.reason,
            offline.preferred_items,
            fallback=True,
            usage=outcome.usage,
            error=outcome.error,
        )

    def judge(self, ctx: UserContext) -> Judgement:
        return self._finish(ctx, self.judge_caller.call(self.messages(ctx), self._validate))

    async def ajudge(self, ctx: UserContext) -> Judgement:
        return self._finish(ctx, await self.judge_caller.acall(self.messages(ctx), self._validate))

    def items_messages(self, ctx: JudgeItemsContext) -> list[BaseMessage]:
        text = prompts.USER_JUDGE_ITEMS.format(
            history=self.book.history(ctx.history),
            memory=self.book.memory(ctx.memory),
            preferences=self.book.preferences(ctx.preferences),
            items=describe.listing(self.book.catalog, ctx.items),
        )
        return [self.book.system(prompts.USER_SYSTEM), HumanMessage(text)]

    @staticmethod
    def _items_validator(ctx: JudgeItemsContext) -> Validator[ItemsAnswer]:
        expected = sorted(ctx.items)

        def validate(answer: ItemsAnswer) -> str | None:
            got = sorted(d.item_id for d in answer.decisions)
            return None if got == expected else "decisions must name every listed item id exactly once"

        return validate

    def _items_finish(self, ctx: JudgeItemsContext, outcome: CallOutcome[ItemsAnswer]) -> list[bool]:
        if outcome.answer is None:
            return self.fallback.judge_items(ctx)
        like = {d.item_id: d.like for d in outcome.answer.decisions}
        return [like[i] for i in ctx.items]

    def judge_items(self, ctx: JudgeItemsContext) -> list[bool]:
        return self._items_finish(
            ctx, self.items_caller.call(self.items_messages(ctx), self._items_validator(ctx))
        )

    async def ajudge_items(self, ctx: JudgeItemsContext) -> list[bool]:
        outcome = await self.items_caller.acall(self.items_messages(ctx), self._items_validator(ctx))
        return self._items_finish(ctx, outcome)
