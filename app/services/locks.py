"""One loop at a time per session, across processes: PostgreSQL session-level advisory locks.

The lock lives on a dedicated pooled connection held for the loop's whole duration. If the
process dies, PostgreSQL drops the connection and with it the lock, so nothing stays stuck.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from psycopg_pool import AsyncConnectionPool

from app.services.errors import SessionBusy
from app.services.metrics import BUSY_REJECTIONS

# hashtextextended maps the thread id to the bigint key space of advisory locks.
_TRY_LOCK = "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))"
_UNLOCK = "SELECT pg_advisory_unlock(hashtextextended(%s, 0))"


class SessionLocks:
    def __init__(self, pool: AsyncConnectionPool):
        self.pool = pool

    @asynccontextmanager
    async def hold(self, thread_id: str) -> AsyncIterator[None]:
        """Hold the session's lock or raise :class:`SessionBusy` at once (never queue behind it)."""
        async with self.pool.connection() as conn:
            row = await (await conn.execute(_TRY_LOCK, (thread_id,))).fetchone()
            if not row or not row[0]:
                BUSY_REJECTIONS.inc()
                raise SessionBusy(
                    "another recommendation or update is running on this session; retry when it finishes"
                )
            try:
                yield
            finally:
                await conn.execute(_UNLOCK, (thread_id,))
