"""Repository of idempotency keys (keyword-only; the caller owns the transaction)."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete, func, select
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
    """Store an answer (replacing an expired one under the same key); drop the owner's expired keys."""
    await db.execute(
        delete(IdempotencyKey).where(
            IdempotencyKey.owner_key_id == owner_key_id, IdempotencyKey.expires_at <= func.now()
        )
    )
    values = {
        "fingerprint": fingerprint,
        "status_code": status_code,
        "content_type": content_type,
        "body": body,
        "created_at": func.now(),
        "expires_at": func.now() + timedelta(seconds=ttl_s),
    }
    stmt = insert(IdempotencyKey).values(owner_key_id=owner_key_id, key=key, **values)
    await db.execute(stmt.on_conflict_do_update(index_elements=["owner_key_id", "key"], set_=values))
