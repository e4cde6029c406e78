"""Running the loop graph outside the service: the evaluation, the CLI, the calibration, tests.

A :class:`LoopRunner` is the one graph compiled once (without a checkpointer: the fast path of
the evaluation, thousands of loops; or on a saver, so later runs continue a thread); each run
passes its :class:`graph.context.LoopDeps` as the runtime context, so one compiled graph serves
every agent mode and ablation variant. Everything here is async; sync callers use ``asyncio.run``
once around a whole batch of loops.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from graph.agents.base import ItemsVerdict, JudgeItemsContext
from graph.builder import NODE_NAMES, build_graph
from graph.context import LoopDeps
from graph.state import (
    JudgeMode,
    LLMUsage,
    LoopInput,
    MemoryEntry,
    RoundRecord,
    StopReason,
    total_usage,
)

# Steps LangGraph may take beyond the nodes of every round (input, routing); see loop_config.
RECURSION_SLACK = 5


class LoopInterrupted(RuntimeError):
    """The loop paused (human judge or interrupt_after) instead of finishing."""


@dataclass(frozen=True)
class LoopResult:
    """The outcome of one loop, as plain data."""

    final_item: int
    final_reason: str
    stop_reason: StopReason
    rounds: list[RoundRecord]
    n_rounds: int
    usage: LLMUsage
    """LLM calls and tokens summed over the loop's rounds (zeros for offline agents)."""
    prior_item: int | None = None
    """Im, the rec model's pick among the candidates (the "Model" row of AFL Table 4)."""
    loop_index: int = 1
    rec_memory: list[MemoryEntry] = field(default_factory=list)
    user_memory: list[MemoryEntry] = field(default_factory=list)

    @property
    def first_item(self) -> int:
        """The recommendation agent's first proposal: its one-round answer without a user agent."""
        return int(self.rounds[0]["item"]) if self.rounds else int(self.final_item)

    def accepted_items(self) -> list[int]:
        """Items the user agent accepted in this loop (at most one: acceptance ends it)."""
        return [r["item"] for r in self.rounds if r["decision"] == "accept"]

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> LoopResult:
        if state.get("stop_reason") is None or state.get("final_item") is None:
            raise LoopInterrupted("the loop has not finished (a human judge or an interrupt is pending)")
        rounds = list(state.get("rounds") or [])
        usage = total_usage(rounds, "llm_usage")
        return cls(
            final_item=state["final_item"],
            final_reason=state.get("final_reason") or "",
            stop_reason=state["stop_reason"],
            rounds=rounds,
            n_rounds=len(rounds),
            usage=usage,
            prior_item=state.get("prior_item"),
            loop_index=state.get("loop_index") or 1,
            rec_memory=list(state.get("rec_memory") or []),
            user_memory=list(state.get("user_memory") or []),
        )


def recursion_limit_for(max_rounds: int) -> int:
    """LangGraph's step budget for a loop of ``max_rounds`` (its default of 25 only covers 6 rounds)."""
    return len(NODE_NAMES) * max_rounds + RECURSION_SLACK


def loop_config(thread_id: str | None, max_rounds: int) -> RunnableConfig:
    """The config to invoke the compiled graph with: thread id plus a sufficient recursion limit."""
    config: RunnableConfig = {"recursion_limit": recursion_limit_for(max_rounds)}
    if thread_id is not None:
        config["configurable"] = {"thread_id": thread_id}
    return config


def default_candidates(deps: LoopDeps, history: Sequence[int], k: int | None = None) -> list[int]:
    """The rec model's top-k unseen items (k = LoopConfig.n_candidates): the service's default candidates."""
    return deps.rec_scorer.top_k(list(history), k or deps.config.n_candidates)


