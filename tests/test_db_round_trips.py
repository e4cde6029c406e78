"""Round trips to PostgreSQL per offline loop over HTTP, counted on the wire (issue 26, item 1).

Each statement costs the worker 0.3-0.6 ms of CPU (psycopg, SQLAlchemy, the event loop), a loop's
largest overhead after the models (bench/HISTORY.md, "CPU per loop"). The bound keeps a new
statement on the hot path from slipping in unnoticed; the table printed shows what is sent.
"""

from __future__ import annotations

import pytest
from sqlalchemy.engine import make_url

from tests.pg_round_trips import RoundTripProxy

pytestmark = pytest.mark.integration

HISTORY = [49, 180, 257, 293, 0, 171]
LOOPS = 6
MAX_PER_LOOP = 10
"""Per loop, rate limit on, one-round loops (the table printed shows them statement by statement)."""


async def test_an_offline_loop_stays_within_its_round_trips(
    service_settings, service_db_url, ml_dataset, service_loop_deps, capsys, monkeypatch
):
    from app.services import limits
    from app.services.runtime import open_worker
    from postgres.urls import sqlalchemy_url
    from tests.api_client import authed_client

    monkeypatch.setattr(limits, "PURGE_SHARE", 0.0)  # 1 % of requests purge old windows: not per loop

    server = make_url(sqlalchemy_url(service_db_url))
    settings = service_settings.model_copy(update={"rate_limit_per_minute": 600})  # the default's counter
    async with RoundTripProxy(server.host or "127.0.0.1", server.port or 5432) as proxy:
        proxied = server.set(host="127.0.0.1", port=proxy.port).render_as_string(False)
        async with (
            open_worker(
                settings, database_url=proxied, catalog=ml_dataset, loop_deps=service_loop_deps
            ) as worker,
            await authed_client(settings, worker, "round-trips") as api,
        ):
            created = await api.post("/v1/sessions", json={"user_id": "u", "history": HISTORY})
            url = f"/v1/sessions/{created.json()['id']}/recommendations"
            body = {"candidates": [5, 10, 15, 20], "max_rounds": 1}  # one round: the same work each loop
            for _ in range(6):  # connections opened, key verified, statements prepared (5th use)
                assert (await api.post(url, json=body)).status_code == 200
            proxy.counted.reset()
            for _ in range(LOOPS):
                answer = await api.post(url, json=body)
                assert answer.status_code == 200, answer.text
                assert len(answer.json()["rounds"]) == 1
    per_loop = proxy.counted.total / LOOPS
    with capsys.disabled():
        print(f"\nround trips per offline loop (1 round, {LOOPS} loops):\n{proxy.counted.table(LOOPS)}")
    assert per_loop <= MAX_PER_LOOP, proxy.counted.table(LOOPS)


async def test_a_loop_starts_running_in_one_statement_not_waited_for_on_disk(api, service_worker):
    """LoopLedger.write_start: the loop's ``running`` row and its session's status, atomic, in one
    statement whose commit skips the WAL flush, leaving its pooled connection as it was."""
    import uuid

    from sqlalchemy import select, text

    from app.db import loops as loops_repo
    from app.db.models import Loop, Session

    created = await api.post("/v1/sessions", json={"user_id": "u", "history": HISTORY})
    session_id = uuid.UUID(created.json()["id"])
    database = service_worker.database
    async with database.one_statement() as db:
        flushes = "SELECT wal_sync FROM pg_stat_wal"
        before = (await db.execute(text(flushes))).scalar_one()
        for loop_index in range(1, 21):  # a WAL flush each if their commits waited for one
            await loops_repo.start_loop(
                db, session_id=session_id, loop_index=loop_index, worker_id="w", params={"p": 1}
            )
        after = (await db.execute(text(flushes))).scalar_one()
        assert (await db.execute(text("SHOW synchronous_commit"))).scalar_one() == "on"
    assert after - before < 10  # the WAL writer's own flushes (one per 200 ms) aside
    async with database.sessionmaker() as db:
        session = await db.get(Session, session_id)
        loops = (await db.execute(select(Loop.status).where(Loop.session_id == session_id))).scalars()
        assert session is not None and (session.status, session.n_loops) == ("running", 20)
        assert list(loops) == ["running"] * 20
