"""The one state of the feedback loop (AFL/FLOW, arXiv 2410.20027, Algorithm 1).

A thread (one session) runs many loops over time: every invocation with a new
:class:`LoopInput` starts a new loop (the START route marks it, see
``graph.nodes.route_start``), while ``invoke(None)`` or ``Command(resume=...)``
continue the open one. Per-loop fields (``rounds``, ``final_*``, ``stop_reason``,
the cached scores, the pending proposal) are reset by the ``recommend`` node when
it opens a loop; the agents' memories (``rec_memory``, ``user_memory``)
accumulate across loops on the thread, which is what lets a later loop remember
what the user turned down before. Input keys a caller omits keep their value
from the thread's previous loop (LangGraph channels), so callers should pass
every :class:`LoopInput` key (graph.runner.loop_input does).

Everything here is plain data (ids, strings, numbers) so any checkpointer can
serialise it; models and agents live in :class:`graph.deps.LoopDeps`.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, NotRequired, TypedDict

JudgeMode = Literal["agent", "human"]
Decision = Literal["accept", "reject"]
StopReason = Literal["accepted", "max_rounds"]


class LLMUsage(TypedDict):
    """Token usage of the LLM calls made for one step or round (zeros for offline agents)."""

    calls: int
    prompt_tokens: int
    completion_tokens: int


def empty_usage() -> LLMUsage:
    return {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}


def add_usage(a: LLMUsage, b: LLMUsage) -> LLMUsage:
    return {
        "calls": a["calls"] + b["calls"],
        "prompt_tokens": a["prompt_tokens"] + b["prompt_tokens"],
        "completion_tokens": a["completion_tokens"] + b["completion_tokens"],
    }


class RoundRecord(TypedDict):
    """One finished round: what was proposed, how the reward model saw it, what the user said."""

    loop_index: int
    """Which loop of the thread this round belongs to (1-based)."""
    round: int
    """Round number within its loop (1-based)."""
    item: int
    item_title: str
    rec_reason: str
    reward_score: float
    """The reward model's raw score of the item for this user."""
    reward_rank: int
    """1-based rank of the item among the loop's candidates under the reward model."""
    decision: Decision
    user_reason: str
    preferred_items: list[int]
    """Items the user agent said it would rather have (offline agents; may be empty)."""
    rec_fallback: bool
    """The LLM recommendation agent failed validation and the offline policy answered."""
    user_fallback: bool
    """The LLM user agent failed validation and the offline policy judged."""
    llm_usage: LLMUsage


class MemoryEntry(TypedDict):
    """What an agent remembers of one rejected round: {Ir, Rr, Ru} of the paper."""

    item: int
    item_title: str
    rec_reason: str
    user_reason: str
    preferred_items: NotRequired[list[int]]


class Proposal(TypedDict):
    """The recommendation of the current round, waiting to be scored and judged."""

    item: int
    reason: str
    fallback: bool
    usage: LLMUsage


class Verdict(TypedDict):
    """The reward model's view of the current proposal."""

    score: float
    rank: int


class JudgementRecord(TypedDict):
    """The user's (agent's or human's) answer to the current proposal."""

    decision: Decision
    reason: str
    preferred_items: list[int]
    fallback: bool
    usage: LLMUsage


MEMORY_WINDOW = 100
"""Rejected rounds an agent remembers. A session lives for many loops: an unbounded memory would
make every step's state copy and checkpoint grow with the session's age (measured: +40 ms per
request after 400 loops), and the LLM prompt shows only the newest entries anyway."""


def remember(memory: list[MemoryEntry], new: list[MemoryEntry]) -> list[MemoryEntry]:
    """Reducer of ``rec_memory`` / ``user_memory``: append, keep the newest ``MEMORY_WINDOW``."""
    return (memory + new)[-MEMORY_WINDOW:]


class LoopInput(TypedDict):
    """What a caller passes to start one loop on a thread (the graph's input schema)."""

    history: list[int]
    """The user's items, oldest first."""
    candidates: list[int]
    """Items the loop may recommend; the final item is always one of them."""
    max_rounds: NotRequired[int]
    """Round limit; default Settings.max_rounds (paper: 4)."""
    judge_mode: NotRequired[JudgeMode]
    """``agent``: the user agent judges; ``human``: the judge node interrupts for a person's answer."""
    preferences: NotRequired[dict[str, Any] | None]
    """Structured steering preferences (natural-language commands), shown to both agents."""


class LoopState(TypedDict):
    """The full state: the input, the per-loop progress, and the thread's memories."""

    history: list[int]
    """The user's items, oldest first (input)."""
    candidates: list[int]
    """Candidate items for this loop (input)."""
    max_rounds: NotRequired[int]
    """Explicit round limit of this loop (input; routing stops on it, not on recursion_limit)."""
    judge_mode: NotRequired[JudgeMode]
    """Who judges: the user agent or a human through an interrupt (input)."""
    preferences: NotRequired[dict[str, Any] | None]
    """Steering preferences shown to both agents (input)."""

    loop_index: NotRequired[int]
    """Number of loops opened on this thread; the current loop's index (1-based)."""
    prior_item: NotRequired[int | None]
    """Im: the rec model's own top candidate, shown to the recommendation agent as a prior."""
    rec_scores: NotRequired[list[float]]
    """Rec-model scores aligned with ``candidates`` (computed once per loop)."""
    reward_scores: NotRequired[list[float]]
    """Reward-model scores aligned with ``candidates`` (computed once per loop)."""
    proposal: NotRequired[Proposal | None]
    """The current round's proposal; None between rounds."""
    verdict: NotRequired[Verdict | None]
    """The reward model's score/rank of the current proposal; None between rounds."""
    judgement: NotRequired[JudgementRecord | None]
    """The user's answer to the current proposal; None between rounds."""
    rounds: NotRequired[Annotated[list[RoundRecord], operator.add]]
    """Rounds of the current loop (reset with ``Overwrite([])`` when a loop opens)."""
    rec_memory: NotRequired[Annotated[list[MemoryEntry], remember]]
    """Mr: the recommendation agent's memory of rejected rounds, across loops of the thread."""
    user_memory: NotRequired[Annotated[list[MemoryEntry], remember]]
    """Mu: the user agent's memory of rejected rounds, across loops of the thread."""
    final_item: NotRequired[int | None]
    """The loop's answer: the accepted item, or the last proposal when the round limit is hit."""
    final_reason: NotRequired[str | None]
    """The recommendation reason of ``final_item``."""
    stop_reason: NotRequired[StopReason | None]
    """Why the loop ended; None while it runs."""
