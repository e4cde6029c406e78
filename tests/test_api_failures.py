"""Recorded failures: a loop is ``running`` while it runs and ``failed`` (with why) if it raises.

A failed loop keeps its number and the rounds it finished; the session is free again at once. A
run whose worker stops (cancelled here, as a shutdown would) is marked failed by the next run.
"""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import select

from app.db.models import Loop
from app.db.models import Session as SessionRow
from graph.agents.offline import OfflineRecAgent

pytestmark = pytest.mark.integration

HISTORY = [49, 180, 257, 293, 0, 171]
BODY = {"candidates": [5, 10, 15, 20, 25, 30], "max_rounds": 4}


async def _new_session(api) -> str:
    response = await api.post("/v1/sessions", json={"user_id": "u", "history": HISTORY})
    assert response.status_code == 201, response.text
    return response.json()["id"]


async def _rows(worker, session_id: str) -> tuple[SessionRow, list[Loop]]:
    async with worker.database.sessionmaker() as db:
        session = await db.get(SessionRow, session_id)
        loops = (await db.execute(select(Loop).where(Loop.session_id == session.id))).scalars()
        return session, sorted(loops, key=lambda loop: loop.loop_index)


@pytest.fixture
def rejecting_user(monkeypatch):
    """The user agent rejects everything, so a loop runs to its round limit."""
    from graph.agents.offline import OfflineUserAgent
    from graph.state import make_judgement

    async def reject(self, ctx):
        return make_judgement("reject", "not for me")

    monkeypatch.setattr(OfflineUserAgent, "judge", reject)


async def test_a_loop_that_raises_is_recorded_failed_with_its_rounds_and_keeps_its_number(
    api, service_worker, monkeypatch, rejecting_user
):
    session_id = await _new_session(api)
    url = f"/v1/sessions/{session_id}"
    propose = OfflineRecAgent.propose
    calls = []

    async def fail_in_round_3(self, ctx):
        calls.append(ctx.round)
        if ctx.round == 3:
            raise RuntimeError("the recommender fell over")
        return await propose(self, ctx)

    monkeypatch.setattr(OfflineRecAgent, "propose", fail_in_round_3)
    response = await api.post(f"{url}/recommendations", json=BODY)
    assert response.status_code == 500
    detail = "loop 1 failed (RuntimeError); it is in the session's loop history as failed, with the error"
    assert response.json() == {"detail": detail, "field": None}

    failed = (await api.get(f"{url}/loops", params={"status": "failed"})).json()
    assert failed["count"] == 1
    loop = failed["data"][0]
    assert loop["loop_index"] == 1 and loop["status"] == "failed"
    assert loop["error"] == "RuntimeError: the recommender fell over"
    assert [r["round"] for r in loop["rounds"]] == [1, 2]  # the rounds it finished are kept
    assert loop["finished_at"] is not None and loop["final_item"] is None
    session, rows = await _rows(service_worker, session_id)
    assert session.status == "idle" and session.n_loops == 1
    assert [(row.loop_index, row.status) for row in rows] == [(1, "failed")]

    monkeypatch.setattr(OfflineRecAgent, "propose", propose)
    again = await api.post(f"{url}/recommendations", json=BODY)
    assert again.status_code == 200, (await api.get(f"{url}/loops")).json()["data"][0]["error"]
    assert again.json()["loop_index"] == 2  # no gap, no reuse
    history = (await api.get(f"{url}/loops")).json()
    assert [(loop["loop_index"], loop["status"]) for loop in history["data"]] == [
        (2, "completed"),
        (1, "failed"),
    ]
    assert (await api.get(f"{url}/loops", params={"status": "completed"})).json()["count"] == 1


async def test_a_running_loop_shows_in_the_history_and_the_filters(api, service_worker, held_rec_agent):
    session_id = await _new_session(api)
    url = f"/v1/sessions/{session_id}"
    release = held_rec_agent
    running = asyncio.create_task(api.post(f"{url}/recommendations", json=BODY))
    try:
        for _ in range(100):
            listed = (await api.get(f"{url}/loops", params={"status": "running"})).json()
            if listed["count"]:
                break
            await asyncio.sleep(0.05)
        assert [(loop["loop_index"], loop["status"]) for loop in listed["data"]] == [(1, "running")]
        assert listed["data"][0]["finished_at"] is None and listed["data"][0]["rounds"] == []
        sessions = (await api.get("/v1/sessions", params={"status": "running"})).json()
        assert session_id in [s["id"] for s in sessions["data"]]
        assert (await api.get(url)).json()["status"] == "running"
    finally:
        release.set()
    assert (await running).status_code == 200
    assert (await api.get(f"{url}/loops", params={"status": "running"})).json()["count"] == 0
    assert (await api.get(url)).json()["status"] == "idle"


async def test_a_run_whose_worker_stopped_is_resumed_when_the_session_is_next_touched(
    api, service_worker, monkeypatch
):
    session_id = await _new_session(api)
    url = f"/v1/sessions/{session_id}"
    started = asyncio.Event()
    propose = OfflineRecAgent.propose

    async def hang(self, ctx):
        started.set()
        await asyncio.sleep(3600)

    monkeypatch.setattr(OfflineRecAgent, "propose", hang)
    stopped = asyncio.create_task(api.post(f"{url}/recommendations", json=BODY))
    await asyncio.wait_for(started.wait(), 30)
    stopped.cancel()  # what a worker's shutdown does to a request in flight
    with pytest.raises(asyncio.CancelledError):
        await stopped
    session, rows = await _rows(service_worker, session_id)
    assert session.status == "running" and [(r.loop_index, r.status) for r in rows] == [(1, "running")]

    monkeypatch.setattr(OfflineRecAgent, "propose", propose)
    busy = await api.post(f"{url}/recommendations", json=BODY)  # it resumes loop 1 meanwhile
    assert busy.status_code == 409 and busy.headers["retry-after"] == "2", busy.text
    assert busy.json()["detail"].startswith("loop 1 of the session is still running")
    for _ in range(300):
        response = await api.post(f"{url}/recommendations", json=BODY)
        if response.status_code != 409:
            break
        await asyncio.sleep(0.1)
    assert response.status_code == 200 and response.json()["loop_index"] == 2
    history = (await api.get(f"{url}/loops")).json()["data"]
    assert [(loop["loop_index"], loop["status"]) for loop in history] == [(2, "completed"), (1, "completed")]
    assert history[1]["error"] is None and history[1]["resumed_from"]["times"] == 1
    assert history[0]["resumed_from"] is None


async def test_a_failed_resumption_of_a_human_judged_loop_frees_the_session(api, monkeypatch):
    session_id = await _new_session(api)
    url = f"/v1/sessions/{session_id}"
    paused = await api.post(f"{url}/recommendations", json={**BODY, "judge_mode": "human"})
    assert paused.status_code == 200 and paused.json()["status"] == "awaiting_feedback"

    async def broken(self, ctx):
        raise ValueError("no more ideas")

    monkeypatch.setattr(OfflineRecAgent, "propose", broken)
    answered = await api.post(f"{url}/feedback", json={"decision": "reject", "reason": "not tonight"})
    assert answered.status_code == 500 and answered.json()["detail"].startswith("loop 1 failed (ValueError)")
    loops = (await api.get(f"{url}/loops")).json()["data"]
    assert [(loop["loop_index"], loop["status"]) for loop in loops] == [(1, "failed")]
    assert loops[0]["error"] == "ValueError: no more ideas" and [r["round"] for r in loops[0]["rounds"]] == [
        1
    ]
    assert (await api.get(url)).json()["status"] == "idle"  # a new loop may start
