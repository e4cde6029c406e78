"""LangGraph's server protocol over recloop's own sessions and loops (what ``langgraph-sdk`` calls).

- An *assistant* is a loop variant a user picks: offline agents, LLM agents, or a human judge.
- A *thread* is a session: one id space, one owner (the API key), 404 for another owner's.
  Its metadata seeds the session: ``user_id`` (default ``"langgraph"``) and ``history`` (the
  item ids the user consumed before; required, as for ``POST /v1/sessions``).
- A *run* is one loop of the session's history (app/services/protocol_runs.py).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy.exc import IntegrityError

from app.db import sessions as sessions_repo
from app.db.models import Session
from app.db.sessions import SessionFilter
from app.services import idempotency, sessions
from app.services.errors import Conflict, InvalidInput, NotFound
from app.services.keys import Caller
from app.services.runtime import ServiceResources
from app.services.validation import check_history
from graph.config import AgentMode
from graph.runner import ThreadSnapshot, drawable_graph, graph_schemas, read_thread, thread_history
from graph.state import JudgeMode

GRAPH_ID = "recloop"
ASSISTANT_NAMESPACE = uuid.UUID("5d1c3d1e-64f3-4c41-9b2a-0e5b5a2f7c10")
CREATED_AT = datetime.fromisoformat("2026-12-01T00:00:00+00:00")
"""Assistants are fixed by the code, not created: they carry one creation time."""
DEFAULT_USER = "langgraph"
THREAD_STATUS = {"idle": "idle", "running": "busy", "awaiting_feedback": "interrupted"}
"""A session's status as a thread's (a failed loop leaves the session idle, so no ``error``)."""
RUN_STATUS = {
    "running": "running",
    "awaiting_feedback": "interrupted",
    "completed": "success",
    "failed": "error",
}
"""A loop's status as a run's; a cancelled loop (failed with ``loops.CANCELLED``) is ``interrupted``."""


@dataclass(frozen=True)
class AssistantSpec:
    name: str
    agents: AgentMode
    judge_mode: JudgeMode
    description: str

    @property
    def assistant_id(self) -> str:
        return str(uuid.uuid5(ASSISTANT_NAMESPACE, self.name))

    def public(self) -> dict[str, Any]:
        return {
            "assistant_id": self.assistant_id,
            "graph_id": GRAPH_ID,
            "name": self.name,
            "description": self.description,
            "config": {},
            "context": {"agents": self.agents, "judge_mode": self.judge_mode},
            # "created_by": "system" as on LangGraph's server, whose graphs' own assistants carry it.
            "metadata": {"created_by": "system", "agents": self.agents, "judge_mode": self.judge_mode},
            "version": 1,
            "created_at": CREATED_AT.isoformat(),
            "updated_at": CREATED_AT.isoformat(),
        }


ASSISTANTS = (
    AssistantSpec("recloop", "offline", "agent", "The loop with offline agents (the trained models judge)."),
    AssistantSpec("recloop-llm", "llm", "agent", "The loop with LLM agents (needs RECLOOP_LLM_BASE_URL)."),
    AssistantSpec(
        "recloop-human",
        "offline",
        "human",
        "A person judges each proposal: the run pauses at an interrupt; resume it with "
        'command={"resume": {"decision": "accept" | "reject", "reason": "..."}}.',
    ),
)
"""``recloop`` is also the graph id, so ``assistant_id="recloop"`` works as on LangGraph's server."""


def available_assistants(res: ServiceResources) -> list[AssistantSpec]:
    return [a for a in ASSISTANTS if a.agents != "llm" or "llm" in res.agent_modes]


def get_assistant(res: ServiceResources, assistant_id: str) -> AssistantSpec:
    """By id or by name (LangGraph's server accepts the graph id for its default assistant)."""
    for assistant in available_assistants(res):
        if assistant_id in (assistant.assistant_id, assistant.name):
            return assistant
    raise NotFound(f"no assistant {assistant_id!r}", field="assistant_id")


def search_assistants(
    res: ServiceResources,
    *,
    graph_id: str | None,
    name: str | None,
    metadata: dict[str, Any] | None,
    limit: int,
    offset: int,
) -> list[AssistantSpec]:
    found = [
        a
        for a in available_assistants(res)
        if (graph_id is None or graph_id == GRAPH_ID)
        and (name is None or name.lower() in a.name.lower())
        and all(a.public()["metadata"].get(k) == v for k, v in (metadata or {}).items())
    ]
    return found[offset : offset + limit]


