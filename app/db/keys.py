"""Repository of API keys (keyword-only; the caller owns the transaction)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import ApiKey


async def add_key(db: AsyncSession, *, owner: str, prefix: str, key_hash: str) -> ApiKey:
    key = ApiKey(owner=owner, prefix=prefix, key_hash=key_hash)
    db.add(key)
    await db.flush()
    return key


async def find_active_key(db: AsyncSession, *, key_hash: str) -> ApiKey | None:
    stmt = select(ApiKey).where(ApiKey.key_hash == key_hash, ApiKey.revoked_at.is_(None))
    return (await db.execute(stmt)).scalar_one_or_none()


async def count_keys(db: AsyncSession) -> int:
    return int((await db.execute(select(func.count()).select_from(ApiKey))).scalar_one())


async def list_keys(db: AsyncSession) -> list[ApiKey]:
    return list((await db.execute(select(ApiKey).order_by(ApiKey.id))).scalars())


async def revoke_key(db: AsyncSession, *, key_id: int) -> bool:
    """Mark the key revoked; False if there is no such active key."""
    stmt = (
        update(ApiKey)
        .where(ApiKey.id == key_id, ApiKey.revoked_at.is_(None))
        .values(revoked_at=datetime.now(UTC))
    )
    return (await db.execute(stmt)).rowcount == 1
