"""Running the loop graph outside the service: the evaluation, the CLI, the calibration, tests.

A :class:`LoopRunner` is the one graph compiled once (without a checkpointer: the fast path of
the evaluation, thousands of loops; or on a saver, so later runs continue a thread); each run
passes its :class:`graph.context.LoopDeps` as the runtime context, so one compiled graph serves
every agent mode and ablation variant. Everything here is async; sync callers use ``asyncio.run``
once around a whole batch of loops.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, Interrupt, StateSnapshot

from graph.agents.base import ItemsVerdict, JudgeItemsContext
from graph.builder import NODE_NAMES, build_graph
from graph.context import LoopDeps
from graph.state import JudgeMode, LoopInput, LoopState, MemoryEntry, RoundRecord, StopReason
from llm.usage import LLMUsage, total_usage

# Steps LangGraph may take beyond the nodes of every round (input, routing); see loop_config.
RECURSION_SLACK = 5


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
    def from_state(cls, state: LoopState) -> LoopResult:
        """The result of a finished loop's state (an agent judge's loop always finishes)."""
        if state["stop_reason"] is None or state["final_item"] is None or state["final_reason"] is None:
            raise RuntimeError("the loop has not finished: LoopRunner runs loops that end")
        rounds = list(state["rounds"])
        return cls(
            final_item=state["final_item"],
            final_reason=state["final_reason"],
            stop_reason=state["stop_reason"],
            rounds=rounds,
            n_rounds=len(rounds),
            usage=total_usage(rounds, "llm_usage"),
            prior_item=state["prior_item"],
            loop_index=state["loop_index"],
            rec_memory=list(state["rec_memory"]),
            user_memory=list(state["user_memory"]),
        )


def recursion_limit_for(max_rounds: int) -> int:
    """LangGraph's step budget for a loop of ``max_rounds`` (its default of 25 only covers 6 rounds)."""
    return len(NODE_NAMES) * max_rounds + RECURSION_SLACK


def loop_config(
    thread_id: str | None, max_rounds: int, *, marks: dict[str, str | int] | None = None
) -> RunnableConfig:
    """The config to invoke the compiled graph with: thread id plus a sufficient recursion limit.

    ``marks``: stamped on every checkpoint the run writes (LangGraph copies a config's scalar
    ``metadata`` into each checkpoint's), so that a later reader knows whose run wrote it."""
    config: RunnableConfig = {"recursion_limit": recursion_limit_for(max_rounds)}
    if thread_id is not None:
        config["configurable"] = {"thread_id": thread_id}
    if marks:
        config["metadata"] = dict(marks)
    return config


LOOP_MARK = "recloop_loop"
"""Checkpoint metadata: the number (in its session's history) of the loop whose run wrote it."""
GRAPH_MARK = "recloop_graph"
"""Checkpoint metadata: the :func:`graph_fingerprint` of the graph that wrote it."""


def run_marks(graph: CompiledStateGraph, loop_number: int) -> dict[str, str | int]:
    """What a run stamps on its checkpoints (:func:`loop_config`): whose loop, and which graph."""
    return {LOOP_MARK: loop_number, GRAPH_MARK: graph_fingerprint(graph)}


def graph_fingerprint(graph: CompiledStateGraph) -> str:
    """A short hash of the graph's shape (nodes, edges, branches, state channels): two graphs with
    the same fingerprint can continue each other's checkpoints."""
    builder = graph.builder
    shape = {
        "nodes": sorted(builder.nodes),
        "edges": sorted(map(list, builder.edges)),
        "branches": sorted(
            f"{source}:{name}" for source, names in builder.branches.items() for name in names
        ),
        "channels": sorted(builder.channels),
    }
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:16]


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


