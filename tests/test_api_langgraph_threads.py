"""LangGraph's thread calls through the official SDK against a real server on PostgreSQL: updating a
thread's metadata, sorting a search (in SQL, on an index), strict and bounded input, the calls
recloop does not serve, and no existence oracle across owners (issues 41 and 42)."""

from __future__ import annotations

import uuid

import httpx
import pytest
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError
from sqlalchemy import text
from sqlalchemy.dialects import postgresql

from app.api.protocol_unserved import UNSERVED
from app.db import sessions as sessions_repo
from app.db.sessions import SessionFilter
from app.services.keys import create_key

pytestmark = pytest.mark.integration

HISTORY = [49, 180, 257, 293, 0, 171]
CANDIDATES = [5, 10, 15, 20, 25, 30, 35, 40]


async def _thread(client, **metadata):
    return await client.threads.create(metadata={"user_id": "u1", "history": HISTORY, **metadata})


async def _refused(call, field: str) -> str:
    with pytest.raises(UnprocessableEntityError) as caught:
        await call
    body = caught.value.response.json()
    assert body["field"] == field, body
    return body["detail"]


async def test_threads_update_merges_metadata_and_keeps_the_sessions_own_keys(sdk):
    client, other = await sdk("update"), await sdk("update-other")
    thread = await _thread(client, title="first", tags=["a"])
    thread_id = thread["thread_id"]
    updated = await client.threads.update(thread_id, metadata={"title": "renamed", "pinned": True})
    assert updated["metadata"] == {
        "user_id": "u1",
        "history": HISTORY,
        "title": "renamed",
        "tags": ["a"],
        "pinned": True,
    }
    assert updated["updated_at"] > thread["updated_at"]
    assert (await client.threads.get(thread_id))["metadata"] == updated["metadata"]
    # The whole metadata sent back, as a UI editing it does: the session's own keys as they are.
    again = await client.threads.update(thread_id, metadata={**updated["metadata"], "title": "third"})
    assert again["metadata"]["title"] == "third" and again["metadata"]["history"] == HISTORY
    assert await client.threads.update(thread_id, metadata={"n": 1}, return_minimal=True) is None  # 204

    detail = await _refused(
        client.threads.update(thread_id, metadata={"history": [1, 2]}), "metadata.history"
    )
    assert "threads.create" in detail and "/v1" not in detail
    await _refused(client.threads.update(thread_id, metadata={"user_id": "mallory"}), "metadata.user_id")
    await _refused(client.threads.update(thread_id, metadata={"x": 1}, ttl=60), "ttl")
    await _refused(client.threads.update(thread_id, metadata={"big": "x" * 70_000}), "metadata")
    for metadata in ({"title": "stolen"}, {}):
        with pytest.raises(NotFoundError):  # another owner's thread, as a missing one
            await other.threads.update(thread_id, metadata=metadata)
    with pytest.raises(NotFoundError):
        await client.threads.update(str(uuid.uuid4()), metadata={"a": 1})
    assert (await client.threads.get(thread_id))["metadata"]["title"] == "third"


async def test_thread_metadata_is_capped_as_the_schema_says(sdk, service_settings):
    client = await sdk("metadata-cap")
    cap = service_settings.max_metadata_bytes
    detail = await _refused(
        client.threads.create(metadata={"history": HISTORY, "big": "x" * 900_000}), "metadata"
    )
    assert str(cap) in detail and "RECLOOP_MAX_METADATA_BYTES" in detail
    await _refused(client.threads.search(metadata={"big": "x" * (cap + 1)}), "metadata")
    fits = await client.threads.create(metadata={"history": HISTORY, "big": "x" * (cap - 200)})
    assert len(fits["metadata"]["big"]) == cap - 200


