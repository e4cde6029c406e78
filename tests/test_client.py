"""The Python client (``import recloop``), sync and async, against a real server (uvicorn, PostgreSQL)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

import recloop
from app.services.keys import create_key

pytestmark = pytest.mark.integration

HISTORY = [49, 180, 257, 293, 0, 171]
CANDIDATES = [5, 10, 15, 20, 25, 30, 35, 40]


@pytest.fixture
async def key(service_worker) -> str:
    return (
        await create_key(service_worker.database.sessionmaker, owner=f"client-{uuid.uuid4().hex[:6]}")
    ).secret


async def test_the_async_client_runs_the_main_flow(served, key):
    async with recloop.AsyncClient(str(served.base_url), key) as client:
        session = await client.create_session("alice", HISTORY)
        assert session["history"] == HISTORY and session["status"] == "idle"
        answer = await client.recommend(session["id"], candidates=CANDIDATES, max_rounds=3)
        assert answer["status"] == "completed" and answer["item"]["id"] in CANDIDATES
        events = [e async for e in client.stream_recommend(session["id"], candidates=CANDIDATES)]
        assert [e.event for e in events][:4] == ["update"] * 4 and events[-1].event == "result"
        assert events[0].data["node"] == "recommend" and events[-1].data["loop_index"] == 2

        paused = await client.recommend(session["id"], candidates=CANDIDATES, judge_mode="human")
        assert paused["status"] == "awaiting_feedback" and paused["pending"]["item"] in CANDIDATES
        done = await client.feedback(session["id"], "accept", "looks right")
        assert done["status"] == "completed" and done["item"]["id"] == paused["pending"]["item"]

        consumed = await client.consumed(session["id"], [done["item"]["id"]])
        assert consumed["history"] == [*HISTORY, done["item"]["id"]]
        loops = await client.loops(session["id"])
        assert loops["count"] == 3 and [loop["loop_index"] for loop in loops["data"]] == [3, 2, 1]
        assert (await client.list_sessions(user_id="alice"))["count"] == 1
        assert (await client.usage())["total"]["calls"] == 0  # offline agents

        with pytest.raises(recloop.ApiError) as caught:
            await client.recommend(session["id"], max_rounds=99)
        assert caught.value.status == 422 and caught.value.field == "max_rounds"
        await client.delete_session(session["id"])
        with pytest.raises(recloop.ApiError) as caught:
            await client.get_session(session["id"])
        assert caught.value.status == 404


async def test_the_sync_client_streams_and_reports_errors(served, key):
    def flow() -> tuple[list[str], int]:
        with recloop.Client(str(served.base_url), key) as client:
            session = client.create_session("bob", HISTORY)
            events = [e.event for e in client.stream_recommend(session["id"], candidates=CANDIDATES)]
            try:
                client.feedback(session["id"], "accept", "nothing is waiting")
            except recloop.ApiError as exc:
                return events, exc.status
        return events, 0

    events, status = await asyncio.to_thread(flow)  # the server runs on this event loop
    assert events[0] == "update" and events[-1] == "result"
    assert status == 409
