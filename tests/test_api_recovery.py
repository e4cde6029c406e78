"""Nothing is left running: loops whose run ended unrecorded are resumed from their last committed
checkpoint, or resolved with their cause, and the session is freed with them
(app/services/recovery.py, app/services/resume.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid

import pytest
from psycopg import OperationalError
from sqlalchemy import select, update

from app.db.models import Loop
from app.db.models import Session as SessionRow
from app.services import recovery
from app.services.loops import run_takeover
from graph.agents.offline import OfflineRecAgent

pytestmark = pytest.mark.integration

HISTORY = [49, 180, 257, 293, 0, 171]
BODY = {"candidates": [5, 10, 15, 20, 25, 30], "max_rounds": 2}


async def _abandoned_loop(api, monkeypatch) -> str:
    """A session whose loop 1 stays ``running`` because its request was cancelled mid-run."""
    session_id = (await api.post("/v1/sessions", json={"user_id": "u", "history": HISTORY})).json()["id"]
    started = asyncio.Event()
    propose = OfflineRecAgent.propose

    async def hang(self, ctx):
        started.set()
        await asyncio.sleep(3600)

    monkeypatch.setattr(OfflineRecAgent, "propose", hang)
    request = asyncio.create_task(api.post(f"/v1/sessions/{session_id}/recommendations", json=BODY))
    await asyncio.wait_for(started.wait(), 30)
    request.cancel()
    with pytest.raises(asyncio.CancelledError):
        await request
    monkeypatch.setattr(OfflineRecAgent, "propose", propose)
    return session_id


async def _settled(worker, session_id: str, timeout_s: float = 30.0):
    """The session's state once no loop of it runs (a resumed one has been recorded)."""
    for _ in range(int(timeout_s / 0.1)):
        state = await _state(worker, session_id)
        if state[0] != "running" and not worker.runner.inflight:
            return state
        await asyncio.sleep(0.1)
    return await _state(worker, session_id)


async def _resumed_from(worker, session_id: str, loop_index: int = 1) -> dict | None:
    async with worker.database.sessionmaker() as db:
        loop = (
            await db.execute(
                select(Loop).where(Loop.session_id == uuid.UUID(session_id), Loop.loop_index == loop_index)
            )
        ).scalar_one()
        return loop.resumed_from


async def _state(worker, session_id: str) -> tuple[str, list[tuple[int, str, str | None]]]:
    async with worker.database.sessionmaker() as db:
        session = await db.get(SessionRow, uuid.UUID(session_id))
        loops = (await db.execute(select(Loop).where(Loop.session_id == session.id))).scalars()
        return session.status, sorted((loop.loop_index, loop.status, loop.error) for loop in loops)


async def test_the_watch_records_a_loop_its_worker_could_not_record_as_database_unavailable(
    api, service_worker, monkeypatch
):
    session_id = await _abandoned_loop(api, monkeypatch)
    error = recovery.database_error(OperationalError("server closed the connection unexpectedly"))
    service_worker.runner.unrecorded[(uuid.UUID(session_id), 1)] = error  # its failure could not be written
    watch = recovery._Watch(run_takeover)
    await watch.sweep(service_worker.database, service_worker.runner)
    assert (await _state(service_worker, session_id))[0] == "running"  # one look is not enough
    await watch.sweep(service_worker.database, service_worker.runner)
    assert await _state(service_worker, session_id) == ("idle", [(1, "failed", error)])
    assert error.startswith("database unavailable: the loop could not be recorded (OperationalError")
    assert (uuid.UUID(session_id), 1) not in service_worker.runner.unrecorded


async def test_the_watch_leaves_a_live_worker_alone_and_resumes_a_dead_ones_loop(
    api, service_worker, monkeypatch
):
    session_id = await _abandoned_loop(api, monkeypatch)
    other = str(uuid.uuid4())  # another worker's loop, as far as this one can tell
    async with service_worker.database.sessionmaker.begin() as db:
        await db.execute(update(Loop).where(Loop.session_id == uuid.UUID(session_id)).values(worker_id=other))
    settings = service_worker.settings.model_copy(update={"stale_grace_s": 0.3})
    worker = dataclasses.replace(
        service_worker, runner=dataclasses.replace(service_worker.runner, settings=settings)
    )
    alive = asyncio.create_task(worker.database.locks.keep(recovery.worker_lock(other), retry_s=0.1))
    watch = recovery._Watch(run_takeover)
    try:
        await asyncio.sleep(0.5)  # it holds its lock
        for _ in range(3):
            await watch.sweep(worker.database, worker.runner)
            await asyncio.sleep(0.2)
        assert (await _state(worker, session_id))[1] == [(1, "running", None)]
        busy = await api.post(f"/v1/sessions/{session_id}/recommendations", json=BODY)
        assert busy.status_code == 409 and busy.headers["retry-after"] == "2"
        assert busy.json()["detail"].startswith("loop 1 of the session is still running")
    finally:
        alive.cancel()
    await asyncio.sleep(0.3)  # the worker is gone: its lock stays free
    for _ in range(3):
        await watch.sweep(worker.database, worker.runner)
        await asyncio.sleep(0.2)
    # Resumed by this worker, to its end, from the checkpoint its cancelled run flushed (its first
    # step, before the recommendation agent answered).
    assert await _settled(worker, session_id) == ("idle", [(1, "completed", None)])
    resumed = await _resumed_from(worker, session_id)
    assert (resumed["next"], resumed["times"]) == (["recommend"], 1), resumed
    assert isinstance(resumed["step"], int) and isinstance(resumed["checkpoint_id"], str), resumed
    loop = (await api.get(f"/v1/sessions/{session_id}/loops")).json()["data"][0]
    assert loop["loop_index"] == 1 and loop["status"] == "completed" and loop["resumed_from"]["times"] == 1
    assert [r["round"] for r in loop["rounds"]] == list(range(1, len(loop["rounds"]) + 1))
    again = await api.post(f"/v1/sessions/{session_id}/recommendations", json=BODY)
    assert again.status_code == 200 and again.json()["loop_index"] == 2


