"""Idempotency-Key: a retry replays the first answer and runs nothing; reuse for another request is 422."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sqlalchemy import func, select, text, update

from app.db.models import IdempotencyKey, Loop
from app.db.models import Session as SessionRow

pytestmark = pytest.mark.integration

HISTORY = [49, 180, 257, 293]
BODY = {"candidates": [5, 10, 15, 20, 25, 30], "max_rounds": 2}


def _key() -> dict[str, str]:
    return {"Idempotency-Key": str(uuid.uuid4())}


async def _count(worker, model, **where) -> int:
    async with worker.database.sessionmaker() as db:
        stmt = select(func.count()).select_from(model).filter_by(**where)
        return int((await db.execute(stmt)).scalar_one())


async def test_a_retried_session_creation_creates_one_session(api, service_worker):
    headers = _key()
    body = {"user_id": "idem-user", "history": HISTORY}
    first = await api.post("/v1/sessions", json=body, headers=headers)
    again = await api.post("/v1/sessions", json={"history": HISTORY, "user_id": "idem-user"}, headers=headers)
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json() and again.headers["idempotent-replayed"] == "true"
    assert "idempotent-replayed" not in first.headers
    assert await _count(service_worker, SessionRow, user_id="idem-user") == 1


async def test_a_retried_recommendation_replays_the_loop_and_runs_none(api, service_worker):
    session_id = (await api.post("/v1/sessions", json={"user_id": "u", "history": HISTORY})).json()["id"]
    url = f"/v1/sessions/{session_id}/recommendations"
    headers = _key()
    first = await api.post(url, json=BODY, headers=headers)
    assert first.status_code == 200 and first.json()["loop_index"] == 1
    for _ in range(2):
        again = await api.post(url, json=BODY, headers=headers)
        assert again.status_code == 200 and again.json() == first.json()
    assert await _count(service_worker, Loop, session_id=uuid.UUID(session_id)) == 1
    other = await api.post(url, json=BODY, headers=_key())  # a new key is a new request
    assert other.json()["loop_index"] == 2


async def test_a_retried_consumption_appends_once(api):
    session_id = (await api.post("/v1/sessions", json={"user_id": "u", "history": HISTORY})).json()["id"]
    url = f"/v1/sessions/{session_id}/consumed"
    headers = _key()
    answers = [await api.post(url, json={"items": [7, 8]}, headers=headers) for _ in range(3)]
    assert [a.status_code for a in answers] == [200] * 3
    assert (await api.get(f"/v1/sessions/{session_id}")).json()["history"] == [*HISTORY, 7, 8]


async def test_the_same_key_for_another_request_is_422_and_changes_nothing(api, service_worker):
    headers = _key()
    session_id = (
        await api.post("/v1/sessions", json={"user_id": "u", "history": HISTORY}, headers=headers)
    ).json()["id"]
    other_body = await api.post("/v1/sessions", json={"user_id": "u", "history": [1]}, headers=headers)
    assert other_body.status_code == 422
    assert other_body.json()["field"] == "Idempotency-Key"
    assert "different request" in other_body.json()["detail"]
    other_path = await api.post(f"/v1/sessions/{session_id}/consumed", json={"items": [1]}, headers=headers)
    assert other_path.status_code == 422 and other_path.json()["field"] == "Idempotency-Key"
    assert (await api.get(f"/v1/sessions/{session_id}")).json()["history"] == HISTORY


async def test_a_retry_while_the_first_runs_is_409(api, service_worker, held_rec_agent):
    session_id = (await api.post("/v1/sessions", json={"user_id": "u", "history": HISTORY})).json()["id"]
    url = f"/v1/sessions/{session_id}/recommendations"
    release = held_rec_agent
    headers = _key()
    first = asyncio.create_task(api.post(url, json=BODY, headers=headers))
    await asyncio.sleep(0.3)
    try:
        retry = await api.post(url, json=BODY, headers=headers)
        assert retry.status_code == 409
        assert retry.json() == {
            "detail": "a request with this Idempotency-Key is still running; retry when it has finished",
            "field": "Idempotency-Key",
        }
    finally:
        release.set()
    assert (await first).status_code == 200
    replayed = await api.post(url, json=BODY, headers=headers)
    assert replayed.json() == (await first).json()
    assert await _count(service_worker, Loop, session_id=uuid.UUID(session_id)) == 1


async def test_keys_are_per_owner_and_expire(make_api_client, service_worker):
    alice, bob = await make_api_client("idem-alice"), await make_api_client("idem-bob")
    headers = _key()
    a = await alice.post("/v1/sessions", json={"user_id": "a", "history": HISTORY}, headers=headers)
    b = await bob.post("/v1/sessions", json={"user_id": "b", "history": [1]}, headers=headers)
    assert a.status_code == b.status_code == 201 and a.json()["id"] != b.json()["id"]

    async with service_worker.database.sessionmaker.begin() as db:  # 24 h later
        await db.execute(
            update(IdempotencyKey)
            .where(IdempotencyKey.key == headers["Idempotency-Key"])
            .values(expires_at=func.now())
        )
    again = await alice.post("/v1/sessions", json={"user_id": "a", "history": HISTORY}, headers=headers)
    assert again.status_code == 201 and again.json()["id"] != a.json()["id"]
    assert "idempotent-replayed" not in again.headers


@pytest.mark.parametrize("key", ["", "has space", "x" * 256, "tab\there"])
async def test_malformed_keys_are_refused(api, service_worker, key):
    before = await _count(service_worker, SessionRow)
    response = await api.post(
        "/v1/sessions", json={"user_id": "u", "history": HISTORY}, headers={"Idempotency-Key": key}
    )
    assert response.status_code == 422 and response.json()["field"] == "Idempotency-Key"
    assert await _count(service_worker, SessionRow) == before


# --- exactly once across outages: the key is written with the work it stands for -------------------


@pytest.fixture
def answers_not_stored(monkeypatch):
    """Storing a keyed request's answer fails, as when the database goes away right after the work
    committed: only the key's row written with the work is left."""
    from psycopg import OperationalError

    from app.services import idempotency as service

    async def database_gone(*args, **kwargs):
        raise OperationalError("the database went away after the commit")

    monkeypatch.setattr(service, "remember", database_gone)


