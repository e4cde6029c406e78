"""Fail fast in an outage (postgres/outage.py): with the database down a request answers 503 with
Retry-After in about a second, not after the pool's 15 s, and the first requests after it is back
succeed. The outage is a TCP proxy in front of the test database that stops (tests/tcp_proxy.py)."""

from __future__ import annotations

import time

import pytest
from sqlalchemy.engine import make_url

from app.services.runtime import open_worker
from postgres.urls import sqlalchemy_url
from tests.api_client import authed_client
from tests.tcp_proxy import TcpProxy

pytestmark = pytest.mark.integration

DOWN = {"detail": "the database is unreachable; retry shortly", "field": None}


async def test_requests_in_an_outage_get_503_at_once_and_the_first_after_it_succeed(
    service_settings, service_db_url, ml_dataset, service_loop_deps
):
    url = make_url(sqlalchemy_url(service_db_url))
    if not url.host:
        pytest.skip("the test database is on a Unix socket (embedded); the proxy needs TCP")
    proxy = TcpProxy(url.host, url.port or 5432)
    await proxy.start()
    proxied = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    # The pool's wait under load stays long: only an outage makes it short.
    settings = service_settings.model_copy(update={"db_pool_timeout_s": 15.0, "db_outage_timeout_s": 1.0})
    async with (
        open_worker(
            settings, database_url=proxied, catalog=ml_dataset, loop_deps=service_loop_deps
        ) as worker,
        await authed_client(settings, worker, "outage") as client,
    ):
        session_id = (await client.post("/v1/sessions", json={"user_id": "u", "history": [1, 2]})).json()[
            "id"
        ]
        assert not worker.database.outage.is_down

        await proxy.stop()
        answers = []
        for path in (f"/v1/sessions/{session_id}", f"/v1/sessions/{session_id}/recommendations") * 3:
            started = time.perf_counter()
            if path.endswith("recommendations"):  # the session's lock: a psycopg pool
                response = await client.post(path, json={"candidates": [5, 6, 7]})
            else:  # the session's row: SQLAlchemy's pool
                response = await client.get(path)
            answers.append((response, time.perf_counter() - started))
        for response, seconds in answers:
            assert response.status_code == 503 and response.json() == DOWN, response.text
            assert response.headers["Retry-After"] == str(settings.db_retry_after_s)
            assert seconds < 2.5, [round(s, 2) for _, s in answers]  # not db_pool_timeout_s (15 s)
        assert worker.database.outage.is_down
        assert worker.database.locks.pool.timeout == settings.db_outage_timeout_s

        await proxy.start()  # same port: the database is back
        started = time.perf_counter()
        loop = await client.post(f"/v1/sessions/{session_id}/recommendations", json={"candidates": [5, 6, 7]})
        assert loop.status_code == 200 and loop.json()["loop_index"] == 1, loop.text
        assert time.perf_counter() - started < 10
        recovered = await client.get(f"/v1/sessions/{session_id}")
        assert recovered.status_code == 200 and recovered.json()["history"] == [1, 2]
        assert not worker.database.outage.is_down
        assert worker.database.locks.pool.timeout == settings.db_pool_timeout_s
    await proxy.stop()
