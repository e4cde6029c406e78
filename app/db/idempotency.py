"""Repository of idempotency keys (keyword-only; the caller owns the transaction)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, select, tuple_, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import IdempotencyKey


async def get_live(db: AsyncSession, *, owner_key_id: int, key: str) -> IdempotencyKey | None:
    stmt = select(IdempotencyKey).where(
        IdempotencyKey.owner_key_id == owner_key_id,
        IdempotencyKey.key == key,
        IdempotencyKey.expires_at > func.now(),
    )
    return (await db.execute(stmt)).scalar_one_or_none()


async def _upsert(
    db: AsyncSession, *, owner_key_id: int, key: str, ttl_s: int, values: dict[str, Any], replace: bool
) -> None:
    """Insert the key's row (dropping the owner's expired keys), or update it: ``replace`` starts
    it afresh (a new request under the key), else only ``values`` change."""
    await db.execute(
        delete(IdempotencyKey).where(
            IdempotencyKey.owner_key_id == owner_key_id, IdempotencyKey.expires_at <= func.now()
        )
    )
    fresh = {
        "status_code": None,
        "content_type": None,
        "body": None,
        "session_id": None,
        "loop_index": None,
        "command_id": None,
        "loop_outcome": None,
        "created_at": func.now(),
        "expires_at": func.now() + timedelta(seconds=ttl_s),
    }
    row = {**fresh, **values}
    stmt = insert(IdempotencyKey).values(owner_key_id=owner_key_id, key=key, **row)
    changes = row if replace else values
    await db.execute(stmt.on_conflict_do_update(index_elements=["owner_key_id", "key"], set_=changes))


async def link(
    db: AsyncSession,
    *,
    owner_key_id: int,
    key: str,
    fingerprint: str,
    session_id: uuid.UUID,
    loop_index: int | None,
    command_id: int | None,
    ttl_s: int,
) -> None:
    """Record what the key's request produced, in the transaction that produces it (no answer yet)."""
    values = {
        "fingerprint": fingerprint,
        "session_id": session_id,
        "loop_index": loop_index,
        "command_id": command_id,
    }
    await _upsert(db, owner_key_id=owner_key_id, key=key, ttl_s=ttl_s, values=values, replace=True)


async def note_loop_outcome(
    db: AsyncSession, *, owner_key_id: int, key: str, outcome: dict[str, Any]
) -> None:
    """The loop as the key's request recorded it, in the transaction of that record (its row was
    linked when the loop started)."""
    await db.execute(
        update(IdempotencyKey)
        .where(IdempotencyKey.owner_key_id == owner_key_id, IdempotencyKey.key == key)
        .values(loop_outcome=outcome)
    )


async def put(
    db: AsyncSession,
    *,
    owner_key_id: int,
    key: str,
    fingerprint: str,
    status_code: int,
    content_type: str,
    body: bytes,
    ttl_s: int,
) -> None:
    """Store the answer (beside what the request produced, if it was linked)."""
    values = {
        "fingerprint": fingerprint,
        "status_code": status_code,
        "content_type": content_type,
        "body": body,
    }
    await _upsert(db, owner_key_id=owner_key_id, key=key, ttl_s=ttl_s, values=values, replace=False)


async def delete_expired(db: AsyncSession, *, before: datetime, limit: int) -> int:
    """Delete up to ``limit`` keys (every owner's) that expired by ``before``, oldest first; how many."""
    oldest = (
        select(IdempotencyKey.owner_key_id, IdempotencyKey.key)
        .where(IdempotencyKey.expires_at <= before)
        .order_by(IdempotencyKey.expires_at)
        .limit(limit)
    )
    done = await db.execute(
        delete(IdempotencyKey).where(tuple_(IdempotencyKey.owner_key_id, IdempotencyKey.key).in_(oldest))
    )
    return done.rowcount


async def unlink_unanswered(
    db: AsyncSession, *, owner_key_id: int, session_id: uuid.UUID, loop_index: int
) -> int:
    """Keys that stand for the loop but hold no answer stand for nothing any more (the work their
    request started was not committed): a retry runs it again. How many there were."""
    done = await db.execute(
        update(IdempotencyKey)
        .where(
            IdempotencyKey.owner_key_id == owner_key_id,  # the primary key's lead: one owner's keys
            IdempotencyKey.session_id == session_id,
            IdempotencyKey.loop_index == loop_index,
            IdempotencyKey.body.is_(None),
        )
        .values(session_id=None, loop_index=None, command_id=None, loop_outcome=None)
    )
    return int(done.rowcount or 0)
