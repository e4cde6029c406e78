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
