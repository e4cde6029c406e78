"""The service's database as one worker holds it: the engine and its sessions, the advisory locks and
the outage gate that governs their pools' timeouts (postgres/outage.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

from psycopg_pool import AsyncConnectionPool
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.db.engine import create_engine, create_read_sessionmaker, create_sessionmaker, lock_pool
from app.settings import Settings
from postgres.locks import AdvisoryLocks
from postgres.outage import OutageGate


@dataclass(frozen=True)
class Database:
    url: str
    """libpq form (postgres/urls.py)."""
    engine: AsyncEngine
    sessionmaker: async_sessionmaker[AsyncSession]
    reads: async_sessionmaker[AsyncSession]
    """Autocommit sessions for one-statement reads and writes (:meth:`read`, :meth:`one_statement`)."""
    locks: AdvisoryLocks
    outage: OutageGate
    """The pools' acquire timeout, short while the database is down."""

    def read(self) -> AsyncSession:
        """A session for one read statement on the request path: no transaction around it, so one
        round trip instead of three (BEGIN, the query, ROLLBACK when it closes)."""
        return self.reads()

    @asynccontextmanager
    async def one_statement(self) -> AsyncIterator[AsyncSession]:
        """A session for one write that is atomic on its own (one statement): committed by the
        server as it runs, one round trip instead of three (BEGIN, the statement, COMMIT)."""
        async with self.reads() as db:
            yield db


async def open_pool(stack: AsyncExitStack, pool: AsyncConnectionPool) -> AsyncConnectionPool:
    # wait=False: a worker starts even while the database is down and serves 503 until it is back.
    await pool.open(wait=False)
    stack.push_async_callback(pool.close)
    return pool


async def open_database(stack: AsyncExitStack, url: str, settings: Settings) -> Database:
    """The engine and the lock pool on ``url``, closed with ``stack``."""
    outage = OutageGate(normal_s=settings.db_pool_timeout_s, outage_s=settings.db_outage_timeout_s)
    stack.push_async_callback(outage.close)
    engine = create_engine(url, settings)
    outage.watch_engine(engine)
    stack.push_async_callback(engine.dispose)
    locks = AdvisoryLocks(await open_pool(stack, lock_pool(url, settings, outage.on_connect())))
    outage.watch_pool(locks.pool)
    reads = create_read_sessionmaker(engine)
    return Database(url, engine, create_sessionmaker(engine), reads, locks, outage)
