"""LangGraph's server protocol over recloop's own sessions and loops (what ``langgraph-sdk`` calls).

- An *assistant* is a loop variant a user picks: offline agents, LLM agents, or a human judge.
- A *thread* is a session: one id space, one owner (the API key), 404 for another owner's.
  Its metadata seeds the session: ``user_id`` (default ``"langgraph"``) and ``history`` (the
  item ids the user consumed before; required, as for ``POST /v1/sessions``).
- A *run* is one loop of the session's history (app/services/protocol_runs.py).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy.exc import IntegrityError

from app.db import sessions as sessions_repo
from app.db.database import Database
from app.db.models import Session
from app.db.sessions import SessionFilter
from app.services import idempotency, sessions
from app.services.errors import (
    AwaitingFeedback,
    Conflict,
    InvalidInput,
    LoopFailed,
    NotAwaitingFeedback,
    NotFound,
    ServiceError,
    SessionBusy,
)
from app.services.keys import Caller
from app.services.service_runner import ServiceRunner
from app.services.validation import check_history
from app.settings import Settings
from graph.config import AgentMode
from graph.runner import ThreadSnapshot, drawable_graph, graph_schemas, read_thread, thread_history
from graph.state import JudgeMode
from recmodels.dataset import Dataset

GRAPH_ID = "recloop"
ASSISTANT_NAMESPACE = uuid.UUID("5d1c3d1e-64f3-4c41-9b2a-0e5b5a2f7c10")
CREATED_AT = datetime.fromisoformat("2026-12-01T00:00:00+00:00")
"""Assistants are fixed by the code, not created: they carry one creation time."""
DEFAULT_USER = "langgraph"
THREAD_STATUS = {"idle": "idle", "running": "busy", "awaiting_feedback": "interrupted"}
"""A session's status as a thread's (a failed loop leaves the session idle, so no ``error``)."""
RUN_STATUS = {
    "running": "running",
    "awaiting_feedback": "success",
    "completed": "success",
    "failed": "error",
}
"""A loop's status as a run's. A run that paused at its human judge has done what it was asked, as
on LangGraph's server (whose run reaching ``interrupt()`` is ``success``, its thread ``interrupted``);
a cancelled loop is ``interrupted``, LangGraph's word for a cancelled run
(app/services/protocol_runs.py ``run_status``)."""


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


def available_assistants(runner: ServiceRunner) -> list[AssistantSpec]:
    return [a for a in ASSISTANTS if a.agents != "llm" or "llm" in runner.agent_modes]


def get_assistant(runner: ServiceRunner, assistant_id: str) -> AssistantSpec:
    """By id or by name (LangGraph's server accepts the graph id for its default assistant)."""
    for assistant in available_assistants(runner):
        if assistant_id in (assistant.assistant_id, assistant.name):
            return assistant
    raise NotFound(f"no assistant {assistant_id!r}", field="assistant_id")


def search_assistants(
    runner: ServiceRunner,
    *,
    graph_id: str | None,
    name: str | None,
    metadata: dict[str, Any] | None,
    sort_by: str | None = None,
    descending: bool = False,
) -> list[AssistantSpec]:
    """The assistants matching, in their order (or sorted by ``sort_by``, a key of their answer)."""
    found = [
        a
        for a in available_assistants(runner)
        if (graph_id is None or graph_id == GRAPH_ID)
        and (name is None or name.lower() in a.name.lower())
        and all(a.public()["metadata"].get(k) == v for k, v in (metadata or {}).items())
    ]
    if sort_by is not None:
        found.sort(key=lambda a: a.public()[sort_by], reverse=descending)
    return found


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

THREAD_SORTS = {"state_updated_at": "updated_at"}
"""A thread's state changes only when a loop writes it, and every loop updates its session's
``updated_at``, so that is the state's time too (one index, one order)."""
SESSION_OWNED_KEYS = ("user_id", "history")
"""Thread metadata keys that are the session's own: set by threads.create, never changed after."""


def _no_thread(thread_id: str) -> NotFound:
    # The same answer for a missing thread and another owner's: nobody learns others' ids.
    return NotFound(f"no thread {thread_id}", field="thread_id")


def _thread_uuid(thread_id: str) -> uuid.UUID:
    try:
        return uuid.UUID(thread_id)
    except ValueError:
        raise _no_thread(thread_id) from None


def thread_terms(exc: ServiceError, thread_id: str) -> ServiceError:
    """A service error, worded by the services for ``/v1`` (sessions, loops, /feedback), in the
    protocol's words: a thread, a run, and the protocol call that helps."""
    if isinstance(exc, NotFound) and exc.field == "session_id":
        return _no_thread(thread_id)
    if isinstance(exc, AwaitingFeedback):
        return AwaitingFeedback(
            f"thread {thread_id} is interrupted: its run waits for a judgement. Resume it with "
            'command={"resume": {"decision": "accept" | "reject", "reason": "..."}} (runs.wait, runs.stream '
            "or runs.create), or end it with runs.cancel",
            field="thread_id",
        )
    if isinstance(exc, NotAwaitingFeedback):
        return NotAwaitingFeedback(
            f"thread {thread_id} has no run waiting at an interrupt: command.resume answers the judge of a "
            "paused run (assistant recloop-human pauses at each proposal)",
            field="command.resume",
        )
    if isinstance(exc, SessionBusy):
        return SessionBusy(
            f"thread {thread_id} is busy: a run is in progress on it (multitask_strategy 'reject'); retry "
            "when it ends",
            field="thread_id",
            retry_after_s=exc.retry_after_s,
        )
    if isinstance(exc, LoopFailed):
        cause = type(exc.__cause__).__name__ if exc.__cause__ is not None else "an error"
        return LoopFailed(f"the run failed ({cause}); runs.get answers it with its error")
    if isinstance(exc, InvalidInput) and exc.field is not None:
        if exc.field.startswith("candidates"):
            return InvalidInput(exc.detail, field=f"input.{exc.field}")
        if exc.field == "reason":
            return InvalidInput(exc.detail, field="command.resume.reason")
    return exc


@asynccontextmanager
async def in_thread_terms(thread_id: str) -> AsyncIterator[None]:
    """Service errors raised inside, in the protocol's words (:func:`thread_terms`)."""
    try:
        yield
    except ServiceError as exc:
        translated = thread_terms(exc, thread_id)
        if translated is exc:
            raise
        raise translated from exc.__cause__


def _check_metadata(settings: Settings, metadata: dict[str, Any], field: str = "metadata") -> None:
    size = len(json.dumps(metadata, separators=(",", ":"), ensure_ascii=False).encode())
    cap = settings.max_metadata_bytes
    if size > cap:
        raise InvalidInput(
            f"{field}: {size} bytes as JSON; a thread keeps at most {cap} (RECLOOP_MAX_METADATA_BYTES)",
            field=field,
        )


def _session_seed(catalog: Dataset, settings: Settings, metadata: dict[str, Any]) -> tuple[str, list[int]]:
    """The user and the history a thread's metadata gives its session (422 naming the key if wrong)."""
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
            "metadata.history: give the item ids the user consumed (a list of integers)",
            field="metadata.history",
        )
    check_history(history, catalog, max_items=settings.max_history_items, field="metadata.history")
    return user_id, history


