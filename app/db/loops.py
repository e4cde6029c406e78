"""Repository of loops and rounds (keyword-only; the caller owns the transaction)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import exists, func, literal, select, union_all, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import selectinload

from app.db.models import USAGE_COLUMNS, KeyUsage, Loop, Round, Session, SteeringCommand, usage_columns
from app.db.sessions import loop_status_update
from graph.state import RoundFacts

ROUND_FIELDS = tuple(RoundFacts.__annotations__)
"""The rounds table's own columns: a round's facts as the graph records them (graph.state.RoundFacts)."""


def round_rows(rounds: Iterable[dict[str, Any]]) -> list[Round]:
    """Round rows from graph RoundRecord dicts."""
    return [Round(**values) for values in round_values(rounds)]


def round_values(rounds: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Round columns (all but the loop's id) from graph RoundRecord dicts."""
    rows = []
    for record in rounds:
        detail = None
        if record.get("llm_attempts") or record.get("llm_evidence"):
            detail = {
                "rec": record.get("rec_llm_usage"),
                "user": record.get("user_llm_usage"),
                "attempts": record.get("llm_attempts") or [],
                "evidence": record.get("llm_evidence"),
            }
        if record.get("reason_reading"):  # a human judge's reason, as the steering parser read it
            detail = {**(detail or {}), "reason_reading": record["reason_reading"]}
        rows.append(
            {
                **{name: record.get(name) for name in ROUND_FIELDS},
                **usage_columns(record.get("llm_usage") or {}),
                "llm_detail": detail,
            }
        )
    return rows


def round_record(row: Round) -> dict[str, Any]:
    """A stored round as the graph's RoundRecord dict (the inverse of :func:`round_rows`)."""
    record: dict[str, Any] = {name: getattr(row, name) for name in ROUND_FIELDS}
    record["llm_usage"] = row.usage
    if row.llm_detail:
        record.update(
            rec_llm_usage=row.rec_usage,
            user_llm_usage=row.user_usage,
            llm_attempts=row.llm_attempts,
            llm_evidence=row.llm_evidence,
        )
    return record


def stage_loop(db: AsyncSession, *, loop: Loop, rounds: list[Round]) -> None:
    """Stage the loop (new or loaded) and append ``rounds``; written when the caller's transaction flushes."""
    loop.rounds.extend(rounds)
    db.add(loop)


async def get_loop(db: AsyncSession, *, session_id: uuid.UUID, loop_index: int) -> Loop | None:
    stmt = (
        select(Loop)
        .where(Loop.session_id == session_id, Loop.loop_index == loop_index)
        .options(selectinload(Loop.rounds))
    )
    return (await db.execute(stmt)).scalar_one_or_none()


async def list_loops(
    db: AsyncSession,
    *,
    session_id: uuid.UUID,
    limit: int,
    offset: int,
    status: str | None = None,
    statuses: tuple[str, ...] | None = None,
    cancelled: bool | None = None,
) -> tuple[list[Loop], int]:
    """Loops of a session (of one ``status``, or of ``statuses``; ended by their client or not, if
    ``cancelled`` is given), newest first, rounds included."""
    where = [Loop.session_id == session_id]
    if status is not None:
        where.append(Loop.status == status)
    if statuses is not None:
        where.append(Loop.status.in_(statuses))
    if cancelled is not None:
        where.append(Loop.cancelled.is_(cancelled))
    page = (
        select(Loop)
        .where(*where)
        .order_by(Loop.loop_index.desc())
        .limit(limit)
        .offset(offset)
        .options(selectinload(Loop.rounds))
    )
    count = select(func.count()).select_from(Loop).where(*where)
    rows = list((await db.execute(page)).scalars())
    return rows, int((await db.execute(count)).scalar_one())


async def session_usage(db: AsyncSession, *, session_id: uuid.UUID) -> dict[str, Any]:
    """LLM usage of a session: its loops plus its steering commands."""
    totals = {key: 0 for key in USAGE_COLUMNS}
    for table in (Loop, SteeringCommand):
        sums = [func.coalesce(func.sum(getattr(table, column)), 0) for column in USAGE_COLUMNS.values()]
        row = (await db.execute(select(*sums).where(table.session_id == session_id))).one()
        for key, value in zip(USAGE_COLUMNS, row, strict=True):
            totals[key] += value
    return totals


