"""API keys: random secrets shown once, stored as SHA-256 hashes."""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db import keys as keys_repo
from app.services.errors import Unauthorized

KEY_PREFIX = "rl_"


@dataclass(frozen=True)
class Caller:
    """The authenticated owner of a request."""

    key_id: int
    owner: str


@dataclass(frozen=True)
class NewKey:
    key_id: int
    owner: str
    secret: str
    """The plaintext key: shown once, never stored."""


def hash_key(secret: str) -> str:
    # Keys are 256-bit random, so a plain SHA-256 (no salt, no slow KDF) is enough and keeps lookups O(1).
    return hashlib.sha256(secret.encode()).hexdigest()


async def create_key(sessionmaker: async_sessionmaker[AsyncSession], *, owner: str) -> NewKey:
    secret = KEY_PREFIX + secrets.token_urlsafe(32)
    async with sessionmaker.begin() as db:
        row = await keys_repo.add_key(db, owner=owner, prefix=secret[:10], key_hash=hash_key(secret))
        return NewKey(key_id=row.id, owner=owner, secret=secret)


async def create_first_key(sessionmaker: async_sessionmaker[AsyncSession], *, owner: str) -> NewKey | None:
    """A key for ``owner`` if the database has none yet (first start); None otherwise."""
    async with sessionmaker() as db:
        if await keys_repo.count_keys(db) > 0:
            return None
    return await create_key(sessionmaker, owner=owner)


async def list_keys(sessionmaker: async_sessionmaker[AsyncSession]) -> list[keys_repo.ApiKey]:
    async with sessionmaker() as db:
        return await keys_repo.list_keys(db)


async def revoke_key(sessionmaker: async_sessionmaker[AsyncSession], *, key_id: int) -> bool:
    """Revoke a key. Workers that verified it recently keep trusting it for up to
    ``Settings.api_key_cache_s`` (default 30 s); this process forgets it at once."""
    async with sessionmaker.begin() as db:
        revoked = await keys_repo.revoke_key(db, key_id=key_id)
    for key_hash, (caller, _) in list(_verified.items()):
        if caller.key_id == key_id:
            _verified.pop(key_hash, None)
    return revoked


# Verified keys per worker: key hash -> (caller, monotonic expiry). Saves a query on every request;
# only successes are cached, so a new key works at once and a wrong one is always re-checked.
_verified: dict[str, tuple[Caller, float]] = {}


async def authenticate(
    sessionmaker: async_sessionmaker[AsyncSession], secret: str | None, *, cache_s: float = 0.0
) -> Caller:
    if not secret:
        raise Unauthorized(
            "missing API key: send 'Authorization: Bearer <key>' (create one with `recloop keys create`)",
            field="Authorization",
        )
    key_hash = hash_key(secret)
    cached = _verified.get(key_hash)
    if cached is not None and cached[1] > time.monotonic():
        return cached[0]
    async with sessionmaker() as db:
        row = await keys_repo.find_active_key(db, key_hash=key_hash)
    if row is None:
        raise Unauthorized("invalid or revoked API key", field="Authorization")
    caller = Caller(key_id=row.id, owner=row.owner)
    if cache_s > 0:
        _verified[key_hash] = (caller, time.monotonic() + cache_s)
    return caller
