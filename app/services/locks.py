"""One loop at a time per session, across processes: PostgreSQL session-level advisory locks.

The lock lives on a dedicated pooled connection held for the loop's whole duration. If the
process dies, PostgreSQL drops the connection and with it the lock, so nothing stays stuck.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from psycopg_pool import AsyncConnectionPool

from app.services.errors import Conflict, SessionBusy
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
        busy = SessionBusy(
            "another recommendation or update is running on this session; retry when it finishes"
        )
        async with self.hold_name(thread_id, busy=busy):
            yield

    @asynccontextmanager
    async def hold_name(self, name: str, *, busy: Conflict) -> AsyncIterator[None]:
        """Hold the lock called ``name`` (any process) or raise ``busy`` at once."""
        async with self.pool.connection() as conn:
            row = await (await conn.execute(_TRY_LOCK, (name,))).fetchone()
            if not row or not row[0]:
                if isinstance(busy, SessionBusy):
                    BUSY_REJECTIONS.inc()
                raise busy
            try:
                yield
            finally:
                await conn.execute(_UNLOCK, (name,))