async def add_key_usage(
    db: AsyncSession, *, owner_key_id: int, usage: dict[str, Any], fallbacks: int, day: date | None = None
) -> None:
    """Add one request's LLM usage to its key's row of the day (UTC); nothing when it used no LLM."""
    if not usage.get("calls"):
        return
    values = {**usage_columns(usage), "fallbacks": fallbacks}
    stmt = insert(KeyUsage).values(owner_key_id=owner_key_id, day=day or _utc_today(), **values)
    stmt = stmt.on_conflict_do_update(
        index_elements=[KeyUsage.owner_key_id, KeyUsage.day],
        set_={name: getattr(KeyUsage, name) + stmt.excluded[name] for name in values},
    )
    await db.execute(stmt)


async def key_usage(
    db: AsyncSession, *, owner_key_id: int, since: date | None = None, until: date | None = None
) -> list[KeyUsage]:
    """The key's usage per day, oldest first, within [since, until] (UTC days)."""
    stmt = select(KeyUsage).where(KeyUsage.owner_key_id == owner_key_id)
    if since is not None:
        stmt = stmt.where(KeyUsage.day >= since)
    if until is not None:
        stmt = stmt.where(KeyUsage.day <= until)
    return list((await db.execute(stmt.order_by(KeyUsage.day))).scalars())


def _utc_today() -> date:
    return datetime.now(UTC).date()


async def start_loop(
    db: AsyncSession, *, session_id: uuid.UUID, loop_index: int, worker_id: str, params: dict[str, Any] | None
) -> None:
    """The loop ``running`` under ``worker_id`` and its session with it, in one statement (atomic
    on its own) whose commit is not waited for on disk: ``set_config`` is ``SET LOCAL`` without a
    round trip of its own, and it lasts until this statement's transaction (or the caller's) commits.

    ``params``: a new loop's row; None: the paused loop (``awaiting_feedback``) runs again.
    """
    if params is None:
        started: Any = (
            update(Loop)
            .where(Loop.session_id == session_id, Loop.loop_index == loop_index)
            .values(status="running", worker_id=worker_id)
        )
    else:
        started = insert(Loop).values(
            session_id=session_id, loop_index=loop_index, status="running", params=params, worker_id=worker_id
        )
    loop = started.returning(Loop.id).cte("loop")
    session = loop_status_update(session_id, status="running", n_loops=loop_index).cte("session")
    await db.execute(select(loop.c.id, func.set_config("synchronous_commit", "off", True)).add_cte(session))


async def record_loop(
    db: AsyncSession,
    *,
    session_id: uuid.UUID,
    loop_index: int,
    worker_id: str,
    values: dict[str, Any],
    duration_ms: float,
    rounds: list[dict[str, Any]],
    session_status: str,
) -> bool:
    """A run's outcome in one statement: the loop's ``values`` (its duration grows by
    ``duration_ms``), its new ``rounds`` (:func:`round_values`) and the session's status; False,
    and nothing written, when the loop is not ``running`` under ``worker_id`` any more.

    The loop's row stays locked until the transaction ends: a recovery's :func:`resolve_running`
    of the same loop waits for it (and then finds it recorded), or has committed first (and this
    UPDATE finds the loop failed, READ COMMITTED re-checking the row it waited for).
    """
    loop = (
        update(Loop)
        .where(
            Loop.session_id == session_id,
            Loop.loop_index == loop_index,
            Loop.status == "running",
            Loop.worker_id == worker_id,
        )
        .values(**values, duration_ms=func.coalesce(Loop.duration_ms, 0.0) + duration_ms)
        .returning(Loop.id)
        .cte("loop")
    )
    recorded = exists(select(loop.c.id))
    session = loop_status_update(session_id, status=session_status, n_loops=loop_index).where(recorded)
    stmt = select(loop.c.id).add_cte(session.cte("session"))
    if rounds:
        names = list(rounds[0])
        columns = Round.__table__.c
        # One SELECT per round from the loop's CTE: no round is written unless the loop was.
        rows = [
            select(loop.c.id, *[literal(row[name], columns[name].type) for name in names]) for row in rounds
        ]
        stmt = stmt.add_cte(
            insert(Round)
            .from_select(["loop_id", *names], rows[0] if len(rows) == 1 else union_all(*rows))
            .cte("new_rounds")
        )
    return (await db.execute(stmt)).scalar_one_or_none() is not None