async def assess_items(
    deps: LoopDeps,
    history: Sequence[int],
    items: Sequence[int],
    memory: Sequence[MemoryEntry] = (),
    preferences: dict[str, Any] | None = None,
    accepted: Sequence[int] = (),
) -> ItemsVerdict:
    """User simulation (AFL Table 5): the user agent's like/dislike for each item, no loop, with
    what the verdict cost (LLM calls and tokens) and any fallback.

    Pass what a loop left for FLOW (``LoopResult.user_memory`` and the items it accepted,
    :meth:`LoopResult.accepted_items`: AFL's user memory keeps every round), nothing for "Agent".
    """
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


# --- The service's runs: streaming a checkpointed loop and reading its thread -----------------
# The service (its /v1 API and its LangGraph protocol API) reads the graph through these only:
# LangGraph's stream chunks, ``__interrupt__``, ``Command`` and ``StateSnapshot`` stay in here.

INTERRUPT = "__interrupt__"
RESUME_CHANNEL = "__resume__"
"""The channel of the pending write that holds a ``Command(resume=...)``'s answer (LangGraph's RESUME)."""
"""The node name under which a stream reports an interrupt (LangGraph's own)."""
RunStatus = Literal["running", "interrupted", "completed", "failed", "cancelled"]
"""A run's lifecycle: it runs, then pauses at a human judge, completes, fails or is cancelled."""


def _plain_default(value: Any) -> Any:
    # LangGraph wraps some values (Interrupt, Overwrite); their payload is ``.value``.
    return value.value if hasattr(value, "value") else str(value)


def to_plain(value: Any) -> Any:
    """``value`` as plain JSON data (what an update or a state holds, with LangGraph's wrappers unwrapped)."""
    return json.loads(json.dumps(value, default=_plain_default))


def plain_interrupts(interrupts: Sequence[Interrupt]) -> list[dict[str, Any]]:
    """Interrupts as the LangGraph server protocol shows them: ``{"value", "id"}``, and
    ``response_schema`` if the interrupt has one (the SDK's ``Interrupt`` declares it
    ``NotRequired[dict]``, so none is no key, as LangGraph's server answers a thread's state)."""
    out = []
    for i in interrupts:
        plain = {"value": to_plain(i.value), "id": i.id}
        schema = getattr(i, "response_schema", None)
        if isinstance(schema, dict):
            plain["response_schema"] = to_plain(schema)
        out.append(plain)
    return out


def plain_values(values: dict[str, Any]) -> dict[str, Any]:
    """A state as plain JSON; a paused run's last state carries its interrupts (LangGraph's values
    chunk does), as the protocol shows them (:func:`plain_interrupts`), not only their values."""
    plain = to_plain({key: value for key, value in values.items() if key != INTERRUPT})
    if INTERRUPT in values:
        plain[INTERRUPT] = plain_interrupts(values[INTERRUPT])
    return plain


@dataclass(frozen=True)
class LoopEvent:
    """One step of a streamed run, as plain JSON: a node's update, an interrupt, or the whole state."""

    mode: Literal["updates", "values", "tasks", "checkpoints", "debug"]
    node: str | None
    """The node that wrote the update (:data:`INTERRUPT` for an interrupt); None for other modes."""
    data: Any
    """The node's update; an interrupt's values (a list); the state; LangGraph's task, checkpoint or
    debug payload (as its ``stream_mode`` of that name yields it)."""
    interrupts: list[dict[str, Any]] = field(default_factory=list)
    """An interrupt's ``{"value", "id"}`` items (the protocol's form)."""

    @property
    def is_interrupt(self) -> bool:
        return self.node == INTERRUPT


EventSink = Callable[[LoopEvent], Awaitable[None]]

EVENT_MODES = ("values", "tasks", "checkpoints", "debug")
"""LangGraph stream modes whose chunks a run can hand its sink besides the nodes' updates."""


@dataclass
class StreamedLoop:
    """What a streamed run left: the state as far as it got and the interrupt's value, if it paused."""

    values: dict[str, Any] = field(default_factory=dict)
    pending: dict[str, Any] | None = None
    interrupts: list[dict[str, Any]] = field(default_factory=list)
    finished: bool = False

    @property
    def status(self) -> RunStatus:
        if not self.finished:
            return "running"
        return "interrupted" if self.pending is not None else "completed"