async def test_a_retry_whose_answer_was_lost_replays_the_loop_from_the_history(
    api, service_worker, answers_not_stored
):
    session_id = (await api.post("/v1/sessions", json={"user_id": "u", "history": HISTORY})).json()["id"]
    url = f"/v1/sessions/{session_id}/recommendations"
    headers = _key()
    first = await api.post(url, json=BODY, headers=headers)
    assert first.status_code == 200  # the answer went out; storing it failed quietly
    again = await api.post(url, json=BODY, headers=headers)
    assert again.status_code == 200 and again.headers["idempotent-replayed"] == "true"
    assert again.json() == first.json()  # rebuilt from the loop history, field for field
    assert await _count(service_worker, Loop, session_id=uuid.UUID(session_id)) == 1

    streamed = {**_key(), "Accept": "text/event-stream"}
    live = await api.post(url, json=BODY, headers=streamed)
    replay = await api.post(url, json=BODY, headers=streamed)
    result = [line for line in live.text.splitlines() if line.startswith("data: ") and '"loop_index"' in line]
    assert replay.headers["content-type"].startswith("text/event-stream")
    assert replay.text.split("\r\n")[:2] == ["event: result", result[-1]]
    assert await _count(service_worker, Loop, session_id=uuid.UUID(session_id)) == 2


async def test_a_lost_answer_replays_the_loop_as_it_answered_even_after_it_was_judged(
    api, service_worker, answers_not_stored
):
    """A paused loop's answer (and its first judgement's) could not be stored, then the loop went
    on: each retry still replays what its own request answered, not the loop as it is now."""
    session_id = (await api.post("/v1/sessions", json={"user_id": "u", "history": HISTORY})).json()["id"]
    url = f"/v1/sessions/{session_id}"
    paused_key, rejected_key = _key(), _key()
    human = {**BODY, "judge_mode": "human", "max_rounds": 3}
    paused = await api.post(f"{url}/recommendations", json=human, headers=paused_key)
    assert paused.status_code == 200 and paused.json()["status"] == "awaiting_feedback", paused.text
    reject = {"decision": "reject", "reason": "Too dark."}
    rejected = await api.post(f"{url}/feedback", json=reject, headers=rejected_key)
    assert rejected.json()["status"] == "awaiting_feedback" and len(rejected.json()["rounds"]) == 1
    accepted = await api.post(f"{url}/feedback", json={"decision": "accept", "reason": "Yes"})
    assert accepted.json()["status"] == "completed", accepted.text

    again = await api.post(f"{url}/recommendations", json=human, headers=paused_key)
    assert again.headers["idempotent-replayed"] == "true" and again.json() == paused.json()
    again = await api.post(f"{url}/feedback", json=reject, headers=rejected_key)
    assert again.headers["idempotent-replayed"] == "true" and again.json() == rejected.json()
    assert await _count(service_worker, Loop, session_id=uuid.UUID(session_id)) == 1


