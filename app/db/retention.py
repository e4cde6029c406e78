"""Retention queries: which sessions' checkpoint histories may be pruned, which sessions expired,
and how much the checkpoint tables hold (keyword-only; the caller owns the transaction)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

CHECKPOINT_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")


@dataclass(frozen=True)
class Candidate:
    session_id: uuid.UUID
    thread_id: str
    updated_at: datetime


def _after(after: Candidate | None) -> tuple[str, dict]:
    """Keyset paging on (updated_at, id): a session skipped (busy) is not offered again in this pass."""
    if after is None:
        return "", {}
    return " AND (s.updated_at, s.id) > (:after_at, :after_id)", {
        "after_at": after.updated_at,
        "after_id": after.session_id,
    }


async def sessions_with_old_checkpoints(
    db: AsyncSession, *, schema: str, idle_before: datetime, limit: int, after: Candidate | None = None
) -> list[Candidate]:
    """Idle sessions untouched since ``idle_before`` whose thread holds more than one checkpoint.

    A running or awaiting-feedback session is never offered: its history is in use. The
    two-row probe stops at the second checkpoint on the (thread_id, ...) primary key."""
    paging, params = _after(after)
    rows = await db.execute(
        text(
            "SELECT s.id, s.thread_id, s.updated_at FROM sessions s "
            "WHERE s.status = 'idle' AND s.updated_at < :idle_before" + paging + " AND ("
            f'  SELECT count(*) FROM (SELECT 1 FROM "{schema}".checkpoints c'
            "   WHERE c.thread_id = s.thread_id LIMIT 2) two) > 1 "
            "ORDER BY s.updated_at, s.id LIMIT :limit"
        ),
        {"idle_before": idle_before, "limit": limit, **params},
    )
    return [Candidate(*row) for row in rows]


async def expired_sessions(
    db: AsyncSession, *, idle_before: datetime, limit: int, after: Candidate | None = None
) -> list[Candidate]:
    """Idle sessions untouched since ``idle_before``, oldest first."""
    paging, params = _after(after)
    rows = await db.execute(
        text(
            "SELECT s.id, s.thread_id, s.updated_at FROM sessions s "
            "WHERE s.status = 'idle' AND s.updated_at < :idle_before" + paging + " "
            "ORDER BY s.updated_at, s.id LIMIT :limit"
        ),
        {"idle_before": idle_before, "limit": limit, **params},
    )
    return [Candidate(*row) for row in rows]


async def delete_expired_session(db: AsyncSession, *, session_id: uuid.UUID, idle_before: datetime) -> bool:
    """Delete the session (loops and rounds cascade) if it is still idle and untouched; False if not."""
    done = await db.execute(
        text("DELETE FROM sessions WHERE id = :id AND status = 'idle' AND updated_at < :idle_before"),
        {"id": session_id, "idle_before": idle_before},
    )
    return done.rowcount == 1


async def checkpoint_storage(db: AsyncSession, *, schema: str) -> dict[str, dict[str, int]]:
    """Per checkpoint table: ``rows``, ``bytes`` (the live rows' stored size, what retention
    changes at once) and ``table_bytes`` (heap, TOAST and indexes on disk: space a DELETE frees is
    reused by new rows after autovacuum, and returned to the OS only by VACUUM FULL)."""
    found: dict[str, dict[str, int]] = {}
    for table in CHECKPOINT_TABLES:
        name = f'"{schema}".{table}'
        row = (
            await db.execute(
                text(
                    f"SELECT count(*), coalesce(sum(pg_column_size(t.*)), 0), "
                    f"pg_total_relation_size(CAST(:name AS regclass)) FROM {name} t"
                ),
                {"name": name},
            )
        ).one()
        found[table] = {"rows": int(row[0]), "bytes": int(row[1]), "table_bytes": int(row[2])}
    return found
