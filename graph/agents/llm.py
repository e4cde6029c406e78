"""LLM agents on any OpenAI-compatible endpoint (llm.client, through langchain-openai).

Each step is one structured-output call of its kind (recommend, judge, judge a list), bounded
by that kind's output cap and by what is left of the loop's LLM time budget. An answer that
cannot be used (cut off, unparseable, an item that is not a candidate, an empty reason) or a
failed call (HTTP error, timeout, content filter) is retried with the error fed back; after the
last retry the offline agent answers that step, and the round records the fallback and its cause.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field, create_model

from graph import describe, prompts
from graph.agents.base import ItemsVerdict, JudgeItemsContext, RecAgent, RecContext, UserAgent, UserContext
from graph.agents.evidence import percent
from graph.agents.llm_evidence import (
    Combined,
    LLMWeights,
    combine,
    least_pick_margin,
    pick_margin,
    settled,
    shortlist,
    verdict_margin,
)
from graph.agents.offline import OfflineRecAgent, OfflineUserAgent
from graph.config import LoopConfig
from graph.state import Judgement, MemoryEntry, Proposal, make_judgement, make_proposal
from llm.client import CallOutcome, LLMClient, Validator
from llm.config import LLMConfig
from llm.usage import sum_usage
from recmodels.dataset import Dataset

# --------------------------------------------------------------------------- answer shapes


def _text(description: str, max_chars: int) -> Any:
    # maxLength goes into the schema sent (grammar-constrained servers enforce it) but is not
    # validated here: a server that ignores it gets its text shortened, not a retry.
    return Field(description=description, json_schema_extra={"maxLength": max_chars})


def _with_thoughts(name: str, doc: str, thoughts_chars: int, **fields: Any) -> type[BaseModel]:
    """A schema with an optional leading ``thoughts`` field (reasoning before the answer)."""
    if thoughts_chars > 0:
        fields = {"thoughts": (str, _text("Brief step-by-step reasoning.", thoughts_chars)), **fields}
    model = create_model(name, **fields)
    model.__doc__ = doc
    return model


class ItemDecision(BaseModel):
    item_id: int
    like: bool


@dataclass(frozen=True)
class AnswerShapes:
    """The structured answers' schemas, with the text limits of the LLM configuration."""

    rec: type[BaseModel]
    user: type[BaseModel]
    items: type[BaseModel]
    thoughts_chars: int
    reason_chars: int

    @classmethod
    def from_config(cls, llm: LLMConfig) -> AnswerShapes:
        thoughts, reason = llm.thoughts_max_chars, llm.reason_max_chars
        return cls(
            rec=_with_thoughts(
                "RecAnswer",
                "The recommendation agent's answer.",
                thoughts,
                item_id=(int, Field(description="Id of the recommended candidate.")),
                reason=(str, _text("Why this item, in one short sentence.", reason)),
            ),
            user=_with_thoughts(
                "UserAnswer",
                "The user agent's verdict on one proposal.",
                thoughts,
                decision=(Literal["accept", "reject"], Field(description="Accept or reject the proposal.")),
                reason=(str, _text("Why, in one short sentence.", reason)),
            ),
            items=_with_thoughts(
                "ItemsAnswer",
                "The user agent's verdict on each listed item.",
                thoughts,
                decisions=(list[ItemDecision], Field(description="One entry per listed item.")),
            ),
            thoughts_chars=thoughts,
            reason_chars=reason,
        )

    def answer_format(self, fields: str) -> str:
        parts = [prompts.THOUGHTS_FIELD.format(chars=self.thoughts_chars)] if self.thoughts_chars else []
        parts.append(fields.format(chars=self.reason_chars))
        return prompts.ANSWER_FORMAT.format(fields=", ".join(parts))

    def reason(self, answer: Any) -> str:
        return str(answer.reason).strip()[: self.reason_chars]


# --------------------------------------------------------------------------- prompts

ITEMS_PER_CALL = 20
"""User simulation judges lists of up to 100 items (ratio 1:9); one verdict is ~14 tokens, so
longer lists are judged in calls of this many items, each within ``llm_max_tokens_items``."""


