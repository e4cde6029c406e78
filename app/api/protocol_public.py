"""Answers of LangGraph's server protocol, in the shapes ``langgraph-sdk`` reads (langgraph_sdk/schema.py)."""

from __future__ import annotations

from typing import Any

from app.db.models import Session
from app.services.protocol import THREAD_STATUS
from graph.runner import INTERRUPT, ThreadSnapshot


def final_values(snapshot: ThreadSnapshot) -> dict[str, Any]:
    """What a wait or a join answers: the thread's state values, with its interrupts if it paused."""
    values = dict(snapshot.values)
    if snapshot.interrupts:
        values[INTERRUPT] = snapshot.interrupts
    return values


def thread_public(session: Session, snapshot: ThreadSnapshot | None = None) -> dict[str, Any]:
    """A thread (langgraph_sdk.schema.Thread); ``values`` and ``interrupts`` need its state.

    A thread that has not run yet has no state: its ``values`` are null, as on LangGraph's server."""
    interrupts: dict[str, list[dict[str, Any]]] = {}
    if snapshot is not None:
        interrupts = {t["id"]: t["interrupts"] for t in snapshot.tasks if t["interrupts"]}
    if snapshot is not None and snapshot.checkpoint_id is None:
        snapshot = None
    return {
        "thread_id": session.thread_id,
        "created_at": session.created_at.isoformat(),
        "updated_at": session.updated_at.isoformat(),
        "metadata": session.thread_metadata,
        "status": THREAD_STATUS.get(session.status, "idle"),
        "values": snapshot.values if snapshot is not None else None,
        "interrupts": interrupts,
        "config": {},
    }


def _checkpoint(thread_id: str, checkpoint_id: str | None) -> dict[str, Any] | None:
    if checkpoint_id is None:
        return None
    return {
        "thread_id": thread_id,
        "checkpoint_ns": "",
        "checkpoint_id": checkpoint_id,
        "checkpoint_map": None,
    }


def state_public(thread_id: str, snapshot: ThreadSnapshot) -> dict[str, Any]:
    """A thread's state at a checkpoint (langgraph_sdk.schema.ThreadState)."""
    return {
        "values": snapshot.values,
        "next": snapshot.next,
        "tasks": [{**task, "checkpoint": None, "state": None, "result": None} for task in snapshot.tasks],
        "checkpoint": _checkpoint(thread_id, snapshot.checkpoint_id)
        or {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": None, "checkpoint_map": None},
        "metadata": snapshot.metadata,
        "created_at": snapshot.created_at,
        "parent_checkpoint": _checkpoint(thread_id, snapshot.parent_checkpoint_id),
        "interrupts": snapshot.interrupts,
    }
