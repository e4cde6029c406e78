"""A client that leaves an event stream early does not cut its loop short (real HTTP, uvicorn)."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from graph.agents.offline import OfflineRecAgent, OfflineUserAgent

pytestmark = pytest.mark.integration


async def test_a_client_leaving_the_stream_leaves_a_complete_loop_and_no_gap(served, monkeypatch):
    judged = OfflineUserAgent.judge

    async def slow_judge(self, ctx):  # a user agent that takes its time (blocking, as before)
        time.sleep(0.3)
        return await judged(self, ctx)

    monkeypatch.setattr(OfflineUserAgent, "judge", slow_judge)
    created = await served.post("/v1/sessions", json={"user_id": "leaver", "history": [49, 180, 257, 293]})
    session_id = created.json()["id"]
    url = f"/v1/sessions/{session_id}"

    async with served.stream(
        "POST",
        f"{url}/recommendations",
        json={"candidates": [5, 10, 15, 20, 25, 30], "max_rounds": 3},
        headers={"Accept": "text/event-stream"},
    ) as stream:
        assert stream.status_code == 200
        async for line in stream.aiter_lines():
            if line.startswith("data:"):
                break  # the first node update arrived: the client goes away mid-loop

    deadline = time.monotonic() + 20
    while not (loops := (await served.get(f"{url}/loops")).json()["data"]) or loops[0]["status"] == "running":
        assert time.monotonic() < deadline, loops
        await asyncio.sleep(0.1)
    assert [loop["loop_index"] for loop in loops] == [1]
    assert loops[0]["status"] == "completed" and loops[0]["rounds"]

    body = {"candidates": [5, 10, 15], "max_rounds": 1}
    # The lock is freed right after the history is written: a 409 can still answer for a moment.
    while (again := await served.post(f"{url}/recommendations", json=body)).status_code == 409:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)
    assert again.status_code == 200 and again.json()["loop_index"] == 2


async def test_a_client_leaving_before_the_first_event_frees_the_session(served, monkeypatch):
    """The client sends its request and hangs up at once, before any byte of the answer."""
    proposed = OfflineRecAgent.propose

    async def slow_propose(self, ctx):  # the first event comes after the first node: after the hang-up
        time.sleep(0.3)
        return await proposed(self, ctx)

    monkeypatch.setattr(OfflineRecAgent, "propose", slow_propose)
    created = await served.post("/v1/sessions", json={"user_id": "leaver", "history": [49, 180, 257, 293]})
    session_id = created.json()["id"]
    url = f"/v1/sessions/{session_id}"
    body = json.dumps({"candidates": [5, 10, 15, 20, 25, 30], "max_rounds": 2}).encode()
    host, port = served.base_url.host, served.base_url.port
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(
        (
            f"POST {url}/recommendations HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Authorization: {served.headers['Authorization']}\r\nAccept: text/event-stream\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        + body
    )
    await writer.drain()
    writer.close()  # gone before the first event (before the response even starts)
    await writer.wait_closed()

    # The loop still runs to its end and is recorded, and then the session is free again.
    deadline = time.monotonic() + 20
    while not (loops := (await served.get(f"{url}/loops")).json()["data"]) or loops[0]["status"] == "running":
        assert time.monotonic() < deadline, loops
        await asyncio.sleep(0.1)
    assert [(loop["loop_index"], loop["status"]) for loop in loops] == [(1, "completed")]
    monkeypatch.setattr(OfflineRecAgent, "propose", proposed)
    while (again := await served.post(f"{url}/recommendations", json={"max_rounds": 1})).status_code == 409:
        assert time.monotonic() < deadline, "the session's lock is still held"
        await asyncio.sleep(0.1)
    assert again.status_code == 200 and again.json()["loop_index"] == 2
