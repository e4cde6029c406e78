"""Repository of loops and rounds (keyword-only; the caller owns the transaction)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import func, select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import selectinload

from app.db.models import USAGE_COLUMNS, KeyUsage, Loop, Round, SteeringCommand, usage_columns

ROUND_FIELDS = (
    "round",
    "item",
    "item_title",
    "rec_reason",
    "reward_score",
    "reward_rank",
    "decision",
    "user_reason",
    "rec_fallback",
    "user_fallback",
    "rec_fallback_cause",
    "user_fallback_cause",
)


def new_loop(*, session_id: uuid.UUID, loop_index: int, status: str, params: dict[str, Any]) -> Loop:
    """A loop row to fill in and stage with :func:`stage_loop` (one INSERT with its rounds)."""
    return Loop(
        session_id=session_id,
        loop_index=loop_index,
        status=status,
        params=params,
        llm_calls=0,
        prompt_tokens=0,
        completion_tokens=0,
        rounds=[],  # loaded (empty), so rounds can be appended after the row is committed
    )


def round_rows(rounds: Iterable[dict[str, Any]]) -> list[Round]:
    """Round rows from graph RoundRecord dicts."""
    rows = []
    for record in rounds:
        detail = None
        if record.get("llm_attempts"):
            detail = {
                "rec": record.get("rec_llm_usage"),
                "user": record.get("user_llm_usage"),
                "attempts": record["llm_attempts"],
            }
        if record.get("reason_reading"):  # a human judge's reason, as the steering parser read it
            detail = {**(detail or {}), "reason_reading": record["reason_reading"]}
        rows.append(
            Round(
                **{name: record.get(name) for name in ROUND_FIELDS},
                **usage_columns(record.get("llm_usage") or {}),
                llm_detail=detail,
            )
        )
    return rows


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
    db: AsyncSession, *, session_id: uuid.UUID, limit: int, offset: int, status: str | None = None
) -> tuple[list[Loop], int]:
    """Loops of a session (optionally of one status), newest first, rounds included."""
    where = [Loop.session_id == session_id]
    if status is not None:
        where.append(Loop.status == status)
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


async def fail_running(db: AsyncSession, *, session_id: uuid.UUID, error: str) -> None:
    """Mark the session's ``running`` loops failed: called under the session's lock, where none can run."""
    await db.execute(
        update(Loop)
        .where(Loop.session_id == session_id, Loop.status == "running")
        .values(status="failed", error=error, finished_at=datetime.now(UTC))
    )


async def set_loop_status(db: AsyncSession, *, session_id: uuid.UUID, loop_index: int, status: str) -> None:
    await db.execute(
        update(Loop).where(Loop.session_id == session_id, Loop.loop_index == loop_index).values(status=status)
    )


async def without_sync_commit(db: AsyncSession) -> None:
    """This transaction's commit does not wait for its WAL flush (for rows a crash may lose)."""
    await db.execute(text("SET LOCAL synchronous_commit TO OFF"))
