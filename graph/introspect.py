"""What the compiled loop graph and its checkpoints say about themselves, as plain data.

The layers above (the service, the web UI) read the graph's drawing and a thread's checkpoint
history only through these functions, so LangGraph's snapshot and drawing types stay in ``graph/``:

- :func:`graph_drawing`: the nodes and edges of the compiled graph (``get_graph()``) and its
  Mermaid text, drawn from the graph itself, so a new node or edge shows without UI changes;
- :func:`checkpoint_history`: a thread's checkpoints, newest first, with the node that wrote each
  and the state's key fields;
- :func:`loop_scores`: one loop's candidates with both models' scores, from its last checkpoint.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from recmodels.metrics import rank_of

START_NODE, END_NODE = "__start__", "__end__"
MAX_SCANNED = 2000
"""Checkpoints read at most while looking for one loop (a thread takes ~4 per round)."""


@dataclass(frozen=True)
class GraphDrawing:
    nodes: list[str]
    """Node names in the graph's order, ``__start__`` first and ``__end__`` last."""
    edges: list[dict[str, Any]]
    """``{"source", "target", "conditional"}`` per edge."""
    mermaid: str
    """The same graph as Mermaid text (``draw_mermaid``; rendering it is the reader's business)."""


def graph_drawing(graph: CompiledStateGraph) -> GraphDrawing:
    drawable = graph.get_graph()
    names = [node.name for node in drawable.nodes.values()]
    ordered = [n for n in names if n == START_NODE] + [n for n in names if n not in (START_NODE, END_NODE)]
    ordered += [n for n in names if n == END_NODE]
    by_id = {node_id: node.name for node_id, node in drawable.nodes.items()}
    edges = [
        {"source": by_id[e.source], "target": by_id[e.target], "conditional": bool(e.conditional)}
        for e in drawable.edges
    ]
    return GraphDrawing(nodes=ordered, edges=edges, mermaid=drawable.draw_mermaid())


@dataclass(frozen=True)
class CheckpointView:
    """One checkpoint of a thread: where the loop stood and what the state held there."""

    checkpoint_id: str
    step: int
    source: str
    """LangGraph's ``input`` (new input), ``loop`` (a node ran) or ``update`` (a resume or edit)."""
    nodes: list[str]
    """The node(s) whose writes this checkpoint holds (empty for the input checkpoint)."""
    next: list[str]
    """The node(s) that run next (empty when the loop has ended)."""
    created_at: str | None
    state: dict[str, Any] = field(default_factory=dict)
    """The key fields: loop index, round, proposal, verdict, judgement, answer, memory sizes."""


def key_fields(values: dict[str, Any]) -> dict[str, Any]:
    """The state's fields a reader follows from checkpoint to checkpoint (not whole lists)."""
    proposal, verdict, judgement = values.get("proposal"), values.get("verdict"), values.get("judgement")
    return {
        "loop_index": values.get("loop_index"),
        "round": len(values.get("rounds") or []) + (1 if proposal else 0),
        "n_candidates": len(values.get("candidates") or []),
        "proposal_item": proposal.get("item") if proposal else None,
        "reward_rank": verdict.get("rank") if verdict else None,
        "reward_score": verdict.get("score") if verdict else None,
        "decision": judgement.get("decision") if judgement else None,
        "final_item": values.get("final_item"),
        "stop_reason": values.get("stop_reason"),
        "rec_memory": len(values.get("rec_memory") or []),
        "user_memory": len(values.get("user_memory") or []),
    }


async def checkpoint_history(
    graph: CompiledStateGraph, thread_id: str, *, limit: int
) -> list[CheckpointView]:
    """The newest ``limit`` checkpoints of ``thread_id`` (empty for a thread never run).

    A checkpoint holds the writes of the step that made it: those are the nodes its parent
    checkpoint had next. One checkpoint more than asked is read to name the oldest one's nodes.
    """
    snapshots = [s async for s in graph.aget_state_history(_config(thread_id), limit=limit + 1)]
    views = []
    for index, snapshot in enumerate(snapshots[:limit]):
        parent = snapshots[index + 1] if index + 1 < len(snapshots) else None
        metadata = snapshot.metadata or {}
        written = list(parent.next) if parent is not None else list((metadata.get("writes") or {}).keys())
        views.append(
            CheckpointView(
                checkpoint_id=snapshot.config["configurable"]["checkpoint_id"],
                step=int(metadata.get("step", -1)),
                source=str(metadata.get("source", "")),
                nodes=[] if metadata.get("source") == "input" else written,
                next=list(snapshot.next),
                created_at=snapshot.created_at,
                state=key_fields(snapshot.values or {}),
            )
        )
    return views


@dataclass(frozen=True)
class LoopScores:
    """One loop's candidates with the rec model's and the reward model's scores (aligned)."""

    loop_index: int
    candidates: list[int]
    rec_scores: list[float]
    reward_scores: list[float]
    proposals: list[int]
    """The item proposed in each round, first round first."""
    history: list[int]
    """The user's history the loop ran on."""
    final_item: int | None
    """The loop's answer (None while it runs or waits)."""


async def loop_scores(graph: CompiledStateGraph, thread_id: str, loop_index: int) -> LoopScores | None:
    """The newest checkpoint of loop ``loop_index`` on the thread (its final state, or where it
    waits), as plain data; None if the thread has no such loop (or it is older than the scan)."""
    async for snapshot in graph.aget_state_history(_config(thread_id), limit=MAX_SCANNED):
        values = snapshot.values or {}
        if (
            values.get("new_loop")
            or (snapshot.metadata or {}).get("source") == "input"
            or not _scored(values)
        ):
            # New input not yet opened by recommend: the next loop's candidates beside the index and
            # scores of the one before; not a state of either loop.
            continue
        if values.get("loop_index") == loop_index:
            rounds = [int(r["item"]) for r in values.get("rounds") or []]
            proposal = values.get("proposal")
            if proposal:  # a round in progress (e.g. waiting for a person's judgement)
                rounds.append(int(proposal["item"]))
            return LoopScores(
                loop_index=loop_index,
                candidates=[int(c) for c in values.get("candidates") or []],
                rec_scores=[float(s) for s in values["rec_scores"]],
                reward_scores=[float(s) for s in values.get("reward_scores") or []],
                proposals=rounds,
                history=[int(i) for i in values.get("history") or []],
                final_item=values.get("final_item"),
            )
        if (values.get("loop_index") or 0) < loop_index:
            return None  # older loops only from here on
    return None


def _scored(values: dict[str, Any]) -> bool:
    """The state holds one score per candidate from both models (a loop opened on these candidates)."""
    n = len(values.get("candidates") or [])
    return n > 0 and len(values.get("rec_scores") or []) == n == len(values.get("reward_scores") or [])


def ranks(scores: Sequence[float]) -> list[int]:
    """Each score's 1-based rank (the loop's tie rule, :func:`recmodels.metrics.rank_of`)."""
    return [rank_of(scores, i) for i in range(len(scores))]


def _config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}