async def stored_rounds(db: AsyncSession, *, session_id: uuid.UUID, loop_index: int) -> set[int]:
    """The numbers of the rounds stored for the loop (a paused loop's, before it resumes)."""
    stmt = (
        select(Round.round)
        .join(Loop, Round.loop_id == Loop.id)
        .where(Loop.session_id == session_id, Loop.loop_index == loop_index)
    )
    return set((await db.execute(stmt)).scalars())


async def loop_status(db: AsyncSession, *, session_id: uuid.UUID | None, loop_index: int) -> str | None:
    stmt = select(Loop.status).where(Loop.session_id == session_id, Loop.loop_index == loop_index)
    return (await db.execute(stmt)).scalar_one_or_none()


async def running_loops(
    db: AsyncSession, *, session_id: uuid.UUID | None = None
) -> list[tuple[uuid.UUID, int, str | None]]:
    """(session, loop number, worker) of the ``running`` loops, of one session or all."""
    stmt = select(Loop.session_id, Loop.loop_index, Loop.worker_id).where(Loop.status == "running")
    if session_id is not None:
        stmt = stmt.where(Loop.session_id == session_id)
    return [(row[0], row[1], row[2]) for row in await db.execute(stmt)]


async def resolve_running(db: AsyncSession, *, session_id: uuid.UUID, loop_index: int, error: str) -> bool:
    """Mark the loop failed with ``error`` if it is still ``running``, and free its session (if the
    session shows it running); False when the loop was no longer running (recorded meanwhile)."""
    return await _fail(db, session_id=session_id, loop_index=loop_index, error=error, status="running")


async def abandon_paused(db: AsyncSession, *, session_id: uuid.UUID, loop_index: int, error: str) -> bool:
    """Mark the loop failed (cancelled by its client) with ``error`` if it still waits for feedback,
    and free its session; False when it no longer waits (resumed meanwhile)."""
    return await _fail(
        db,
        session_id=session_id,
        loop_index=loop_index,
        error=error,
        status="awaiting_feedback",
        cancelled=True,
    )


async def _fail(
    db: AsyncSession,
    *,
    session_id: uuid.UUID,
    loop_index: int,
    error: str,
    status: str,
    cancelled: bool = False,
) -> bool:
    done = await db.execute(
        update(Loop)
        .where(Loop.session_id == session_id, Loop.loop_index == loop_index, Loop.status == status)
        .values(status="failed", error=error, cancelled=cancelled, finished_at=datetime.now(UTC))
        .returning(Loop.id)
    )
    if done.scalar_one_or_none() is None:
        return False
    await db.execute(
        update(Session)
        .where(Session.id == session_id, Session.status == status, Session.n_loops == loop_index)
        .values(status="idle", updated_at=func.now())
    )
    return True


async def note_discarded_result(
    db: AsyncSession, *, session_id: uuid.UUID, loop_index: int, worker_id: str, note: str
) -> None:
    """Append ``note`` to a failed loop's error (its own worker finished it after all; nothing kept)."""
    await db.execute(
        update(Loop)
        .where(
            Loop.session_id == session_id,
            Loop.loop_index == loop_index,
            Loop.status == "failed",
            Loop.worker_id == worker_id,
        )
        .values(error=func.left(func.concat(Loop.error, note), 500))
    )


async def take_over(
    db: AsyncSession,
    *,
    session_id: uuid.UUID,
    loop_index: int,
    from_worker: str | None,
    worker_id: str,
    resumed_from: dict[str, Any] | None,
) -> Loop | None:
    """The loop, now ``worker_id``'s, if it is still ``running`` under ``from_worker`` (a worker that
    stopped); None when another worker took it or it was recorded meanwhile. The row is locked
    (skipping one that is locked already: its taker is at work) until the caller's transaction ends,
    so of several workers that try, one takes it. ``resumed_from``: its resumption, counted in
    ``times`` (None: the loop is taken to be failed, its resumptions left as they were)."""
    stmt = (
        select(Loop)
        .where(
            Loop.session_id == session_id,
            Loop.loop_index == loop_index,
            Loop.status == "running",
            Loop.worker_id.is_not_distinct_from(from_worker),
        )
        .with_for_update(skip_locked=True)
    )
    loop = (await db.execute(stmt)).scalar_one_or_none()
    if loop is None:
        return None
    values: dict[str, Any] = {"worker_id": worker_id}
    if resumed_from is not None:
        values["resumed_from"] = {**resumed_from, "times": int((loop.resumed_from or {}).get("times", 0)) + 1}
    await db.execute(update(Loop).where(Loop.id == loop.id).values(**values))
    return loop
