"""The pools' connection check: no round trip, yet a connection the server closed is refused."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from app.db.engine import check_alive

pytestmark = pytest.mark.integration


async def test_a_live_connection_passes_and_a_terminated_one_is_refused(service_db_url):
    async with await psycopg.AsyncConnection.connect(service_db_url, autocommit=True) as conn:
        await check_alive(conn)
        pid = conn.info.backend_pid
        async with await psycopg.AsyncConnection.connect(service_db_url, autocommit=True) as admin:
            await admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        for _ in range(50):  # the server's goodbye reaches the socket shortly after
            try:
                await check_alive(conn)
            except psycopg.OperationalError:
                break
            await asyncio.sleep(0.02)
        else:
            pytest.fail("a terminated connection passed the check")


async def test_the_service_engine_replaces_a_connection_the_server_closed(service_db_url):
    """The SQLAlchemy engine's checkout check (instead of pool_pre_ping's query per checkout)."""
    from sqlalchemy import text

    from app.db.engine import create_engine
    from app.settings import Settings

    engine = create_engine(
        service_db_url, Settings(database_url=service_db_url, db_pool_size=1, _env_file=None)
    )
    try:
        async with engine.connect() as conn:
            first = (await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one()
        async with await psycopg.AsyncConnection.connect(service_db_url, autocommit=True) as admin:
            await admin.execute("SELECT pg_terminate_backend(%s)", (first,))
        await asyncio.sleep(0.3)  # the server's goodbye reaches the pooled connection's socket
        async with engine.connect() as conn:  # not the dead connection: no error, a new backend
            second = (await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one()
        assert second != first
    finally:
        await engine.dispose()


async def test_a_read_session_runs_its_query_outside_a_transaction(service_db_url):
    """Database.read(): one round trip per read (no BEGIN before it, no ROLLBACK after it)."""
    from psycopg.pq import TransactionStatus
    from sqlalchemy import text

    from app.db.engine import create_engine, create_read_sessionmaker, create_sessionmaker
    from app.settings import Settings

    engine = create_engine(
        service_db_url, Settings(database_url=service_db_url, db_pool_size=1, _env_file=None)
    )

    async def status_after_a_read(sessionmaker) -> TransactionStatus:
        async with sessionmaker() as db:
            assert (await db.execute(text("SELECT 1"))).scalar_one() == 1
            raw = await (await db.connection()).get_raw_connection()
            return raw.driver_connection.info.transaction_status

    try:
        assert await status_after_a_read(create_read_sessionmaker(engine)) == TransactionStatus.IDLE
        assert await status_after_a_read(create_sessionmaker(engine)) == TransactionStatus.INTRANS
        # The pool's connection is back to transactions for the plain sessions after a read one.
        assert await status_after_a_read(create_sessionmaker(engine)) == TransactionStatus.INTRANS
    finally:
        await engine.dispose()