def resume_input(answer: Any) -> Command:
    """The graph input that resumes a run paused at an interrupt with ``answer``."""
    return Command(resume=answer)


def is_resume(graph_input: Any) -> bool:
    return isinstance(graph_input, Command)


async def stream_loop(
    graph: CompiledStateGraph,
    graph_input: Any,
    config: RunnableConfig,
    *,
    context: LoopDeps,
    durability: str,
    into: StreamedLoop,
    on_event: EventSink | None = None,
    event_modes: frozenset[str] = frozenset(),
) -> StreamedLoop:
    """Run the checkpointed graph to its end or its interrupt, filling ``into`` as it goes.

    ``into`` holds the state as far as the run got even if this raises (a failed loop keeps the
    rounds it finished). ``on_event`` receives each node's update as plain JSON, and the chunks of
    ``event_modes`` (some of :data:`EVENT_MODES`: the whole state after each step, task starts and
    results, checkpoints); nothing is converted without a sink, and a mode nobody asked for is not
    streamed by the graph at all.
    """
    unknown = set(event_modes) - set(EVENT_MODES)
    if unknown:
        raise ValueError(f"not a stream mode a sink can receive: {sorted(unknown)}")
    sink_modes = event_modes if on_event is not None else frozenset()
    graph_modes = ["updates", "values", *(m for m in EVENT_MODES if m in sink_modes and m != "values")]
    stream = graph.astream(
        graph_input, config, context=context, stream_mode=graph_modes, durability=durability
    )
    async for mode, chunk in stream:
        if mode == "values":
            into.values = chunk
            if "values" in sink_modes:
                await on_event(LoopEvent("values", None, plain_values(chunk)))
            continue
        if mode != "updates":
            await on_event(LoopEvent(mode, None, to_plain(chunk)))
            continue
        for node, update in chunk.items():
            interrupts: list[dict[str, Any]] = []
            if node == INTERRUPT:
                into.pending = update[0].value if update else None
                interrupts = plain_interrupts(update)
                into.interrupts = interrupts
            if on_event is not None:
                await on_event(LoopEvent("updates", node, to_plain(update), interrupts))
    into.finished = True
    return into


@dataclass(frozen=True)
class ThreadSnapshot:
    """A thread's state at one checkpoint, as plain JSON (LangGraph's ``StateSnapshot``)."""

    values: dict[str, Any]
    next: list[str]
    checkpoint_id: str | None
    parent_checkpoint_id: str | None
    created_at: str | None
    metadata: dict[str, Any]
    tasks: list[dict[str, Any]]
    """Each pending task: ``{"id", "name", "error", "interrupts"}``."""
    interrupts: list[dict[str, Any]]

    @property
    def pending(self) -> dict[str, Any] | None:
        """The value of the first interrupt (the proposal awaiting a human judgement), if any."""
        return self.interrupts[0]["value"] if self.interrupts else None


def _snapshot(state: StateSnapshot) -> ThreadSnapshot:
    def checkpoint_id(config: RunnableConfig | None) -> str | None:
        return (config or {}).get("configurable", {}).get("checkpoint_id")

    tasks = [
        {
            "id": task.id,
            "name": task.name,
            "error": None if task.error is None else f"{type(task.error).__name__}: {task.error}",
            "interrupts": plain_interrupts(task.interrupts),
        }
        for task in state.tasks
    ]
    return ThreadSnapshot(
        values=to_plain(dict(state.values or {})),
        next=list(state.next),
        checkpoint_id=checkpoint_id(state.config),
        parent_checkpoint_id=checkpoint_id(state.parent_config),
        created_at=state.created_at,
        metadata=to_plain(dict(state.metadata or {})),
        tasks=tasks,
        interrupts=[i for task in tasks for i in task["interrupts"]],
    )


