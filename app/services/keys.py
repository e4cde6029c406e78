"""API keys: random secrets shown once, stored as SHA-256 hashes."""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db import keys as keys_repo
from app.services.claim import Claim
from app.services.errors import Unauthorized

KEY_PREFIX = "rl_"


@dataclass(frozen=True)
class Caller:
    """The authenticated owner of a request, and the Idempotency-Key it holds, if any."""

    key_id: int
    owner: str
    claim: Claim | None = None
    """The request's claim on its Idempotency-Key (app/services/idempotency.py): the work it does
    links the key in its own transaction. None: no key, or work not done for a request."""


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
    """Revoke a key in the database. Each worker re-checks a verified key once its
    :class:`VerifiedKeys` entry expires (``Settings.api_key_cache_s``), so every worker refuses it
    within that time; a worker that never verified it refuses it at once."""
    async with sessionmaker.begin() as db:
        return await keys_repo.revoke_key(db, key_id=key_id)


@dataclass
class VerifiedKeys:
    """One worker's verified keys: key hash -> (caller, monotonic expiry), each trusted for ``ttl_s``.

    Saves a query on every request; only successes are kept, so a new key works at once and a
    wrong one is always re-checked. Lives on the service's resources (one per worker).
    """

    ttl_s: float
    clock: Callable[[], float] = time.monotonic
    _entries: dict[str, tuple[Caller, float]] = field(default_factory=dict, repr=False)

    def get(self, key_hash: str) -> Caller | None:
        cached = self._entries.get(key_hash)
        if cached is None or cached[1] <= self.clock():
            return None
        return cached[0]

    def put(self, key_hash: str, caller: Caller) -> None:
        if self.ttl_s > 0:
            self._entries[key_hash] = (caller, self.clock() + self.ttl_s)


async def authenticate(
    sessionmaker: async_sessionmaker[AsyncSession], secret: str | None, *, cache: VerifiedKeys | None = None
) -> Caller:
    if not secret:
        raise Unauthorized(
            "missing API key: send 'Authorization: Bearer <key>' (create one with `recloop keys create`)",
            field="Authorization",
        )
    key_hash = hash_key(secret)
    cached = cache.get(key_hash) if cache is not None else None
    if cached is not None:
        return cached
    async with sessionmaker() as db:
        row = await keys_repo.find_active_key(db, key_hash=key_hash)
    if row is None:
        raise Unauthorized("invalid or revoked API key", field="Authorization")
    caller = Caller(key_id=row.id, owner=row.owner)
    if cache is not None:
        cache.put(key_hash, caller)
    return caller
