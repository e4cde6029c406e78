"""PostgreSQL session-level advisory locks: one holder of a name at a time, across processes.

A lock lives on a dedicated pooled connection (:func:`app.db.engine.lock_pool`) held for the
whole critical section. If the process dies, PostgreSQL drops the connection and with it the
lock, so nothing stays stuck.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from psycopg_pool import AsyncConnectionPool

# hashtextextended maps the name to the bigint key space of advisory locks.
_TRY_LOCK = "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))"
_UNLOCK = "SELECT pg_advisory_unlock(hashtextextended(%s, 0))"


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
            row = await (await conn.execute(_TRY_LOCK, (name,))).fetchone()
            if not row or not row[0]:
                if on_busy is not None:
                    on_busy()
                raise busy
            try:
                yield
            finally:
                await conn.execute(_UNLOCK, (name,))
