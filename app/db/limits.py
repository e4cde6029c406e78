"""Repository of per-key usage: request counts per minute and LLM tokens per day."""

from __future__ import annotations

from datetime import datetime

from psycopg import AsyncConnection
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Loop, Session, SteeringCommand

_COUNT_REQUEST = """
INSERT INTO rate_windows AS w (owner_key_id, window_start, count)
VALUES (%s, date_trunc('minute', now()), 1)
ON CONFLICT (owner_key_id, window_start) DO UPDATE SET count = w.count + 1
RETURNING w.count, extract(epoch FROM w.window_start + interval '1 minute' - now())::float8
"""
_PURGE_WINDOWS = (
    "DELETE FROM rate_windows WHERE owner_key_id = %s AND window_start < now() - interval '1 hour'"
)


async def count_request(
    conn: AsyncConnection, *, owner_key_id: int, purge: bool = False
) -> tuple[int, float]:
    """Count one request in the key's current minute: (requests in it so far, seconds it has left)."""
    if purge:
        await conn.execute(_PURGE_WINDOWS, (owner_key_id,))
    row = await (await conn.execute(_COUNT_REQUEST, (owner_key_id,))).fetchone()
    assert row is not None
    return int(row[0]), float(row[1])


async def llm_tokens_since(db: AsyncSession, *, owner_key_id: int, since: datetime) -> int:
    """LLM tokens (prompt + completion) of the key's loops and steering commands since ``since``."""
    total = 0
    for table, started in ((Loop, Loop.started_at), (SteeringCommand, SteeringCommand.created_at)):
        stmt = (
            select(func.coalesce(func.sum(table.prompt_tokens + table.completion_tokens), 0))
            .join(Session, Session.id == table.session_id)
            .where(Session.owner_key_id == owner_key_id, started >= since)
        )
        total += int((await db.execute(stmt)).scalar_one())
    return total