async def test_a_retried_session_creation_whose_answer_was_lost_creates_one_session(
    api, service_worker, answers_not_stored
):
    headers = _key()
    body = {"user_id": "lost-answer", "history": HISTORY}
    first = await api.post("/v1/sessions", json=body, headers=headers)
    again = await api.post("/v1/sessions", json=body, headers=headers)
    assert first.status_code == again.status_code == 201 and again.json() == first.json()
    assert again.headers["idempotent-replayed"] == "true"
    assert await _count(service_worker, SessionRow, user_id="lost-answer") == 1

    url = f"/v1/sessions/{first.json()['id']}/consumed"
    headers = _key()
    consumed = await api.post(url, json={"items": [7, 8]}, headers=headers)
    retried = await api.post(url, json={"items": [7, 8]}, headers=headers)
    assert consumed.status_code == retried.status_code == 200 and retried.json() == consumed.json()
    assert retried.json()["history"] == [*HISTORY, 7, 8]  # appended once


async def _drop_lock_connections(worker) -> int:
    """Cut the connections holding advisory locks, as a database restart does (their locks go too)."""
    async with worker.database.sessionmaker() as db:
        killed = await db.execute(
            text(
                "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' "
                "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            )
        )
        return len(killed.all())


async def test_a_retry_while_the_loop_runs_is_409_even_when_its_lock_was_lost(
    api, service_worker, held_rec_agent
):
    session_id = (await api.post("/v1/sessions", json={"user_id": "u", "history": HISTORY})).json()["id"]
    url = f"/v1/sessions/{session_id}/recommendations"
    headers = _key()
    first = asyncio.create_task(api.post(url, json=BODY, headers=headers))
    for _ in range(100):
        if await _count(service_worker, Loop, session_id=uuid.UUID(session_id), status="running"):
            break
        await asyncio.sleep(0.05)
    assert await _drop_lock_connections(service_worker) >= 2  # the key's and the session's
    try:
        retry = await api.post(url, json=BODY, headers=headers)
        assert retry.status_code == 409 and retry.headers["retry-after"] == "2"
        assert retry.json()["field"] == "Idempotency-Key"
    finally:
        held_rec_agent.set()
    done = await first
    assert done.status_code == 200  # its lock's release failed with the connection: no error for it
    replayed = await api.post(url, json=BODY, headers=headers)
    assert replayed.status_code == 200 and replayed.json() == done.json()
    assert await _count(service_worker, Loop, session_id=uuid.UUID(session_id)) == 1


async def test_a_keyed_loop_that_failed_runs_again_on_retry(api, service_worker, monkeypatch):
    from graph.agents.offline import OfflineRecAgent

    session_id = (await api.post("/v1/sessions", json={"user_id": "u", "history": HISTORY})).json()["id"]
    url = f"/v1/sessions/{session_id}/recommendations"
    propose = OfflineRecAgent.propose

    async def broken(self, ctx):
        raise RuntimeError("down for a moment")

    monkeypatch.setattr(OfflineRecAgent, "propose", broken)
    headers = _key()
    assert (await api.post(url, json=BODY, headers=headers)).status_code == 500
    monkeypatch.setattr(OfflineRecAgent, "propose", propose)
    again = await api.post(url, json=BODY, headers=headers)
    assert again.status_code == 200 and again.json()["loop_index"] == 2
    assert "idempotent-replayed" not in again.headers
    assert (await api.post(url, json=BODY, headers=headers)).json() == again.json()


async def test_a_keyed_command_answered_503_after_its_commit_applies_once_on_retry(
    api, service_worker, monkeypatch
):
    """The outage strikes after the command committed and before its answer (and the key's answer)
    could be stored: the client sees 503; its retry replays the command, it is not parsed again."""
    from psycopg import OperationalError

    from app.db.models import SteeringCommand
    from app.services import steering

    session_id = (await api.post("/v1/sessions", json={"user_id": "u", "history": HISTORY})).json()["id"]
    url = f"/v1/sessions/{session_id}/commands"
    headers = _key()
    observe = steering.metrics.observe_llm

    def database_gone(*args, **kwargs):  # runs right after the command's transaction committed
        raise OperationalError("the database went away after the commit")

    monkeypatch.setattr(steering.metrics, "observe_llm", database_gone)
    first = await api.post(url, json={"text": "no horror"}, headers=headers)
    assert first.status_code == 503 and first.headers["retry-after"] == "2"
    monkeypatch.setattr(steering.metrics, "observe_llm", observe)
    again = await api.post(url, json={"text": "no horror"}, headers=headers)
    assert again.status_code == 200, again.text
    assert again.headers["idempotent-replayed"] == "true"
    assert again.json()["preferences"]["negative"]["genres"] == ["Horror"]
    assert await _count(service_worker, SteeringCommand, session_id=uuid.UUID(session_id)) == 1
    history = (await api.get(url)).json()
    assert history["count"] == 1 and history["data"][0]["preferences"] == again.json()["preferences"]
    assert (await api.post(url, json={"text": "no horror"}, headers=headers)).json() == again.json()


async def test_a_keyed_command_whose_answer_was_lost_replays_field_for_field(
    api, service_worker, answers_not_stored
):
    from app.db.models import SteeringCommand

    session_id = (await api.post("/v1/sessions", json={"user_id": "u", "history": HISTORY})).json()["id"]
    url = f"/v1/sessions/{session_id}/commands"
    headers = _key()
    first = await api.post(url, json={"text": "from the 90s, no horror"}, headers=headers)
    again = await api.post(url, json={"text": "from the 90s, no horror"}, headers=headers)
    assert first.status_code == again.status_code == 200 and again.json() == first.json()
    assert again.headers["idempotent-replayed"] == "true"
    assert await _count(service_worker, SteeringCommand, session_id=uuid.UUID(session_id)) == 1
    other = await api.post(url, json={"text": "no comedy"}, headers=headers)
    assert other.status_code == 422 and other.json()["field"] == "Idempotency-Key"  # nothing applied
    assert await _count(service_worker, SteeringCommand, session_id=uuid.UUID(session_id)) == 1


async def test_keyed_protocol_posts_whose_answers_were_lost_replay_their_shapes(
    api, service_worker, answers_not_stored
):
    headers = _key()
    body = {"metadata": {"user_id": "lost-thread", "history": HISTORY}}
    thread = await api.post("/threads", json=body, headers=headers)
    again = await api.post("/threads", json=body, headers=headers)
    assert thread.status_code == again.status_code == 200 and again.json() == thread.json()
    assert await _count(service_worker, SessionRow, user_id="lost-thread") == 1

    url = f"/threads/{thread.json()['thread_id']}/runs"
    run = {"assistant_id": "recloop", "input": {"candidates": [5, 10, 15, 20, 25, 30], "max_rounds": 2}}
    headers = _key()
    waited = await api.post(f"{url}/wait", json=run, headers=headers)
    replayed = await api.post(f"{url}/wait", json=run, headers=headers)
    assert waited.status_code == replayed.status_code == 200, waited.text
    assert replayed.headers["idempotent-replayed"] == "true"
    assert replayed.json()["final_item"] == waited.json()["final_item"] is not None
    headers = _key()
    started = await api.post(url, json=run, headers=headers)
    assert started.status_code == 200
    joined = await api.get(f"{url}/{started.json()['run_id']}/join")
    assert joined.status_code == 200
    recorded = await api.post(url, json=run, headers=headers)
    assert recorded.json()["run_id"] == started.json()["run_id"] and recorded.json()["status"] == "success"
    thread_id = uuid.UUID(thread.json()["thread_id"])
    assert await _count(service_worker, Loop, session_id=thread_id) == 2
