"""Repository of sessions (keyword-only; the caller owns the transaction)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, Update, delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Session
from app.db.steering import latest_preferences


@dataclass(frozen=True)
class SessionFilter:
    user_id: str | None = None
    status: str | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    metadata: dict[str, Any] | None = None
    """Sessions whose thread metadata contains these keys and values (LangGraph's thread search)."""
    statuses: tuple[str, ...] | None = None
    ids: tuple[uuid.UUID, ...] | None = None


async def add_session(
    db: AsyncSession,
    *,
    owner_key_id: int,
    user_id: str,
    dataset: str,
    history: list[int],
    session_id: uuid.UUID | None = None,
    metadata: dict[str, Any] | None = None,
) -> Session:
    session_id = session_id or uuid.uuid4()
    session = Session(
        id=session_id,
        owner_key_id=owner_key_id,
        user_id=user_id,
        dataset=dataset,
        thread_id=str(session_id),
        status="idle",
        history=history,
        n_loops=0,
        thread_metadata=metadata or {},
    )
    db.add(session)
    await db.flush()
    await db.refresh(session)
    return session


async def get_owned_session(
    db: AsyncSession, *, session_id: uuid.UUID, owner_key_id: int, for_update: bool = False
) -> Session | None:
    """The session if ``owner_key_id`` owns it; None for missing *and* foreign sessions alike."""
    stmt = select(Session).where(Session.id == session_id, Session.owner_key_id == owner_key_id)
    if for_update:
        stmt = stmt.with_for_update()
    return (await db.execute(stmt)).scalar_one_or_none()


async def get_owned_session_with_memory(
    db: AsyncSession, *, session_id: uuid.UUID, owner_key_id: int
) -> tuple[Session, dict[str, Any] | None] | None:
    """:func:`get_owned_session` and, in the same statement, the session's steering memory as
    stored (its newest command's ``preferences``; None if it was never steered)."""
    memory = latest_preferences(Session.id).label("memory")
    stmt = select(Session, memory).where(Session.id == session_id, Session.owner_key_id == owner_key_id)
    row = (await db.execute(stmt)).one_or_none()
    return None if row is None else (row[0], row[1])


def _filtered(stmt: Select, *, owner_key_id: int, where: SessionFilter) -> Select:
    stmt = stmt.where(Session.owner_key_id == owner_key_id)
    if where.user_id is not None:
        stmt = stmt.where(Session.user_id == where.user_id)
    if where.status is not None:
        stmt = stmt.where(Session.status == where.status)
    if where.created_after is not None:
        stmt = stmt.where(Session.created_at >= where.created_after)
    if where.created_before is not None:
        stmt = stmt.where(Session.created_at < where.created_before)
    if where.metadata:
        stmt = stmt.where(Session.thread_metadata.contains(where.metadata))
    if where.statuses is not None:
        stmt = stmt.where(Session.status.in_(where.statuses))
    if where.ids is not None:
        stmt = stmt.where(Session.id.in_(where.ids))
    return stmt


SORT_COLUMNS = {
    "created_at": (Session.created_at,),
    "updated_at": (Session.updated_at,),
    "status": (Session.status, Session.created_at),
    "thread_id": (),
}
"""What each sort orders by, before the id (a thread's id is its session's): every order is one
index read in order, ``(owner_key_id, <columns>, id)`` (migration 0009)."""


def sort_order(sort_by: str, *, descending: bool) -> list:
    columns = (*SORT_COLUMNS[sort_by], Session.id)
    return [column.desc() if descending else column.asc() for column in columns]


async def search_owned_sessions(
    db: AsyncSession,
    *,
    owner_key_id: int,
    where: SessionFilter,
    limit: int,
    offset: int,
    sort_by: str = "created_at",
    descending: bool = True,
) -> list[Session]:
    """One page of the owner's sessions matching ``where``, in the order asked for (:data:`SORT_COLUMNS`)."""
    page = _filtered(select(Session), owner_key_id=owner_key_id, where=where)
    page = page.order_by(*sort_order(sort_by, descending=descending)).limit(limit).offset(offset)
    return list((await db.execute(page)).scalars())


async def count_owned_sessions(db: AsyncSession, *, owner_key_id: int, where: SessionFilter) -> int:
    count = _filtered(select(func.count()).select_from(Session), owner_key_id=owner_key_id, where=where)
    return int((await db.execute(count)).scalar_one())


async def list_owned_sessions(
    db: AsyncSession, *, owner_key_id: int, where: SessionFilter, limit: int, offset: int
) -> tuple[list[Session], int]:
    """Newest first, one page, and how many match."""
    rows = await search_owned_sessions(db, owner_key_id=owner_key_id, where=where, limit=limit, offset=offset)
    return rows, await count_owned_sessions(db, owner_key_id=owner_key_id, where=where)


async def delete_session(db: AsyncSession, *, session_id: uuid.UUID) -> None:
    """Deletes the session; its loops and rounds go with it (ON DELETE CASCADE)."""
    await db.execute(delete(Session).where(Session.id == session_id))


async def set_loop_status(db: AsyncSession, *, session_id: uuid.UUID, status: str, n_loops: int) -> None:
    """After a loop run: the session's status and loop count, without reading the row first."""
    await db.execute(loop_status_update(session_id, status=status, n_loops=n_loops))


def loop_status_update(session_id: uuid.UUID, *, status: str, n_loops: int) -> Update:
    """The UPDATE of :func:`set_loop_status`, to run inside another statement (app/db/loops.py)."""
    return (
        update(Session)
        .where(Session.id == session_id)
        .values(status=status, n_loops=func.greatest(Session.n_loops, n_loops), updated_at=func.now())
    )
