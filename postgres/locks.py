"""PostgreSQL session-level advisory locks: one holder of a name at a time, across processes.

A lock lives on a dedicated pooled connection (:func:`app.db.engine.lock_pool`) held for the
whole critical section. If the process dies, PostgreSQL drops the connection and with it the
lock, so nothing stays stuck. For the same reason a release can never fail: when the unlock
cannot be sent, the connection is closed, and the lock goes with it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import psycopg
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool, PoolTimeout

# hashtextextended maps the name to the bigint key space of advisory locks.
_TRY_LOCK = "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))"
_UNLOCK = "SELECT pg_advisory_unlock(hashtextextended(%s, 0))"
_log = logging.getLogger(__name__)


class AdvisoryLocks:
    def __init__(self, pool: AsyncConnectionPool):
        self.pool = pool

    @asynccontextmanager
    async def hold(
        self, name: str, *, busy: Exception, on_busy: Callable[[], object] | None = None
    ) -> AsyncIterator[None]:
        """Hold the lock called ``name`` (any process) or raise ``busy`` at once (never queue behind it);
        ``on_busy`` is called first when it is held elsewhere."""
        async with self.pool.connection() as conn:
            if not await _try_lock(conn, name):
                if on_busy is not None:
                    on_busy()
                raise busy
            try:
                yield
            finally:
                # Never raises: what the section committed stays committed and answered as such.
                await _release(conn, name)

    async def is_free(self, name: str) -> bool:
        """Whether no session holds ``name`` right now (taken and given back at once to find out)."""
        async with self.pool.connection() as conn:
            if not await _try_lock(conn, name):
                return False
            await _release(conn, name)
            return True

    async def keep(self, name: str, *, retry_s: float) -> None:
        """Hold ``name`` for as long as the calling task runs (cancel it to let go), on a connection
        of its own; taken again within about ``retry_s`` whenever the connection was lost."""
        while True:
            try:
                conn = await AsyncConnection.connect(self.pool.conninfo, **self.pool.kwargs)
            except psycopg.Error:
                await asyncio.sleep(retry_s)
                continue
            try:
                async with conn:
                    if await _try_lock(conn, name):
                        while True:  # a query now and then notices a connection that died
                            await asyncio.sleep(retry_s)
                            await conn.execute("SELECT 1")
            except psycopg.Error:
                pass
            await asyncio.sleep(retry_s)


async def _try_lock(conn: AsyncConnection, name: str) -> bool:
    row = await (await conn.execute(_TRY_LOCK, (name,))).fetchone()
    return bool(row and row[0])


async def _release(conn: AsyncConnection, name: str) -> None:
    """Unlock ``name``; if that fails, close the connection so that the lock goes with it."""
    try:
        await conn.execute(_UNLOCK, (name,))
    except (psycopg.Error, PoolTimeout) as exc:
        # Typically the server restarted and already dropped the lock with the connection. A
        # closed connection is discarded by the pool, never handed out still holding a lock.
        _log.info("advisory lock %r released by closing its connection (%s)", name, exc)
        await conn.close()