async def test_search_sorts_as_asked_and_refuses_unknown_orders(sdk):
    client = await sdk("sort")
    tag = uuid.uuid4().hex
    made = [await _thread(client, tag=tag, n=n) for n in range(3)]
    ids = [t["thread_id"] for t in made]
    await client.threads.update(ids[0], metadata={"touched": True})  # the oldest is the latest updated now
    paused = await client.runs.wait(ids[1], "recloop-human", input={"candidates": CANDIDATES})
    assert "__interrupt__" in paused

    async def order(**sort) -> list[str]:
        return [t["thread_id"] for t in await client.threads.search(metadata={"tag": tag}, **sort)]

    assert await order() == ids[::-1]  # newest first, as before
    assert await order(sort_by="created_at", sort_order="asc") == ids
    assert await order(sort_by="created_at", sort_order="desc") == ids[::-1]
    assert await order(sort_by="updated_at", sort_order="desc") == [ids[1], ids[0], ids[2]]
    assert await order(sort_by="state_updated_at", sort_order="asc") == [ids[2], ids[0], ids[1]]
    assert await order(sort_by="thread_id", sort_order="asc") == sorted(ids)
    assert await order(sort_by="thread_id", sort_order="desc") == sorted(ids, reverse=True)
    # status: the session's (awaiting_feedback < idle < running), then creation
    assert await order(sort_by="status", sort_order="asc") == [ids[1], ids[0], ids[2]]
    page = [
        t["thread_id"]
        for t in await client.threads.search(
            metadata={"tag": tag}, sort_by="created_at", sort_order="asc", limit=1, offset=2
        )
    ]
    assert page == [ids[2]]
    await _refused(client.threads.search(sort_by="bogus"), "sort_by")
    await _refused(client.threads.search(sort_by="created_at", sort_order="sideways"), "sort_order")
    selected = await client.threads.search(metadata={"tag": tag}, select=["thread_id", "status"], limit=1)
    assert set(selected[0]) == {"thread_id", "status"}


@pytest.fixture
async def owner_of_many_threads(service_worker):
    """An owner with 3,000 threads (statuses and update times mixed), the table analysed: the
    planner's choices are then the ones a real listing gets. Removed afterwards."""
    key = await create_key(service_worker.database.sessionmaker, owner=f"many-{uuid.uuid4().hex[:8]}")
    async with service_worker.database.sessionmaker.begin() as db:
        await db.execute(
            text(
                "INSERT INTO sessions (id, owner_key_id, user_id, dataset, thread_id, status, history, "
                "n_loops, created_at, updated_at, metadata) "
                "SELECT id, :owner, 'u', 'movielens', id::text, "
                "(ARRAY['idle', 'running', 'awaiting_feedback'])[1 + n % 3], '[1]'::jsonb, 0, "
                "now() - n * interval '1 second', "
                "now() - ((n * 7919) % 5000) * interval '1 second', jsonb_build_object('n', n) "
                "FROM (SELECT gen_random_uuid() AS id, n FROM generate_series(1, 3000) AS n) AS made"
            ),
            {"owner": key.key_id},
        )
        await db.execute(text("ANALYZE sessions"))
    yield key.key_id
    async with service_worker.database.sessionmaker.begin() as db:
        await db.execute(text("DELETE FROM sessions WHERE owner_key_id = :owner"), {"owner": key.key_id})


@pytest.mark.parametrize("sort_by", ["created_at", "updated_at", "status", "thread_id"])
@pytest.mark.parametrize("descending", [True, False])
async def test_every_sort_reads_one_index_in_order(
    service_worker, owner_of_many_threads, sort_by, descending
):
    """The query threads.search runs, as PostgreSQL plans it for an owner of 3,000 threads: an index
    scan in the asked order, no sort, with or without a status filter."""
    for where in (SessionFilter(), SessionFilter(statuses=("idle",))):
        stmt = sessions_repo._filtered(
            sessions_repo.select(sessions_repo.Session), owner_key_id=owner_of_many_threads, where=where
        )
        stmt = stmt.order_by(*sessions_repo.sort_order(sort_by, descending=descending)).limit(10).offset(20)
        sql = str(stmt.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))
        async with service_worker.database.sessionmaker() as db:
            plan = "\n".join(row[0] for row in await db.execute(text("EXPLAIN " + sql)))
        assert "Sort" not in plan, plan
        assert "Index Scan" in plan and "ix_sessions_owner_" in plan, plan