def _chunks(ctx: JudgeItemsContext) -> list[JudgeItemsContext]:
    return [
        replace(
            ctx,
            items=ctx.items[start : start + ITEMS_PER_CALL],
            reward_scores=ctx.reward_scores[start : start + ITEMS_PER_CALL],
        )
        for start in range(0, len(ctx.items), ITEMS_PER_CALL)
    ] or [ctx]


def _weight_phrase(weights: LLMWeights, weight: float) -> str:
    if weights.learned:
        return f"at the weight learned on validation for this LLM ({weight:.2f})"
    return f"at the default weight ({weight:.2f}; none fitted for this LLM)"


def _joined(verdicts: list[ItemsVerdict]) -> ItemsVerdict:
    causes = [v.fallback_cause for v in verdicts if v.fallback_cause]
    return ItemsVerdict(
        likes=[like for v in verdicts for like in v.likes],
        usage=sum_usage(v.usage for v in verdicts),
        fallback=any(v.fallback for v in verdicts),
        fallback_cause=causes[-1] if causes else None,
        attempts=[a for v in verdicts for a in v.attempts],
    )


class PromptBook:
    """Renders the prompt templates for one catalog."""

    def __init__(self, catalog: Dataset):
        self.catalog = catalog
        self.domain, self.item_kind = prompts.DOMAINS.get(catalog.name, prompts.DEFAULT_DOMAIN)

    def history(self, history: Sequence[int]) -> str:
        return describe.bullets(self.catalog, history)

    def memory(self, memory: Sequence[MemoryEntry]) -> str:
        if not memory:
            return prompts.MEMORY_EMPTY
        memory = memory[-prompts.MEMORY_SHOWN :]  # a long-lived session must not grow the prompt forever
        cut = prompts.MEMORY_REASON_CHARS
        lines = [
            prompts.MEMORY_ENTRY.format(
                item=describe.label(self.catalog, m["item"]),
                rec_reason=m["rec_reason"][:cut],
                user_reason=m["user_reason"][:cut],
            )
            for m in memory
        ]
        return "\n".join([prompts.MEMORY_HEADER, *lines])

    @staticmethod
    def preferences(preferences: dict[str, Any] | None) -> str:
        if not preferences:
            return prompts.NO_PREFERENCES
        return prompts.PREFERENCES.format(preferences=json.dumps(preferences, sort_keys=True))

    def system(self, template: str, answer_format: str) -> SystemMessage:
        return SystemMessage(
            template.format(domain=self.domain, item_kind=self.item_kind, answer_format=answer_format)
        )


# --------------------------------------------------------------------------- agents


