"""The two agents of the loop behind one small interface.

The nodes build a context of plain ids and numbers, the agent answers with a
:class:`graph.state.Proposal` or a :class:`graph.state.Judgement` (the very dicts the state keeps).
Each step is one async method: the graph runs only under ``ainvoke``/``astream`` (offline agents
never await anything inside).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Literal

from graph.state import Judgement, MemoryEntry, Proposal
from llm.usage import LLMAttempt, LLMUsage, empty_usage

RewardDisplay = Literal["top_picks", "score"]


@dataclass(frozen=True)
class RecContext:
    """What the recommendation agent sees in one round."""

    history: list[int]
    candidates: list[int]
    rec_scores: list[float]
    """The rec model's scores aligned with ``candidates`` (the offline policy's evidence)."""
    prior_item: int | None
    """Im, the rec model's pick; None when the agent runs without the prior (ablation)."""
    memory: list[MemoryEntry]
    """Mr: every rejected round of this thread, oldest first."""
    rejected_this_loop: list[int]
    """Items the user rejected earlier in this loop, oldest first."""
    last_preferred: list[int]
    """Items the user said it would rather have in the previous round of this loop."""
    round: int
    """1-based round number within the loop."""
    preferences: dict[str, Any] | None = None
    llm_budget_s: float | None = None
    """Seconds of LLM time this loop has left (``Settings.llm_loop_budget_s``); None: unbounded."""
    reward_scores: list[float] = field(default_factory=list)
    """The reward model's scores aligned with ``candidates`` (empty: not given), the numbers the user
    agent's feedback quotes; the offline agent reads only those of items the user agent discussed
    (the one it turned down, the ones it named) to weigh that feedback against its own model."""


@dataclass(frozen=True)
class UserContext:
    """What the user agent sees when it judges one proposal."""

    history: list[int]
    candidates: list[int]
    item: int
    rec_reason: str
    reward_score: float
    reward_rank: int
    """1-based rank of ``item`` among ``candidates`` under the reward model."""
    top_picks: list[int]
    """The reward model's best candidates (about a quarter of them), best first."""
    memory: list[MemoryEntry]
    """Mu: every rejected round of this thread, oldest first."""
    round: int
    preferences: dict[str, Any] | None = None
    llm_budget_s: float | None = None
    """Seconds of LLM time this loop has left; None: unbounded."""
    reward_scores: list[float] = field(default_factory=list)
    """The reward model's scores aligned with ``candidates`` (empty: not given)."""
    rejected_this_loop: list[int] = field(default_factory=list)
    """Items this agent turned down earlier in this loop, oldest first (one proposed again means the
    recommendation agent weighed the objection and kept its pick)."""
    asked_for_this_loop: list[int] = field(default_factory=list)
    """Items this agent named as preferred earlier in this loop."""


@dataclass(frozen=True)
class JudgeItemsContext:
    """User simulation (AFL Table 5): judge a list of items without running the loop."""

    history: list[int]
    items: list[int]
    reward_scores: list[float]
    """Reward-model scores aligned with ``items``."""
    memory: list[MemoryEntry] = field(default_factory=list)
    preferences: dict[str, Any] | None = None
    reward_log_probs: list[float] = field(default_factory=list)
    """The reward model's log-probabilities of ``items`` over the whole catalog (empty: not given):
    unlike raw scores, one scale for every user, so one verdict threshold fits all of them."""
    accepted: list[int] = field(default_factory=list)
    """Items the user agent accepted in the loop before (AFL's user memory keeps accepted rounds)."""


@dataclass(frozen=True)
class ItemsVerdict:
    """The user agent's like/dislike per judged item, with what producing it cost."""

    likes: list[bool]
    usage: LLMUsage = field(default_factory=empty_usage)
    fallback: bool = False
    fallback_cause: str | None = None
    attempts: list[LLMAttempt] = field(default_factory=list)
    evidence: dict[str, Any] | None = None
    """LLM agents: the weight of the LLM's verdicts and how many offline verdicts they overturned."""


class RecAgent(ABC):
    """Proposes one candidate with a reason. The item must always be one of ``ctx.candidates``."""

    use_prior: bool
    """Ablation knob (AFL Table 6): whether the agent is shown the rec model's pick."""

    @abstractmethod
    async def propose(self, ctx: RecContext) -> Proposal: ...


class UserAgent(ABC):
    """Accepts or rejects a proposal with a reason, and judges item lists for user simulation."""

    use_reward: bool
    """Ablation knob (AFL Table 6): whether the agent is shown the reward model's view."""

    @abstractmethod
    async def judge(self, ctx: UserContext) -> Judgement: ...

    @abstractmethod
    async def assess_items(self, ctx: JudgeItemsContext) -> ItemsVerdict:
        """One like/dislike per item of ``ctx.items`` (True = the user would interact with it),
        with what the verdict cost (LLM calls and tokens; zeros offline) and any fallback."""