def loop_input(
    deps: LoopDeps,
    history: Sequence[int],
    candidates: Sequence[int] | None,
    max_rounds: int | None,
    preferences: dict[str, Any] | None = None,
    judge_mode: JudgeMode = "agent",
) -> LoopInput:
    """Every input key spelled out, so nothing carries over from a thread's previous loop."""
    return {
        "new_loop": True,
        "history": list(history),
        "candidates": list(candidates) if candidates is not None else default_candidates(deps, history),
        "max_rounds": deps.config.max_rounds if max_rounds is None else max_rounds,
        "judge_mode": judge_mode,
        "preferences": preferences,
    }


class LoopRunner:
    """The loop graph compiled once (on ``checkpointer``, if given) and run many times, with any
    deps (agent judge mode)."""

    def __init__(self, checkpointer: BaseCheckpointSaver | None = None):
        self.checkpointer = checkpointer
        self.graph: CompiledStateGraph = build_graph().compile(checkpointer=checkpointer)

    async def run(
        self,
        deps: LoopDeps,
        history: Sequence[int],
        candidates: Sequence[int] | None = None,
        max_rounds: int | None = None,
        *,
        thread_id: str | None = None,
        preferences: dict[str, Any] | None = None,
    ) -> LoopResult:
        """Run one loop to its end with the user agent judging.

        ``candidates`` default to the rec model's top-``n_candidates`` unseen items;
        ``max_rounds=1`` gives AFL's "Agent" setting (one proposal, no feedback used). On a runner
        with a checkpointer, ``thread_id`` continues a thread (its memories carry over).
        """
        payload = loop_input(deps, history, candidates, max_rounds, preferences)
        config = loop_config(self._thread(thread_id), payload["max_rounds"])
        return LoopResult.from_state(await self.graph.ainvoke(payload, config, context=deps))

    def _thread(self, thread_id: str | None) -> str | None:
        if self.checkpointer is None:
            if thread_id is not None:
                raise ValueError("thread_id: needs a runner compiled with a checkpointer")
            return None
        return thread_id or uuid.uuid4().hex


async def run_loop(
    deps: LoopDeps,
    history: Sequence[int],
    candidates: Sequence[int] | None = None,
    max_rounds: int | None = None,
    *,
    preferences: dict[str, Any] | None = None,
) -> LoopResult:
    """One loop on a graph compiled for it, without a checkpointer (:meth:`LoopRunner.run`).

    For one-off loops (``recloop simulate``, tests); many loops: hold one :class:`LoopRunner`.
    """
    return await LoopRunner().run(deps, history, candidates, max_rounds, preferences=preferences)


async def judge_items(
    deps: LoopDeps,
    history: Sequence[int],
    items: Sequence[int],
    memory: Sequence[MemoryEntry] = (),
    preferences: dict[str, Any] | None = None,
    accepted: Sequence[int] = (),
) -> list[bool]:
    """User simulation (AFL Table 5): the user agent's like/dislike for each item, no loop.

    Pass what a loop left for FLOW (``LoopResult.user_memory`` and the items it accepted,
    :meth:`LoopResult.accepted_items`: AFL's user memory keeps every round), nothing for "Agent".
    """
    return (await assess_items(deps, history, items, memory, preferences, accepted)).likes


async def assess_items(
    deps: LoopDeps,
    history: Sequence[int],
    items: Sequence[int],
    memory: Sequence[MemoryEntry] = (),
    preferences: dict[str, Any] | None = None,
    accepted: Sequence[int] = (),
) -> ItemsVerdict:
    """:func:`judge_items` with what the verdict cost (LLM calls and tokens) and any fallback."""
    scores = deps.reward_scorer.score(list(history), list(items)) if items else []
    log_probs = deps.reward_scorer.log_probs(list(history), list(items)) if items else []
    ctx = JudgeItemsContext(
        list(history),
        list(items),
        scores,
        list(memory),
        preferences,
        reward_log_probs=log_probs,
        accepted=list(accepted),
    )
    return await deps.user_agent.assess_items(ctx)