async def create_thread(
    database: Database,
    catalog: Dataset,
    settings: Settings,
    caller: Caller,
    *,
    metadata: dict[str, Any],
    thread_id: str | None,
    if_exists: str | None,
) -> Session:
    """A new session seeded by ``metadata`` (:func:`_session_seed`), under ``thread_id`` if given.

    An id that is taken answers one plain 409 whoever holds it (``do_nothing`` returns the caller's
    own thread): the answer never tells another owner's id from one of the caller's."""
    _check_metadata(settings, metadata)
    user_id, history = _session_seed(catalog, settings, metadata)
    session_id = uuid.UUID(thread_id) if thread_id is not None else None
    try:
        async with database.sessionmaker.begin() as db:
            session = await sessions_repo.add_session(
                db,
                owner_key_id=caller.key_id,
                user_id=user_id,
                dataset=catalog.name,
                history=history,
                session_id=session_id,
                metadata=metadata,
            )
            await idempotency.link(db, caller.claim, session_id=session.id)  # a keyed retry finds this thread
            return session
    except IntegrityError:
        if if_exists == "do_nothing" and session_id is not None:
            async with database.sessionmaker() as db:
                own = await sessions_repo.get_owned_session(
                    db, session_id=session_id, owner_key_id=caller.key_id
                )
            if own is not None:
                return own
        raise Conflict(
            f"thread_id: {thread_id} is taken; give another id, or none for a new one", field="thread_id"
        ) from None


async def get_thread(database: Database, caller: Caller, thread_id: str) -> Session:
    async with in_thread_terms(thread_id):
        return await sessions.get_session(database, caller, _thread_uuid(thread_id))