async def test_a_dead_workers_loop_waits_while_its_session_lock_is_still_held(
    api, service_worker, monkeypatch
):
    session_id = await _abandoned_loop(api, monkeypatch)
    async with service_worker.database.sessionmaker.begin() as db:  # another worker's, whose lock is free
        await db.execute(
            update(Loop).where(Loop.session_id == uuid.UUID(session_id)).values(worker_id=str(uuid.uuid4()))
        )
    settings = service_worker.settings.model_copy(update={"stale_grace_s": 0.3})
    worker = dataclasses.replace(
        service_worker, runner=dataclasses.replace(service_worker.runner, settings=settings)
    )
    watch = recovery._Watch(run_takeover)
    session_lock = asyncio.Event()
    release = asyncio.Event()

    async def hold_the_session() -> None:  # the run's own connection, still seen by PostgreSQL
        async with worker.database.locks.hold(session_id, busy=RuntimeError("busy")):
            session_lock.set()
            await release.wait()

    holder = asyncio.create_task(hold_the_session())
    await session_lock.wait()
    try:
        for _ in range(4):
            await watch.sweep(worker.database, worker.runner)
            await asyncio.sleep(0.2)
        assert (await _state(worker, session_id))[1] == [(1, "running", None)]
    finally:
        release.set()
        await holder
    for _ in range(3):
        await watch.sweep(worker.database, worker.runner)
        await asyncio.sleep(0.2)
    assert await _settled(worker, session_id) == ("idle", [(1, "completed", None)])


async def test_a_late_finisher_of_a_loop_resolved_meanwhile_lands_nothing_and_says_so(
    api, service_worker, held_rec_agent
):
    """A worker cut off for longer than the grace: another worker resolved its loop as abandoned,
    then it finished after all. Its result is discarded under the loop's row lock (503, the
    cause noted on the loop), and a keyed retry runs the loop once more, not twice."""
    from app.db import loops as loops_repo
    from app.services.loop_record import DISCARDED

    session_id = (await api.post("/v1/sessions", json={"user_id": "u", "history": HISTORY})).json()["id"]
    url = f"/v1/sessions/{session_id}/recommendations"
    headers = {"Idempotency-Key": str(uuid.uuid4())}
    first = asyncio.create_task(api.post(url, json=BODY, headers=headers))
    for _ in range(200):
        if (await _state(service_worker, session_id))[1] == [(1, "running", None)]:
            break
        await asyncio.sleep(0.05)
    async with service_worker.database.sessionmaker.begin() as db:  # what another worker's sweep does
        assert await loops_repo.resolve_running(
            db, session_id=uuid.UUID(session_id), loop_index=1, error=recovery.ABANDONED
        )
    held_rec_agent.set()
    late = await first
    assert late.status_code == 503 and late.headers["retry-after"] == "2", late.text
    assert "its result was discarded" in late.json()["detail"]
    assert await _state(service_worker, session_id) == (
        "idle",
        [(1, "failed", recovery.ABANDONED + DISCARDED)],
    )
    retry = await api.post(url, json=BODY, headers=headers)
    assert retry.status_code == 200 and retry.json()["loop_index"] == 2
    replay = await api.post(url, json=BODY, headers=headers)
    assert replay.headers["idempotent-replayed"] == "true" and replay.json() == retry.json()
    status, loops = await _state(service_worker, session_id)
    assert status == "idle" and [(i, s) for i, s, _ in loops] == [(1, "failed"), (2, "completed")]


async def test_a_start_whose_commit_lost_its_answer_is_resolved_as_database_unavailable(
    api, service_worker, monkeypatch
):
    """The database went away at the COMMIT of a loop's start: the row is in, ``running``, but the
    run saw the error and answered 503, and nothing runs the loop. A live worker's loop: resolved
    with the database's cause, never as abandoned by a stopped worker. A start that never landed
    leaves nothing behind."""
    from app.services.loop_record import LoopLedger

    session_id = (await api.post("/v1/sessions", json={"user_id": "u", "history": HISTORY})).json()["id"]
    url = f"/v1/sessions/{session_id}/recommendations"
    write_start = LoopLedger.write_start
    cut = OperationalError("server closed the connection unexpectedly")

    async def committed_then_cut(self):
        await write_start(self)
        raise cut

    monkeypatch.setattr(LoopLedger, "write_start", committed_then_cut)
    lost = await api.post(url, json=BODY)
    assert lost.status_code == 503 and lost.headers["retry-after"] == "2", lost.text
    assert await _state(service_worker, session_id) == ("running", [(1, "running", None)])
    watch = recovery._Watch(run_takeover)
    for _ in range(2):
        await watch.sweep(service_worker.database, service_worker.runner)
    assert await _state(service_worker, session_id) == (
        "idle",
        [(1, "failed", recovery.database_error(cut))],
    )

    async def cut_before_commit(self):
        raise cut

    monkeypatch.setattr(LoopLedger, "write_start", cut_before_commit)
    assert (await api.post(url, json=BODY)).status_code == 503
    assert (uuid.UUID(session_id), 2) in service_worker.runner.unrecorded  # the row may have landed
    for _ in range(2):
        await watch.sweep(service_worker.database, service_worker.runner)
    assert not service_worker.runner.unrecorded  # it did not: forgotten
    monkeypatch.setattr(LoopLedger, "write_start", write_start)
    again = await api.post(url, json=BODY)
    assert again.status_code == 200 and again.json()["loop_index"] == 2
