"""Synchronous entry points for the evaluation and the CLI.

The graph is compiled once per dependencies object and reused: without a thread
id a loop runs on a graph compiled without a checkpointer (the fast path of the
evaluation, thousands of loops); with a thread id it runs on a per-deps
in-memory saver so later calls can continue the thread.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph

from graph.agents.base import ItemsVerdict, JudgeItemsContext
from graph.builder import NODE_NAMES, build_graph
from graph.context import LoopDeps
from graph.state import LLMUsage, LoopInput, MemoryEntry, RoundRecord, StopReason, total_usage

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
) -> LoopInput:
    """Every input key spelled out, so nothing carries over from a thread's previous loop."""
    return {
        "new_loop": True,
        "history": list(history),
        "candidates": list(candidates) if candidates is not None else default_candidates(deps, history),
        "max_rounds": deps.config.max_rounds if max_rounds is None else max_rounds,
        "judge_mode": "agent",
        "preferences": preferences,
    }


class LoopRunner:
    """A graph compiled once, run many times (agent judge mode)."""

    def __init__(self, deps: LoopDeps, checkpointer: BaseCheckpointSaver | None = None):
        self.deps = deps
        self.checkpointer = checkpointer
        self.graph: CompiledStateGraph = build_graph(deps).compile(checkpointer=checkpointer)

    def run(
        self,
        history: Sequence[int],
        candidates: Sequence[int] | None = None,
        max_rounds: int | None = None,
        *,
        thread_id: str | None = None,
        preferences: dict[str, Any] | None = None,
    ) -> LoopResult:
        payload, config = self._prepare(history, candidates, max_rounds, thread_id, preferences)
        return LoopResult.from_state(self.graph.invoke(payload, config))

    async def arun(
        self,
        history: Sequence[int],
        candidates: Sequence[int] | None = None,
        max_rounds: int | None = None,
        *,
        thread_id: str | None = None,
        preferences: dict[str, Any] | None = None,
    ) -> LoopResult:
        """The same loop through the agents' async methods (concurrent LLM evaluations)."""
        payload, config = self._prepare(history, candidates, max_rounds, thread_id, preferences)
        return LoopResult.from_state(await self.graph.ainvoke(payload, config))

    def _prepare(
        self,
        history: Sequence[int],
        candidates: Sequence[int] | None,
        max_rounds: int | None,
        thread_id: str | None,
        preferences: dict[str, Any] | None,
    ) -> tuple[LoopInput, RunnableConfig]:
        """The loop's input and run config, shared by :meth:`run` and :meth:`arun`."""
        payload = loop_input(self.deps, history, candidates, max_rounds, preferences)
        return payload, loop_config(self._thread(thread_id), payload["max_rounds"])

    def _thread(self, thread_id: str | None) -> str | None:
        if self.checkpointer is None:
            if thread_id is not None:
                raise ValueError("thread_id: needs a runner compiled with a checkpointer")
            return None
        return thread_id or uuid.uuid4().hex


def cached_runner(deps: LoopDeps, *, threaded: bool) -> LoopRunner:
    """The per-deps runner: without a checkpointer, or on the per-deps in-memory saver."""
    runners = deps.runners
    key = "threaded" if threaded else "plain"
    if key not in runners:
        runners[key] = LoopRunner(deps, InMemorySaver() if threaded else None)
    return runners[key]


def run_loop(
    deps: LoopDeps,
    history: Sequence[int],
    candidates: Sequence[int] | None = None,
    max_rounds: int | None = None,
    *,
    checkpointer: BaseCheckpointSaver | None = None,
    thread_id: str | None = None,
    preferences: dict[str, Any] | None = None,
) -> LoopResult:
    """Run one loop to its end with the user agent judging.

    ``candidates`` default to the rec model's top-``n_candidates`` unseen items;
    ``max_rounds=1`` gives AFL's "Agent" setting (one proposal, no feedback used).
    Pass ``thread_id`` (and optionally a ``checkpointer``) to continue a thread:
    its memories carry over between calls. For many loops on one custom
    checkpointer, hold a :class:`LoopRunner` instead of calling this.
    """
    if checkpointer is not None:
        runner = LoopRunner(deps, checkpointer)
    else:
        runner = cached_runner(deps, threaded=thread_id is not None)
    return runner.run(history, candidates, max_rounds, thread_id=thread_id, preferences=preferences)


def judge_items(
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
    return assess_items(deps, history, items, memory, preferences, accepted).likes


def assess_items(
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
    return deps.user_agent.assess_items(ctx)
