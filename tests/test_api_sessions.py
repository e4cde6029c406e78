"""Sessions over HTTP: create, read, list with filters, consumption, delete, ownership, bad input."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import func, select

from app.db.models import Session

pytestmark = pytest.mark.integration

HISTORY = [49, 180, 257, 293, 0]


async def _count_sessions(worker) -> int:
    async with worker.database.sessionmaker() as db:
        return int((await db.execute(select(func.count()).select_from(Session))).scalar_one())


async def test_create_then_get_returns_the_session_and_empty_memories(api):
    created = await api.post("/v1/sessions", json={"user_id": "u1", "history": HISTORY})
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["user_id"] == "u1" and body["history"] == HISTORY
    assert body["status"] == "idle" and body["n_loops"] == 0 and body["dataset"] == "movielens"
    assert body["thread_id"] == body["id"]

    got = await api.get(f"/v1/sessions/{body['id']}")
    assert got.status_code == 200
    state = got.json()
    assert state["history"] == HISTORY
    assert state["rec_memory"] == [] and state["user_memory"] == [] and state["pending"] is None


async def test_list_filters_by_user_status_and_time_and_paginates(api):
    ids = []
    for user in ("alice", "alice", "bob"):
        response = await api.post("/v1/sessions", json={"user_id": user, "history": HISTORY})
        ids.append(response.json()["id"])

    alice = (await api.get("/v1/sessions", params={"user_id": "alice"})).json()
    assert alice["count"] == 2 and {s["id"] for s in alice["data"]} == set(ids[:2])

    page = (await api.get("/v1/sessions", params={"limit": 1, "offset": 1})).json()
    assert page["count"] == 3 and len(page["data"]) == 1 and page["data"][0]["id"] == ids[1]

    idle = (await api.get("/v1/sessions", params={"status": "idle"})).json()
    assert idle["count"] == 3
    waiting = (await api.get("/v1/sessions", params={"status": "awaiting_feedback"})).json()
    assert waiting == {"data": [], "count": 0}

    first_created = (await api.get(f"/v1/sessions/{ids[0]}")).json()["created_at"]
    later = (await api.get("/v1/sessions", params={"created_after": first_created})).json()
    assert later["count"] == 3
    before = (await api.get("/v1/sessions", params={"created_before": first_created})).json()
    assert before["count"] == 0


async def test_another_key_neither_sees_nor_touches_a_session(api, make_api_client):
    session_id = (await api.post("/v1/sessions", json={"user_id": "u", "history": HISTORY})).json()["id"]
    intruder = await make_api_client("owner-b")

    for method, path, body in (
        ("GET", f"/v1/sessions/{session_id}", None),
        ("GET", f"/v1/sessions/{session_id}/loops", None),
        ("POST", f"/v1/sessions/{session_id}/recommendations", {"candidates": [1, 2, 3]}),
        ("POST", f"/v1/sessions/{session_id}/feedback", {"decision": "accept", "reason": "fine"}),
        ("POST", f"/v1/sessions/{session_id}/consumed", {"items": [7]}),
        ("DELETE", f"/v1/sessions/{session_id}", None),
    ):
        response = await intruder.request(method, path, json=body)
        assert response.status_code == 404, (method, path, response.text)
        assert response.json() == {"detail": f"no session {session_id}", "field": "session_id"}

    assert (await intruder.get("/v1/sessions")).json() == {"data": [], "count": 0}
    assert (await api.get(f"/v1/sessions/{session_id}")).json()["history"] == HISTORY


async def test_requests_without_a_valid_key_are_refused(api):
    anonymous = await api.get("/v1/sessions", headers={"Authorization": ""})
    assert anonymous.status_code == 401 and anonymous.json()["field"] == "Authorization"
    wrong = await api.get("/v1/sessions", headers={"Authorization": "Bearer rl_not-a-key"})
    assert wrong.status_code == 401 and wrong.json()["detail"] == "invalid or revoked API key"


async def test_a_revoked_key_is_refused_by_every_worker_once_its_key_cache_expires(
    make_api_client, service_worker
):
    """Revoking is a database write (``recloop keys revoke`` runs in a process that serves nothing);
    a worker that verified the key trusts it for ``api_key_cache_s`` more, then asks again."""
    from app.services.keys import list_keys, revoke_key

    client = await make_api_client("soon-revoked")
    assert (await client.get("/v1/sessions")).status_code == 200  # verified, so now cached
    key_id = max(
        k.id for k in await list_keys(service_worker.database.sessionmaker) if k.owner == "soon-revoked"
    )

    assert await revoke_key(service_worker.database.sessionmaker, key_id=key_id)
    assert (await client.get("/v1/sessions")).status_code == 200  # still inside this worker's cache time
    cache, clock = service_worker.verified_keys, service_worker.verified_keys.clock
    later = clock() + service_worker.settings.api_key_cache_s
    cache.clock = lambda: later
    try:
        refused = await client.get("/v1/sessions")
    finally:
        cache.clock = clock
    assert refused.status_code == 401 and refused.json()["detail"] == "invalid or revoked API key"
    assert not await revoke_key(service_worker.database.sessionmaker, key_id=key_id)  # already revoked
    keys = {k.id: k for k in await list_keys(service_worker.database.sessionmaker)}
    assert keys[key_id].revoked_at is not None


async def test_consumption_appends_to_the_history(api):
    session_id = (await api.post("/v1/sessions", json={"user_id": "u", "history": HISTORY})).json()["id"]
    response = await api.post(f"/v1/sessions/{session_id}/consumed", json={"items": [7, 8]})
    assert response.status_code == 200
    assert response.json()["history"] == [*HISTORY, 7, 8]
    assert (await api.get(f"/v1/sessions/{session_id}")).json()["history"] == [*HISTORY, 7, 8]


async def test_delete_removes_the_session_its_history_and_checkpoints(api, service_worker):
    session_id = (await api.post("/v1/sessions", json={"user_id": "u", "history": HISTORY})).json()["id"]
    run = await api.post(f"/v1/sessions/{session_id}/recommendations", json={"candidates": [1, 2, 3, 4]})
    assert run.status_code == 200, run.text
    config = {"configurable": {"thread_id": session_id}}
    assert await service_worker.runner.saver.aget_tuple(config) is not None

    deleted = await api.delete(f"/v1/sessions/{session_id}")
    assert deleted.status_code == 204
    assert (await api.get(f"/v1/sessions/{session_id}")).status_code == 404
    assert await service_worker.runner.saver.aget_tuple(config) is None
    assert (await api.delete(f"/v1/sessions/{session_id}")).status_code == 404


@pytest.mark.parametrize(
    ("body", "status", "field", "detail_part"),
    [
        ({"user_id": "u", "history": []}, 422, "history", "at least one item"),
        ({"user_id": "u", "history": [1, 99999]}, 422, "history[1]", "unknown item id 99999"),
        ({"user_id": "u", "history": [-1]}, 422, "history[0]", "unknown item id -1"),
        ({"user_id": "u", "history": [1] * 10_000}, 422, "history", "10000 items; at most 1000"),
        ({"user_id": "u", "history": ["x"]}, 422, "history[0]", "valid integer"),
        ({"history": [1]}, 422, "user_id", "Field required"),
    ],
)
async def test_bad_sessions_are_refused_and_nothing_is_stored(
    api, service_worker, body, status, field, detail_part
):
    before = await _count_sessions(service_worker)
    response = await api.post("/v1/sessions", json=body)
    assert response.status_code == status
    assert response.json()["field"] == field and detail_part in response.json()["detail"]
    assert await _count_sessions(service_worker) == before


async def test_malformed_json_is_a_422_naming_the_body(api):
    response = await api.post(
        "/v1/sessions",
        content=b'{"user_id": "u", "history": [1,',
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 422
    assert response.json()["field"] == "body" and "malformed JSON" in response.json()["detail"]


async def test_bad_consumption_leaves_the_history_unchanged(api):
    session_id = (await api.post("/v1/sessions", json={"user_id": "u", "history": HISTORY})).json()["id"]
    response = await api.post(f"/v1/sessions/{session_id}/consumed", json={"items": [3, 5000]})
    assert response.status_code == 422 and response.json()["field"] == "items[1]"
    assert (await api.get(f"/v1/sessions/{session_id}")).json()["history"] == HISTORY


async def test_unknown_session_id_is_404(api):
    response = await api.get(f"/v1/sessions/{uuid.uuid4()}")
    assert response.status_code == 404