class LLMRecAgent(RecAgent):
    """Asks the LLM for a pick and weighs it against the offline agent's evidence
    (:mod:`graph.agents.llm_evidence`); the offline agent's answer stands unless the pick's weight
    outweighs the offline margin."""

    def __init__(
        self,
        catalog: Dataset,
        config: LoopConfig,
        client: LLMClient,
        *,
        use_prior: bool = True,
        fallback: OfflineRecAgent | None = None,
        weights: LLMWeights | None = None,
    ):
        self.book = PromptBook(catalog)
        self.shapes = AnswerShapes.from_config(config.llm)
        self.use_prior = use_prior
        self.fallback = fallback or OfflineRecAgent(catalog, use_prior=use_prior)
        self.weights = weights or LLMWeights()
        self.caller = client.caller(self.shapes.rec, config.llm.max_tokens_rec, "rec")
        self._system = self.book.system(prompts.REC_SYSTEM, self.shapes.answer_format(prompts.REC_FIELDS))

    def shown(self, ctx: RecContext) -> list[int]:
        """The candidates the LLM chooses from under the prompt form."""
        if self.weights.prompt_form == "shortlist":
            return shortlist(self.fallback.evidence(ctx), ctx.candidates)
        return list(ctx.candidates)

    def messages(self, ctx: RecContext, shown: Sequence[int] | None = None) -> list[BaseMessage]:
        catalog = self.book.catalog
        prior = (
            prompts.REC_PRIOR.format(prior=describe.label(catalog, ctx.prior_item))
            if self.use_prior and ctx.prior_item is not None
            else prompts.REC_NO_PRIOR
        )
        context = prompts.REC_CONTEXT.format(
            history=self.book.history(ctx.history),
            candidates=describe.listing(catalog, list(ctx.candidates if shown is None else shown)),
            prior=prior,
            preferences=self.book.preferences(ctx.preferences),
        )
        now = prompts.REC_ROUND.format(memory=self.book.memory(ctx.memory), round=ctx.round)
        return [self._system, HumanMessage(context), HumanMessage(now)]

    @staticmethod
    def _validator(shown: Sequence[int]) -> Validator[Any]:
        allowed = set(shown)

        def validate(answer: Any) -> str | None:
            if answer.item_id not in allowed:
                return f"item_id {answer.item_id} is not one of the candidate ids"
            if not answer.reason.strip():
                return "reason is empty"
            return None

        return validate

    async def ask(self, ctx: RecContext) -> CallOutcome[Any]:
        """The LLM's own pick for this round (also what the calibration records)."""
        shown = self.shown(ctx)
        return await self.caller.acall(
            self.messages(ctx, shown), self._validator(shown), budget_s=ctx.llm_budget_s
        )

    async def propose(self, ctx: RecContext) -> Proposal:
        offline = await self.fallback.propose(ctx)
        weight = self.weights.rec_weight
        if weight <= 0:  # its word would count for nothing: the offline loop, without the call
            return offline
        least = least_pick_margin(self.fallback.evidence(ctx), offline["item"], self.shown(ctx))
        if settled(least, weight):  # no pick could outweigh the offline one: the call changes nothing
            record = Combined(False, least, weight).unasked(offline["item"]) | {
                "weights": self.weights.status,
                "form": self.weights.prompt_form,
            }
            return {**offline, "evidence": record}
        outcome = await self.ask(ctx)
        if outcome.answer is None:
            return make_proposal(
                offline["item"],
                offline["reason"],
                fallback=True,
                usage=outcome.usage,
                fallback_cause=outcome.cause,
                attempts=outcome.attempts,
            )
        evidence = self.fallback.evidence(ctx)
        mine, pick = offline["item"], int(outcome.answer.item_id)
        combined = combine(pick_margin(evidence, mine, pick), weight, pick == mine)
        record = combined.record(mine, pick) | {
            "weights": self.weights.status,
            "form": self.weights.prompt_form,
        }
        item = pick if combined.llm_wins else mine
        reason = self._reason(outcome.answer, offline["reason"], evidence, combined, mine, pick)
        return make_proposal(item, reason, usage=outcome.usage, attempts=outcome.attempts, evidence=record)

    def _reason(
        self,
        answer: Any,
        offline_reason: str,
        evidence: dict[int, float],
        combined: Combined,
        mine: int,
        pick: int,
    ) -> str:
        """About the item recommended: the LLM's reason when its pick is the one, else the offline
        agent's with the LLM's suggestion and the evidence that outweighed it."""
        catalog, weight = self.book.catalog, combined.weight
        if pick == mine:
            return self.shapes.reason(answer)
        if combined.llm_wins:
            if math.isinf(weight):
                return self.shapes.reason(answer)
            return (
                f"{self.shapes.reason(answer)} (The LLM's pick: {_weight_phrase(self.weights, weight)} "
                f"it outweighs my model's preference for {describe.quoted(catalog, mine)}, "
                f"{percent(evidence[mine])} against {percent(evidence[pick])}.)"
            )
        numbers = (
            f"{percent(evidence[mine])} against {percent(evidence[pick])}"
            if mine in evidence and pick in evidence
            else ""
        )
        return (
            f"{offline_reason} The LLM suggested {describe.quoted(catalog, pick)}, but "
            f"{_weight_phrase(self.weights, weight)} that does not outweigh my evidence for "
            f"{describe.quoted(catalog, mine)}{f' ({numbers})' if numbers else ''}."
        )


