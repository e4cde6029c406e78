"""A run that loses the database for a moment waits for it and goes on in the same request
(app/services/loop_outage.py): from its thread's last checkpoint, or by
recording its loop again. The request answers as if nothing happened, never 503 for work that a
resume would finish moments later; past ``Settings.run_outage_wait_s`` it answers 503 as before."""

from __future__ import annotations

import uuid

import pytest
from psycopg import OperationalError
from sqlalchemy import select
from sqlalchemy.orm import selectinload

from app.db.models import Loop
from app.services import loops as loops_service
from app.services.loop_record import LoopLedger

pytestmark = pytest.mark.integration

HISTORY = [49, 180, 257, 293, 0, 171]
CANDIDATES = [5, 10, 15, 20, 25, 30]


def _cut() -> OperationalError:
    return OperationalError("server closed the connection unexpectedly")


async def _session(api) -> str:
    created = await api.post("/v1/sessions", json={"user_id": "u", "history": HISTORY})
    assert created.status_code == 201, created.text
    return created.json()["id"]


async def _loops(worker, session_id: str) -> list[Loop]:
    async with worker.database.sessionmaker() as db:
        found = await db.execute(
            select(Loop)
            .where(Loop.session_id == uuid.UUID(session_id))
            .options(selectinload(Loop.rounds))
            .order_by(Loop.loop_index)
        )
        return list(found.scalars())


async def test_a_record_cut_off_before_its_commit_is_recorded_again_and_answered(
    api, service_worker, monkeypatch
):
    session_id = await _session(api)
    record, cuts = LoopLedger.record, []

    async def cut_once(self, outcome):
        if not cuts:
            cuts.append(outcome.loop_index)
            raise _cut()
        await record(self, outcome)

    monkeypatch.setattr(LoopLedger, "record", cut_once)
    answer = await api.post(
        f"/v1/sessions/{session_id}/recommendations", json={"candidates": CANDIDATES, "max_rounds": 2}
    )
    assert answer.status_code == 200, answer.text
    assert cuts == [1] and answer.json()["status"] == "completed" and answer.json()["loop_index"] == 1
    (loop,) = await _loops(service_worker, session_id)
    assert (loop.status, loop.resumed_from) == ("completed", None)
    assert loop.final_item == answer.json()["item"]["id"]
    assert [r.round for r in loop.rounds] == [r["round"] for r in answer.json()["rounds"]]
    assert (await api.get(f"/v1/sessions/{session_id}")).json()["status"] == "idle"


async def test_a_record_whose_commit_landed_before_the_cut_is_answered_once(api, service_worker, monkeypatch):
    session_id = await _session(api)
    record = LoopLedger.record

    async def committed_then_cut(self, outcome):
        await record(self, outcome)
        raise _cut()

    monkeypatch.setattr(LoopLedger, "record", committed_then_cut)
    answer = await api.post(
        f"/v1/sessions/{session_id}/recommendations", json={"candidates": CANDIDATES, "max_rounds": 2}
    )
    assert answer.status_code == 200 and answer.json()["status"] == "completed", answer.text
    assert [(loop.loop_index, loop.status) for loop in await _loops(service_worker, session_id)] == [
        (1, "completed")
    ]


async def test_a_judgement_whose_run_lost_the_database_is_applied_once_in_the_same_request(
    api, service_worker, monkeypatch
):
    """The cut comes before the judgement committed: the run applies it itself once the database
    answers (the thread still waits for it), and the loop goes on to its next question."""
    session_id = await _session(api)
    url = f"/v1/sessions/{session_id}"
    paused = await api.post(
        f"{url}/recommendations", json={"candidates": CANDIDATES, "judge_mode": "human", "max_rounds": 3}
    )
    assert paused.json()["status"] == "awaiting_feedback", paused.text
    proposed = paused.json()["pending"]["item"]
    stream, cuts = loops_service.stream_loop, []

    async def cut_once(*args, **kwargs):
        if not cuts:
            cuts.append(1)
            raise _cut()
        return await stream(*args, **kwargs)

    monkeypatch.setattr(loops_service, "stream_loop", cut_once)
    rejected = await api.post(f"{url}/feedback", json={"decision": "reject", "reason": "Too dark."})
    assert rejected.status_code == 200, rejected.text
    body = rejected.json()
    assert cuts == [1] and body["status"] == "awaiting_feedback" and body["pending"]["round"] == 2
    assert [(r["item"], r["decision"], r["user_reason"]) for r in body["rounds"]] == [
        (proposed, "reject", "Too dark.")
    ]
    (loop,) = await _loops(service_worker, session_id)
    assert loop.status == "awaiting_feedback" and [r.round for r in loop.rounds] == [1]
    assert loop.resumed_from["times"] == 1 and loop.resumed_from["next"] == ["judge"], loop.resumed_from


async def test_past_the_wait_the_request_answers_503_and_the_loop_is_left_to_resume(
    api, service_worker, monkeypatch
):
    monkeypatch.setattr(service_worker.settings, "run_outage_wait_s", 0)
    session_id = await _session(api)
    url = f"/v1/sessions/{session_id}"
    await api.post(f"{url}/recommendations", json={"candidates": CANDIDATES, "judge_mode": "human"})

    async def cut(*args, **kwargs):
        raise _cut()

    monkeypatch.setattr(loops_service, "stream_loop", cut)
    lost = await api.post(f"{url}/feedback", json={"decision": "reject", "reason": "Too dark."})
    assert lost.status_code == 503 and lost.headers["retry-after"] == "2", lost.text
    (loop,) = await _loops(service_worker, session_id)
    assert loop.status == "running" and loop.rounds == []  # resumed later from its checkpoint