async def test_count_counts_every_match_and_refuses_an_offset(sdk, served):
    client = await sdk("count")
    tag = uuid.uuid4().hex
    for _ in range(3):
        await _thread(client, tag=tag)
    assert await client.threads.count(metadata={"tag": tag}) == 3
    assert await client.threads.count(metadata={"tag": tag}, status="busy") == 0
    headers = {"x-api-key": client.recloop_key}
    for path, body in (
        ("/threads/count", {"offset": 1}),
        ("/threads/count", {"limit": 2}),
        ("/assistants/count", {"offset": 1}),
    ):
        response = await served.post(path, json=body, headers=headers)
        assert response.status_code == 422 and response.json()["field"] in body, response.text
    assert (await served.post("/assistants/count", json={}, headers=headers)).json() == 2
    response = await served.post("/threads/search", json={"offset": 10**10}, headers=headers)
    assert response.status_code == 422 and response.json()["field"] == "offset"
    response = await served.get(
        f"/threads/{(await _thread(client))['thread_id']}/runs", params={"offset": 10**10}, headers=headers
    )
    assert response.status_code == 422 and response.json()["field"] == "offset"


async def test_history_and_state_refuse_malformed_checkpoints_in_langgraphs_terms(sdk, served):
    client = await sdk("strict-history")
    thread = await _thread(client)
    thread_id = thread["thread_id"]
    await client.runs.wait(thread_id, "recloop", input={"candidates": CANDIDATES, "max_rounds": 2})
    history = await client.threads.get_history(thread_id, limit=3)
    await _refused(client.threads.get_history(thread_id, before="garbage"), "before")
    await _refused(client.threads.get_history(thread_id, before={"checkpoint_ns": "sub"}), "before")
    with pytest.raises(NotFoundError) as caught:
        await client.threads.get_history(thread_id, before=str(uuid.uuid4()))
    assert caught.value.response.json()["field"] == "before"
    # the three ways clients name the checkpoint: its id, a checkpoint, a config (the JavaScript SDK)
    second = history[1]["checkpoint"]["checkpoint_id"]
    for before in (second, history[1]["checkpoint"], {"configurable": {"checkpoint_id": second}}):
        older = await client.threads.get_history(thread_id, limit=1, before=before)
        assert older[0]["checkpoint"] == history[2]["checkpoint"]
    at = await client.threads.get_history(thread_id, checkpoint={"checkpoint_id": second})
    assert [s["checkpoint"]["checkpoint_id"] for s in at] == [second]
    step = history[0]["metadata"]["step"]
    assert [
        s["metadata"]["step"] for s in await client.threads.get_history(thread_id, metadata={"step": step})
    ] == [step]
    headers = {"x-api-key": client.recloop_key}
    for path in (f"/threads/{thread_id}/state/not-a-checkpoint", f"/threads/{thread_id}/state/a%00b"):
        response = await served.get(path, headers=headers)
        assert response.status_code == 404 and response.json()["field"] == "checkpoint_id"
    response = await served.post(
        f"/threads/{thread_id}/state/checkpoint", json={"checkpoint": {"checkpoint_id": 5}}, headers=headers
    )
    assert response.status_code == 422 and response.json()["field"] == "checkpoint"


async def test_unserved_calls_say_so_and_where_the_docs_list_them(served, sdk):
    client = await sdk("unserved")
    thread_id = (await _thread(client))["thread_id"]
    headers = {"x-api-key": client.recloop_key}
    for method, pattern, call, _ in UNSERVED:
        path = pattern.replace("[^/]+", thread_id)
        response = await served.request(method, path, json={}, headers=headers)
        assert response.status_code in (404, 405), (method, path, response.status_code)
        detail = response.json()["detail"]
        assert f"recloop does not serve {call}" in detail and "docs/langgraph.md" in detail, detail
        if response.status_code == 405:
            assert response.headers["allow"]
    response = await served.get("/store/anything/else", headers=headers)
    assert (
        response.status_code == 404
        and "recloop does not serve GET /store/anything/else" in response.json()["detail"]
    )
    with pytest.raises(httpx.HTTPStatusError) as caught:  # the SDK's own call
        await client.threads.copy(thread_id)
    assert "threads.copy" in caught.value.response.json()["detail"]
    response = await served.get("/v1/nothing-here", headers=headers)
    assert response.json() == {"detail": "Not Found", "field": None}  # /v1's own 404 is unchanged
    assert (await client.assistants.get_subgraphs("recloop", namespace="any")) == {}