class LLMUserAgent(UserAgent):
    def __init__(
        self,
        catalog: Dataset,
        config: LoopConfig,
        client: LLMClient,
        fallback: OfflineUserAgent,
        *,
        use_reward: bool = True,
        weights: LLMWeights | None = None,
    ):
        self.book = PromptBook(catalog)
        self.shapes = AnswerShapes.from_config(config.llm)
        self.use_reward = use_reward
        self.weights = weights or LLMWeights()
        self.reward_display = config.reward_display
        self.fallback = fallback
        self.judge_caller = client.caller(self.shapes.user, config.llm.max_tokens_user, "user")
        self.items_caller = client.caller(self.shapes.items, config.llm.max_tokens_items, "user")
        self._judge_system = self.book.system(
            prompts.USER_SYSTEM, self.shapes.answer_format(prompts.USER_FIELDS)
        )
        self._items_system = self.book.system(
            prompts.USER_SYSTEM, self.shapes.answer_format(prompts.ITEMS_FIELDS)
        )

    def _reward(self, ctx: UserContext) -> tuple[str, str]:
        """The reward model's view: (the loop's part, this proposal's part)."""
        if not self.use_reward:
            return prompts.REWARD_NONE, ""
        if self.reward_display == "score":
            return prompts.REWARD_SCORE, prompts.REWARD_SCORE_VERDICT.format(score=ctx.reward_score)
        n = len(ctx.candidates)
        picks = describe.bullets(self.book.catalog, ctx.top_picks)
        return (
            prompts.REWARD_TOP_PICKS.format(n=n, top_picks=picks),
            prompts.REWARD_TOP_PICKS_VERDICT.format(rank=describe.ordinal(ctx.reward_rank), n=n),
        )

    def messages(self, ctx: UserContext) -> list[BaseMessage]:
        reward, verdict = self._reward(ctx)
        context = prompts.USER_CONTEXT.format(
            history=self.book.history(ctx.history),
            reward=reward,
            preferences=self.book.preferences(ctx.preferences),
        )
        now = prompts.USER_ROUND.format(
            memory=self.book.memory(ctx.memory),
            round=ctx.round,
            item=describe.label(self.book.catalog, ctx.item),
            rec_reason=ctx.rec_reason,
            reward_verdict=verdict,
        )
        return [self._judge_system, HumanMessage(context), HumanMessage(now.rstrip())]

    @staticmethod
    def _validate(answer: Any) -> str | None:
        return "reason is empty" if not answer.reason.strip() else None

    async def ask(self, ctx: UserContext) -> CallOutcome[Any]:
        """The LLM's own verdict on this proposal (also what the calibration records)."""
        return await self.judge_caller.acall(self.messages(ctx), self._validate, budget_s=ctx.llm_budget_s)

    def verdict_margin(self, ctx: UserContext) -> float:
        """How firmly the reward model decides the offline verdict (nats from its accept boundary)."""
        log_probs = self.fallback.verdict_log_probs(ctx)
        index = ctx.candidates.index(ctx.item) if ctx.item in ctx.candidates else 0
        return verdict_margin(log_probs, index, self.fallback.accept_top_k)

    async def judge(self, ctx: UserContext) -> Judgement:
        offline = await self.fallback.judge(ctx)
        weight = self.weights.user_weight
        if weight <= 0:  # its word would count for nothing: the offline verdict, without the call
            return offline
        margin = self.verdict_margin(ctx)
        if settled(margin, weight):  # the reward model decides too firmly for the LLM to matter
            record = Combined(False, margin, weight).unasked(offline["decision"])
            return {**offline, "evidence": record | {"weights": self.weights.status}}
        outcome = await self.ask(ctx)
        if outcome.answer is None:
            return make_judgement(
                offline["decision"],
                offline["reason"],
                offline["preferred_items"],
                fallback=True,
                usage=outcome.usage,
                fallback_cause=outcome.cause,
                attempts=outcome.attempts,
            )
        said = outcome.answer.decision
        combined = combine(margin, weight, said == offline["decision"])
        record = combined.record(offline["decision"], said) | {"weights": self.weights.status}
        common = {"usage": outcome.usage, "attempts": outcome.attempts, "evidence": record}
        if said == offline["decision"]:
            return make_judgement(
                said, self.shapes.reason(outcome.answer), offline["preferred_items"], **common
            )
        if combined.llm_wins:
            reason = self.shapes.reason(outcome.answer)
            if not math.isinf(weight):
                reason += (
                    f" (The LLM's verdict: {_weight_phrase(self.weights, weight)} it outweighs the reward "
                    f"model, which is only {combined.margin:.2f} nats from its accept boundary here.)"
                )
            return make_judgement(said, reason, **common)
        reason = (
            f"{offline['reason']} The LLM would {said} it, but {_weight_phrase(self.weights, weight)} that "
            f"does not outweigh the reward model ({combined.margin:.2f} nats from its accept boundary)."
        )
        return make_judgement(offline["decision"], reason, offline["preferred_items"], **common)

    def items_messages(self, ctx: JudgeItemsContext) -> list[BaseMessage]:
        text = prompts.USER_JUDGE_ITEMS.format(
            history=self.book.history(ctx.history),
            memory=self.book.memory(ctx.memory),
            preferences=self.book.preferences(ctx.preferences),
            items=describe.listing(self.book.catalog, ctx.items),
        )
        return [self._items_system, HumanMessage(text)]

    @staticmethod
    def _items_validator(ctx: JudgeItemsContext) -> Validator[Any]:
        expected = sorted(ctx.items)

        def validate(answer: Any) -> str | None:
            got = sorted(d.item_id for d in answer.decisions)
            return None if got == expected else "decisions must name every listed item id exactly once"

        return validate

    def _items_finish(self, ctx: JudgeItemsContext, outcome: CallOutcome[Any]) -> ItemsVerdict:
        if outcome.answer is None:
            offline = self.fallback.judge_items(ctx)
            return ItemsVerdict(offline, outcome.usage, True, outcome.cause, outcome.attempts)
        like = {d.item_id: d.like for d in outcome.answer.decisions}
        return ItemsVerdict([like[i] for i in ctx.items], outcome.usage, attempts=outcome.attempts)

    async def ask_items(self, ctx: JudgeItemsContext) -> ItemsVerdict:
        """The LLM's own like/dislike per item (the offline one where a chunk fell back)."""
        verdicts = []
        for chunk in _chunks(ctx):
            outcome = await self.items_caller.acall(self.items_messages(chunk), self._items_validator(chunk))
            verdicts.append(self._items_finish(chunk, outcome))
        return _joined(verdicts)

    async def assess_items(self, ctx: JudgeItemsContext) -> ItemsVerdict:
        offline = self.fallback.judge_items(ctx)
        weight = self.weights.items_weight
        if weight <= 0:
            return ItemsVerdict(offline)
        evidence, threshold = self.fallback.items_evidence(ctx)
        if (
            evidence
            and not math.isinf(weight)
            and all(e - threshold >= weight or threshold - e > weight for e in evidence)
        ):  # every item lies beyond the LLM's weight from the threshold: the call changes nothing
            unasked = {"weight": weight, "llm_overrides": 0, "weights": self.weights.status, "asked": False}
            return ItemsVerdict(offline, evidence=unasked)
        llm = await self.ask_items(ctx)
        likes = combine_likes(offline, llm.likes, evidence, threshold, weight)
        overridden = sum(a != b for a, b in zip(likes, offline, strict=True))
        shown_weight = None if math.isinf(weight) else weight
        record = {"weight": shown_weight, "llm_overrides": overridden, "weights": self.weights.status}
        return replace(llm, likes=likes, evidence=record | {"asked": True})


def combine_likes(
    offline: Sequence[bool], llm: Sequence[bool], evidence: Sequence[float], threshold: float, weight: float
) -> list[bool]:
    """Per item: the offline evidence plus ``weight`` for the LLM's like (minus for its dislike)
    against the offline threshold; without learned evidence the LLM decides at any weight > 0.
    Where the LLM fell back its likes are the offline ones, so nothing changes there."""
    if weight <= 0:
        return list(offline)
    if not evidence:
        return list(llm)
    return [e + (weight if liked else -weight) >= threshold for e, liked in zip(evidence, llm, strict=True)]