async def read_thread(
    graph: CompiledStateGraph, thread_id: str, checkpoint_id: str | None = None
) -> ThreadSnapshot:
    """The thread's latest state (empty for a thread that never ran), or its state at a checkpoint."""
    configurable = {"thread_id": thread_id}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return _snapshot(await graph.aget_state({"configurable": configurable}))


@dataclass(frozen=True)
class ResumePoint:
    """Where a thread's last committed checkpoint would let a run continue (``invoke(None)``)."""

    values: dict[str, Any]
    """The graph's state there, as the graph holds it (not converted to plain JSON)."""
    next: list[str]
    """The nodes that would run next; empty when the run had ended."""
    step: int | None
    """LangGraph's step number of the checkpoint (-1: the input; None: the thread is empty)."""
    checkpoint_id: str | None
    metadata: dict[str, Any]
    waiting: bool
    """A question is pending there (an interrupt) and no answer to it was committed."""


async def resume_point(graph: CompiledStateGraph, thread_id: str) -> ResumePoint:
    """The thread's last committed checkpoint, read for continuing the run that wrote it."""
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    state = await graph.aget_state(config)
    metadata = dict(state.metadata or {})
    step = metadata.get("step")
    stored = await graph.checkpointer.aget_tuple(config) if graph.checkpointer else None
    writes = (stored.pending_writes or []) if stored is not None else []
    answered = any(write[1] == RESUME_CHANNEL for write in writes)
    return ResumePoint(
        values=dict(state.values or {}),
        next=list(state.next),
        step=step if isinstance(step, int) else None,
        checkpoint_id=(state.config or {}).get("configurable", {}).get("checkpoint_id"),
        metadata=metadata,
        waiting=any(task.interrupts for task in state.tasks) and not answered,
    )


async def thread_history(
    graph: CompiledStateGraph,
    thread_id: str,
    *,
    limit: int,
    before: str | None = None,
    at: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> list[ThreadSnapshot]:
    """The thread's states, newest first, at most ``limit``: from checkpoint ``at`` (the latest if
    None), older than checkpoint ``before``, whose checkpoint metadata holds ``metadata`` (LangGraph's
    ``get_state_history`` with its ``filter``)."""
    configurable = {"thread_id": thread_id} if at is None else {"thread_id": thread_id, "checkpoint_id": at}
    older: RunnableConfig | None = None
    if before is not None:
        older = {"configurable": {"thread_id": thread_id, "checkpoint_id": before}}
    states = graph.aget_state_history(
        {"configurable": configurable}, filter=metadata or None, before=older, limit=limit
    )
    return [_snapshot(s) async for s in states]


async def clear_pending(graph: CompiledStateGraph, thread_id: str) -> None:
    """Drop what the thread's last checkpoint has pending (a human judge's interrupt): a new checkpoint
    with the same values and nothing next, as LangGraph's ``update_state(config, None, as_node=END)``
    writes one. A loop abandoned at its judge leaves no interrupt behind."""
    await graph.aupdate_state({"configurable": {"thread_id": thread_id}}, None, as_node=END)


def drawable_graph() -> dict[str, Any]:
    """The loop graph as LangGraph draws it (``{"nodes", "edges"}``, what LangGraph's server serves)."""
    return build_graph().compile().get_graph().to_json()


def graph_schemas() -> dict[str, Any]:
    """JSON schemas of the loop graph's input, output, state and context."""
    compiled = build_graph().compile()

    def schema(get: Callable[[], Any]) -> dict[str, Any] | None:
        try:
            return get()
        except Exception:  # a type pydantic cannot describe: served without its schema
            return None

    return {
        "input_schema": schema(lambda: compiled.get_input_jsonschema()),
        "output_schema": schema(lambda: compiled.get_output_jsonschema()),
        "state_schema": schema(lambda: compiled.get_output_jsonschema()),
        "config_schema": None,
        "context_schema": None,
    }