def assistant_graph() -> dict[str, Any]:
    return drawable_graph()


class RunInput(BaseModel):
    """A run's input: the loop's history is the thread's, so only these two are given."""

    candidates: list[int] | None = Field(
        None, description="Items to choose from (default: the rec model's top)"
    )
    max_rounds: int | None = Field(None, ge=1, le=20, description="Proposals before the loop gives up")


def assistant_schemas() -> dict[str, Any]:
    return {**graph_schemas(), "graph_id": GRAPH_ID, "input_schema": RunInput.model_json_schema()}


# --- threads ------------------------------------------------------------------------------------


def _thread_uuid(thread_id: str) -> uuid.UUID:
    try:
        return uuid.UUID(thread_id)
    except ValueError:
        raise NotFound(f"no thread {thread_id}", field="thread_id") from None


async def create_thread(
    res: ServiceResources,
    caller: Caller,
    *,
    metadata: dict[str, Any],
    thread_id: str | None,
    if_exists: str | None,
) -> Session:
    user_id = metadata.get("user_id", DEFAULT_USER)
    if not isinstance(user_id, str) or not user_id.strip() or len(user_id) > 200:
        raise InvalidInput(
            "metadata.user_id: give a non-blank string of at most 200 characters", field="metadata.user_id"
        )
    history = metadata.get("history")
    if not isinstance(history, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in history
    ):
        raise InvalidInput(
            "metadata.history: give the item ids the user consumed (a list of integers), as for a session",
            field="metadata.history",
        )
    check_history(history, res.catalog, max_items=res.settings.max_history_items, field="metadata.history")
    session_id = None
    if thread_id is not None:
        try:
            session_id = uuid.UUID(thread_id)
        except ValueError:
            raise InvalidInput("thread_id: a thread id is a UUID", field="thread_id") from None
    try:
        async with res.sessionmaker.begin() as db:
            session = await sessions_repo.add_session(
                db,
                owner_key_id=caller.key_id,
                user_id=user_id,
                dataset=res.catalog.name,
                history=history,
                session_id=session_id,
                metadata=metadata,
            )
            await idempotency.link(db, session_id=session.id)  # a keyed retry finds this thread
            return session
    except IntegrityError:
        if if_exists == "do_nothing" and session_id is not None:
            return await sessions.get_session(res, caller, session_id)  # 404 if another owner's
        raise Conflict(f"thread {thread_id} exists", field="thread_id") from None


async def get_thread(res: ServiceResources, caller: Caller, thread_id: str) -> Session:
    return await sessions.get_session(res, caller, _thread_uuid(thread_id))


async def thread_state(
    res: ServiceResources, session: Session, checkpoint_id: str | None = None
) -> ThreadSnapshot:
    """The thread's latest state, or its state at ``checkpoint_id`` (404 for a checkpoint it has not)."""
    if res.graph is None:
        raise NotFound("models are not loaded: the thread's state cannot be read", field=None)
    snapshot = await read_thread(res.graph, session.thread_id, checkpoint_id)
    if checkpoint_id is not None and (snapshot.created_at is None or snapshot.checkpoint_id != checkpoint_id):
        raise NotFound(f"no checkpoint {checkpoint_id} on this thread", field="checkpoint_id")
    return snapshot


async def state_history(
    res: ServiceResources, caller: Caller, thread_id: str, *, limit: int, before: str | None
) -> tuple[Session, list[ThreadSnapshot]]:
    session = await get_thread(res, caller, thread_id)
    if res.graph is None:
        return session, []
    return session, await thread_history(res.graph, session.thread_id, limit=limit, before=before)


async def search_threads(
    res: ServiceResources,
    caller: Caller,
    *,
    metadata: dict[str, Any] | None,
    status: str | None,
    ids: list[str] | None,
    limit: int,
    offset: int,
) -> list[Session]:
    statuses = None
    if status is not None:
        statuses = tuple(s for s, thread_status in THREAD_STATUS.items() if thread_status == status)
    where = SessionFilter(
        metadata=metadata,
        statuses=statuses,
        ids=tuple(_thread_uuid(i) for i in ids) if ids else None,
    )
    rows, _ = await sessions.list_sessions(res, caller, where=where, limit=limit, offset=offset)
    return rows


async def delete_thread(res: ServiceResources, caller: Caller, thread_id: str) -> None:
    await sessions.delete_session(res, caller, _thread_uuid(thread_id))