async def update_thread(
    database: Database, settings: Settings, caller: Caller, thread_id: str, *, metadata: dict[str, Any] | None
) -> Session:
    """threads.update: ``metadata`` merged into the thread's, key by key, as LangGraph's server does.

    ``user_id`` and ``history`` are the session's (:data:`SESSION_OWNED_KEYS`): a patch may repeat
    them as they are (a client sending the whole metadata back), never change them (422 naming the key).
    """
    session_id = _thread_uuid(thread_id)
    async with database.sessionmaker.begin() as db:
        session = await sessions_repo.get_owned_session(
            db, session_id=session_id, owner_key_id=caller.key_id, for_update=True
        )
        if session is None:
            raise _no_thread(thread_id)
        if not metadata:
            return session
        kept = {**session.thread_metadata, "user_id": session.user_id}
        for key in SESSION_OWNED_KEYS:
            if key in metadata and metadata[key] != kept.get(key):
                raise InvalidInput(
                    f"metadata.{key}: the thread's {key.replace('_', ' ')} is its session's, set when the "
                    f"thread was created (threads.create); it cannot change (given: {metadata[key]!r})"[:500],
                    field=f"metadata.{key}",
                )
        merged = {**session.thread_metadata, **metadata}
        _check_metadata(settings, merged)
        session.thread_metadata = merged
        await db.flush()
        await db.refresh(session)
        return session


def _thread_filter(
    metadata: dict[str, Any] | None, status: str | None, ids: list[str] | None
) -> SessionFilter:
    statuses = None
    if status is not None:
        statuses = tuple(s for s, thread_status in THREAD_STATUS.items() if thread_status == status)
    return SessionFilter(
        metadata=metadata, statuses=statuses, ids=tuple(uuid.UUID(i) for i in ids) if ids else None
    )


async def search_threads(
    database: Database,
    settings: Settings,
    caller: Caller,
    *,
    metadata: dict[str, Any] | None,
    status: str | None,
    ids: list[str] | None,
    limit: int,
    offset: int,
    sort_by: str | None = None,
    sort_order: str | None = None,
) -> list[Session]:
    """threads.search: the caller's threads, newest first unless ``sort_by``/``sort_order`` say otherwise
    (sorted in SQL, on an index: app/db/sessions.py)."""
    if metadata is not None:
        _check_metadata(settings, metadata)
    sort = sort_by or "created_at"
    async with database.sessionmaker() as db:
        return await sessions_repo.search_owned_sessions(
            db,
            owner_key_id=caller.key_id,
            where=_thread_filter(metadata, status, ids),
            limit=limit,
            offset=offset,
            sort_by=THREAD_SORTS.get(sort, sort),
            descending=(sort_order or "desc") == "desc",
        )


async def count_threads(
    database: Database,
    settings: Settings,
    caller: Caller,
    *,
    metadata: dict[str, Any] | None,
    status: str | None,
) -> int:
    if metadata is not None:
        _check_metadata(settings, metadata)
    async with database.sessionmaker() as db:
        return await sessions_repo.count_owned_sessions(
            db, owner_key_id=caller.key_id, where=_thread_filter(metadata, status, None)
        )


async def thread_state(
    runner: ServiceRunner, session: Session, checkpoint_id: str | None = None, *, field: str = "checkpoint_id"
) -> ThreadSnapshot:
    """The thread's latest state, or its state at ``checkpoint_id`` (404 for a checkpoint it has not)."""
    if runner.graph is None:
        raise NotFound("models are not loaded: the thread's state cannot be read", field=None)
    missing = NotFound(f"no checkpoint {checkpoint_id} on this thread", field=field)
    if checkpoint_id is not None and not _is_uuid(checkpoint_id):
        raise missing  # LangGraph's checkpoint ids are UUIDs: nothing else is one of this thread's
    snapshot = await read_thread(runner.graph, session.thread_id, checkpoint_id)
    if checkpoint_id is not None and (snapshot.created_at is None or snapshot.checkpoint_id != checkpoint_id):
        raise missing
    return snapshot


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


async def state_history(
    database: Database,
    runner: ServiceRunner,
    caller: Caller,
    thread_id: str,
    *,
    limit: int,
    before: str | None,
    at: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> tuple[Session, list[ThreadSnapshot]]:
    """The thread's states, newest first: from checkpoint ``at`` (the latest if None), older than
    ``before``, whose checkpoint metadata holds ``metadata`` (404 for a checkpoint the thread has not)."""
    session = await get_thread(database, caller, thread_id)
    if runner.graph is None:
        return session, []
    for checkpoint_id, field in ((before, "before"), (at, "checkpoint")):
        if checkpoint_id is not None:
            await thread_state(runner, session, checkpoint_id, field=field)
    states = await thread_history(
        runner.graph, session.thread_id, limit=limit, before=before, at=at, metadata=metadata
    )
    return session, states


async def delete_thread(database: Database, runner: ServiceRunner, caller: Caller, thread_id: str) -> None:
    async with in_thread_terms(thread_id):
        await sessions.delete_session(database, runner, caller, _thread_uuid(thread_id))