async def test_another_owners_thread_ids_are_told_from_random_ones_by_no_route(sdk, served):
    """B's answers about A's threads are B's answers about random ids (the id aside); creating one
    with A's id is the plain 409 that B's own taken id gets."""
    alice, bob = await sdk("oracle-a"), await sdk("oracle-b")
    theirs = (await _thread(alice, tag="a"))["thread_id"]
    await alice.runs.wait(theirs, "recloop-human", input={"candidates": CANDIDATES})  # paused, and busy-able
    own = (await _thread(bob))["thread_id"]
    headers = {"x-api-key": bob.recloop_key}

    def calls(thread_id: str) -> list[tuple[str, str, dict | None]]:
        run_id = str(uuid.UUID(int=uuid.UUID(thread_id).int ^ 1))
        return [
            ("GET", f"/threads/{thread_id}", None),
            ("PATCH", f"/threads/{thread_id}", {"metadata": {"a": 1}}),
            ("DELETE", f"/threads/{thread_id}", None),
            ("GET", f"/threads/{thread_id}/state", None),
            ("POST", f"/threads/{thread_id}/state/checkpoint", {"checkpoint": {}}),
            ("POST", f"/threads/{thread_id}/history", {}),
            ("POST", f"/threads/{thread_id}/runs", {"assistant_id": "recloop", "input": {}}),
            (
                "POST",
                f"/threads/{thread_id}/runs/wait",
                {"assistant_id": "recloop-human", "command": {"resume": {"decision": "accept"}}},
            ),
            ("GET", f"/threads/{thread_id}/runs", None),
            ("GET", f"/threads/{thread_id}/runs/{run_id}", None),
            ("GET", f"/threads/{thread_id}/runs/{run_id}/join", None),
            ("POST", f"/threads/{thread_id}/runs/{run_id}/cancel", None),
            ("GET", f"/threads/{thread_id}/runs/{run_id}/stream", None),
            ("GET", f"/v1/sessions/{thread_id}", None),
            ("GET", f"/v1/sessions/{thread_id}/loops", None),
            ("POST", f"/v1/sessions/{thread_id}/loops/1/cancel", None),
            ("POST", f"/v1/sessions/{thread_id}/feedback", {"decision": "accept", "reason": "r"}),
            ("POST", f"/v1/sessions/{thread_id}/recommendations", {}),
            ("POST", f"/v1/sessions/{thread_id}/consumed", {"items": [1]}),
            ("POST", f"/v1/sessions/{thread_id}/commands", {"text": "no horror"}),
            ("GET", f"/v1/sessions/{thread_id}/commands", None),
            ("GET", f"/v1/sessions/{thread_id}/preferences", None),
            ("DELETE", f"/v1/sessions/{thread_id}/preferences", None),
            ("GET", f"/v1/sessions/{thread_id}/checkpoints", None),
            ("GET", f"/v1/sessions/{thread_id}/loops/1/candidates", None),
            ("DELETE", f"/v1/sessions/{thread_id}", None),
        ]

    async def answers(thread_id: str) -> list[tuple[int, str]]:
        out = []
        for method, path, body in calls(thread_id):
            response = await served.request(method, path, json=body, headers=headers)
            out.append((response.status_code, response.text.replace(thread_id, "ID")))
        return out

    of_alice = await answers(theirs)
    assert of_alice == await answers(str(uuid.uuid4()))
    assert {status for status, _ in of_alice} == {404}
    # creating: A's id answers as B's own taken id does, with either if_exists
    taken_by_alice = await served.post(
        "/threads", json={"thread_id": theirs, "metadata": {"history": HISTORY}}, headers=headers
    )
    taken_by_bob = await served.post(
        "/threads", json={"thread_id": own, "metadata": {"history": HISTORY}}, headers=headers
    )
    assert taken_by_alice.status_code == taken_by_bob.status_code == 409
    assert taken_by_alice.json()["detail"].replace(theirs, "ID") == taken_by_bob.json()["detail"].replace(
        own, "ID"
    )
    assert (
        taken_by_alice.json()["detail"].replace(theirs, "ID")
        == "thread_id: ID is taken; give another id, or none for a new one"
    )
    kept = await served.post(
        "/threads",
        json={"thread_id": theirs, "metadata": {"history": HISTORY}, "if_exists": "do_nothing"},
        headers=headers,
    )
    assert kept.status_code == 409 and kept.json() == taken_by_alice.json()
    found = await bob.threads.search(ids=[theirs, own])
    assert [t["thread_id"] for t in found] == [own]
    assert (await alice.threads.get(theirs))["status"] == "interrupted"  # nothing of B's touched it
