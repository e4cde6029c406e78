"""Sessions: create, look up (owner only), list, record consumption, delete with checkpoints."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from app.db import loops as loops_repo
from app.db import sessions as sessions_repo
from app.db.database import Database
from app.db.models import Session
from app.db.sessions import SessionFilter
from app.services import idempotency
from app.services.errors import AwaitingFeedback, Conflict, NotFound, SessionBusy
from app.services.keys import Caller
from app.services.metrics import BUSY_REJECTIONS
from app.services.service_runner import ServiceRunner
from app.services.validation import check_history, check_item_ids
from app.settings import Settings
from graph.runner import read_thread
from recmodels.dataset import Dataset


@dataclass(frozen=True)
class SessionState:
    """A session row plus what its LangGraph thread remembers."""

    session: Session
    rec_memory: list[dict[str, Any]]
    user_memory: list[dict[str, Any]]
    pending: dict[str, Any] | None
    """The proposal awaiting a human judgement, if any."""
    usage: dict[str, Any]
    """LLM usage of every loop and steering command of the session."""


def _not_found(session_id: uuid.UUID) -> NotFound:
    # Same answer for missing and foreign sessions: a caller learns nothing about others' ids.
    return NotFound(f"no session {session_id}", field="session_id")


async def create_session(
    database: Database,
    catalog: Dataset,
    settings: Settings,
    caller: Caller,
    *,
    user_id: str,
    history: list[int],
) -> Session:
    check_history(history, catalog, max_items=settings.max_history_items)
    async with database.sessionmaker.begin() as db:
        session = await sessions_repo.add_session(
            db, owner_key_id=caller.key_id, user_id=user_id, dataset=catalog.name, history=history
        )
        await idempotency.link(db, caller.claim, session_id=session.id)  # a keyed retry finds this session
        return session


async def get_session(database: Database, caller: Caller, session_id: uuid.UUID) -> Session:
    async with database.sessionmaker() as db:
        session = await sessions_repo.get_owned_session(db, session_id=session_id, owner_key_id=caller.key_id)
    if session is None:
        raise _not_found(session_id)
    return session


@asynccontextmanager
async def locked_session(database: Database, caller: Caller, session_id: uuid.UUID) -> AsyncIterator[Session]:
    """The caller's session under its advisory lock (keyed by the thread id, which is the session id).

    Locking first and reading once saves a round trip per request. A busy *foreign* session is
    reported as 404, like any foreign session: 409 would reveal that it exists.
    """
    async with _locked(database, caller, session_id, with_memory=False) as (session, _):
        yield session


@asynccontextmanager
async def locked_session_with_memory(
    database: Database, caller: Caller, session_id: uuid.UUID
) -> AsyncIterator[tuple[Session, dict[str, Any] | None]]:
    """:func:`locked_session` and the session's steering memory as stored (None: never steered),
    read in the same statement: a loop needs both, and a round trip costs more than the join."""
    async with _locked(database, caller, session_id, with_memory=True) as found:
        yield found


@asynccontextmanager
async def _locked(
    database: Database, caller: Caller, session_id: uuid.UUID, *, with_memory: bool
) -> AsyncIterator[tuple[Session, dict[str, Any] | None]]:
    try:
        busy = SessionBusy(
            "another recommendation or update is running on this session; retry when it finishes",
            retry_after_s=1,
        )
        async with database.locks.hold(str(session_id), busy=busy, on_busy=BUSY_REJECTIONS.inc):
            async with database.read() as db:
                if with_memory:
                    found = await sessions_repo.get_owned_session_with_memory(
                        db, session_id=session_id, owner_key_id=caller.key_id
                    )
                else:
                    session = await sessions_repo.get_owned_session(
                        db, session_id=session_id, owner_key_id=caller.key_id
                    )
                    found = None if session is None else (session, None)
            if found is None:
                raise _not_found(session_id)
            yield found
    except SessionBusy:
        await get_session(database, caller, session_id)  # raises NotFound for a foreign session
        raise


async def thread_state(runner: ServiceRunner, thread_id: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The thread's state values and the proposal awaiting a human judgement, if any."""
    if runner.graph is None:
        return {}, None
    snapshot = await read_thread(runner.graph, thread_id)
    return snapshot.values, snapshot.pending


async def get_session_state(
    database: Database, runner: ServiceRunner, caller: Caller, session_id: uuid.UUID
) -> SessionState:
    session = await get_session(database, caller, session_id)
    values, pending = await thread_state(runner, session.thread_id)
    async with database.sessionmaker() as db:
        usage = await loops_repo.session_usage(db, session_id=session.id)
    return SessionState(
        session=session,
        rec_memory=list(values.get("rec_memory") or []),
        user_memory=list(values.get("user_memory") or []),
        pending=pending,
        usage=usage,
    )


async def list_sessions(
    database: Database, caller: Caller, *, where: SessionFilter, limit: int, offset: int
) -> tuple[list[Session], int]:
    async with database.sessionmaker() as db:
        return await sessions_repo.list_owned_sessions(
            db, owner_key_id=caller.key_id, where=where, limit=limit, offset=offset
        )


async def record_consumption(
    database: Database,
    catalog: Dataset,
    settings: Settings,
    caller: Caller,
    session_id: uuid.UUID,
    *,
    items: list[int],
) -> Session:
    """Append what the user actually consumed; the next loop recommends from the longer history."""
    check_item_ids(items, catalog, field="items")
    async with locked_session(database, caller, session_id), database.sessionmaker.begin() as db:
        session = await sessions_repo.get_owned_session(
            db, session_id=session_id, owner_key_id=caller.key_id, for_update=True
        )
        if session is None:
            raise _not_found(session_id)
        if session.status == "awaiting_feedback":
            raise AwaitingFeedback(
                "the session's loop awaits your judgement: POST .../feedback first", field="session_id"
            )
        history = [*session.history, *items]
        if len(history) > settings.max_history_items:  # valid input, but not on this session
            raise Conflict(
                f"the session's history has {len(session.history)} items: {len(items)} more would exceed "
                f"the {settings.max_history_items} a session keeps",
                field="items",
            )
        session.history = history
        await idempotency.link(db, caller.claim, session_id=session.id)  # a keyed retry appends nothing again
        await db.flush()
        await db.refresh(session)
        return session


async def delete_session(
    database: Database, runner: ServiceRunner, caller: Caller, session_id: uuid.UUID
) -> None:
    """Delete the session, its loop history and its LangGraph checkpoints."""
    async with locked_session(database, caller, session_id) as session:
        await runner.saver.adelete_thread(session.thread_id)
        async with database.sessionmaker.begin() as db:
            await sessions_repo.delete_session(db, session_id=session.id)
