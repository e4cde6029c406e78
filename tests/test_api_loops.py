"""The loop over HTTP: JSON and SSE recommendations, human judge, 409 on busy sessions, bad input."""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest
from sqlalchemy import func, select

from app.db.models import Loop, Round
from graph.agents.base import RecAgent
from tests.api_client import authed_client

pytestmark = pytest.mark.integration

HISTORY = [49, 180, 257, 293, 0, 171]


async def _new_session(api, history=HISTORY) -> str:
    response = await api.post("/v1/sessions", json={"user_id": "u", "history": history})
    assert response.status_code == 201, response.text
    return response.json()["id"]


async def _db_counts(worker) -> tuple[int, int]:
    async with worker.database.sessionmaker() as db:
        loops = (await db.execute(select(func.count()).select_from(Loop))).scalar_one()
        rounds = (await db.execute(select(func.count()).select_from(Round))).scalar_one()
    return int(loops), int(rounds)


async def test_recommendation_with_default_candidates_returns_item_reason_and_rounds(api, service_loop_deps):
    session_id = await _new_session(api)
    response = await api.post(f"/v1/sessions/{session_id}/recommendations", json={})
    assert response.status_code == 200, response.text
    body = response.json()

    default = service_loop_deps["offline"].rec_scorer.top_k(HISTORY, 20)
    assert body["status"] == "completed" and body["loop_index"] == 1
    assert body["item"]["id"] in default and body["item"]["title"]
    assert body["reason"] and body["stop_reason"] in ("accepted", "max_rounds")
    assert 1 <= len(body["rounds"]) <= 4
    assert [r["round"] for r in body["rounds"]] == list(range(1, len(body["rounds"]) + 1))
    assert all(r["item"] in default for r in body["rounds"])
    assert body["rounds"][-1]["item"] == body["item"]["id"]
    if body["stop_reason"] == "accepted":
        assert body["rounds"][-1]["decision"] == "accept"
    else:
        assert len(body["rounds"]) == 4 and all(r["decision"] == "reject" for r in body["rounds"])

    history = (await api.get(f"/v1/sessions/{session_id}/loops")).json()
    assert history["count"] == 1
    stored = history["data"][0]
    assert stored["status"] == "completed" and stored["final_item"] == body["item"]["id"]
    assert stored["params"]["candidates"] == default and stored["params"]["max_rounds"] == 4
    assert stored["rounds"] == body["rounds"]
    assert (await api.get(f"/v1/sessions/{session_id}")).json()["n_loops"] == 1


async def test_explicit_candidates_and_round_limit_bound_the_loop(api):
    session_id = await _new_session(api)
    candidates = [5, 10, 15, 20, 25, 30]
    body = (
        await api.post(
            f"/v1/sessions/{session_id}/recommendations", json={"candidates": candidates, "max_rounds": 2}
        )
    ).json()
    assert body["item"]["id"] in candidates
    assert 1 <= len(body["rounds"]) <= 2 and all(r["item"] in candidates for r in body["rounds"])


async def test_memory_and_history_accumulate_over_loops_and_paginate(api):
    session_id = await _new_session(api)
    total_rejections = 0
    for _ in range(3):
        body = (await api.post(f"/v1/sessions/{session_id}/recommendations", json={"max_rounds": 3})).json()
        total_rejections += sum(r["decision"] == "reject" for r in body["rounds"])

    state = (await api.get(f"/v1/sessions/{session_id}")).json()
    assert state["n_loops"] == 3
    assert len(state["rec_memory"]) == len(state["user_memory"]) == total_rejections

    first_page = (await api.get(f"/v1/sessions/{session_id}/loops", params={"limit": 2})).json()
    assert first_page["count"] == 3 and [loop["loop_index"] for loop in first_page["data"]] == [3, 2]
    last_page = (await api.get(f"/v1/sessions/{session_id}/loops", params={"limit": 2, "offset": 2})).json()
    assert [loop["loop_index"] for loop in last_page["data"]] == [1]


def _parse_sse(text: str) -> list[tuple[str, dict]]:
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line and line[0] != ":")
        if "data" in fields:
            events.append((fields.get("event", "message"), json.loads(fields["data"])))
    return events


async def test_event_stream_sends_each_node_update_then_the_result(api):
    session_id = await _new_session(api)
    response = await api.post(
        f"/v1/sessions/{session_id}/recommendations",
        json={"candidates": [5, 10, 15, 20, 25, 30], "max_rounds": 3},
        headers={"Accept": "text/event-stream"},
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events = _parse_sse(response.text)

    kinds = [kind for kind, _ in events]
    assert kinds[-1] == "result" and set(kinds[:-1]) == {"update"}
    nodes = [data["node"] for _, data in events[:-1]]
    result = events[-1][1]
    n_rounds = len(result["rounds"])
    assert nodes == ["recommend", "score", "judge", "memory_update"] * n_rounds
    memory_updates = [data["update"] for _, data in events[:-1] if data["node"] == "memory_update"]
    assert [u["rounds"][0]["item"] for u in memory_updates] == [r["item"] for r in result["rounds"]]
    stored = (await api.get(f"/v1/sessions/{session_id}/loops")).json()["data"][0]
    assert stored["rounds"] == result["rounds"] and stored["final_item"] == result["item"]["id"]


async def test_human_judge_pauses_and_feedback_resumes_the_loop(api):
    session_id = await _new_session(api)
    url = f"/v1/sessions/{session_id}"
    first = await api.post(
        f"{url}/recommendations", json={"candidates": [5, 10, 15, 20], "judge_mode": "human", "max_rounds": 3}
    )
    assert first.status_code == 200, first.text
    paused = first.json()
    assert paused["status"] == "awaiting_feedback" and paused["item"] is None and paused["rounds"] == []
    proposal = paused["pending"]
    assert proposal["round"] == 1 and proposal["item"] in [5, 10, 15, 20] and proposal["rec_reason"]

    state = (await api.get(url)).json()
    assert state["status"] == "awaiting_feedback" and state["pending"]["item"] == proposal["item"]
    busy = await api.post(f"{url}/recommendations", json={})
    assert busy.status_code == 409 and "feedback" in busy.json()["detail"]
    assert (await api.post(f"{url}/consumed", json={"items": [1]})).status_code == 409

    rejected = (await api.post(f"{url}/feedback", json={"decision": "reject", "reason": "Too dark."})).json()
    assert rejected["status"] == "awaiting_feedback" and rejected["pending"]["round"] == 2
    assert [(r["item"], r["decision"], r["user_reason"]) for r in rejected["rounds"]] == [
        (proposal["item"], "reject", "Too dark.")
    ]

    second = rejected["pending"]["item"]
    accepted = (await api.post(f"{url}/feedback", json={"decision": "accept", "reason": "Yes!"})).json()
    assert accepted["status"] == "completed" and accepted["stop_reason"] == "accepted"
    assert accepted["item"]["id"] == second
    assert [r["decision"] for r in accepted["rounds"]] == ["reject", "accept"]

    stored = (await api.get(f"{url}/loops")).json()
    assert stored["count"] == 1 and [r["user_reason"] for r in stored["data"][0]["rounds"]] == [
        "Too dark.",
        "Yes!",
    ]
    assert (await api.get(url)).json()["status"] == "idle"
    again = await api.post(f"{url}/feedback", json={"decision": "accept", "reason": "again"})
    assert again.status_code == 409 and again.json()["field"] == "session_id"


async def test_blank_feedback_reason_is_refused_and_the_loop_keeps_waiting(api):
    session_id = await _new_session(api)
    url = f"/v1/sessions/{session_id}"
    await api.post(f"{url}/recommendations", json={"candidates": [5, 10, 15], "judge_mode": "human"})
    response = await api.post(f"{url}/feedback", json={"decision": "accept", "reason": "   "})
    assert response.status_code == 422 and response.json()["field"] == "reason"
    wrong = await api.post(f"{url}/feedback", json={"decision": "maybe", "reason": "x"})
    assert wrong.status_code == 422 and wrong.json()["field"] == "decision"
    assert (await api.get(url)).json()["status"] == "awaiting_feedback"


class _SlowRecAgent(RecAgent):
    """Wraps the real offline agent and holds each proposal long enough for requests to collide."""

    def __init__(self, inner: RecAgent, delay_s: float):
        self.inner, self.delay_s, self.use_prior = inner, delay_s, inner.use_prior

    async def propose(self, ctx):
        await asyncio.sleep(self.delay_s)
        return await self.inner.propose(ctx)


@pytest.fixture
async def slow_api(service_settings, service_db_url, ml_dataset, service_loop_deps):

    from app.services.runtime import open_worker

    offline = service_loop_deps["offline"]
    slow = {"offline": dataclasses.replace(offline, rec_agent=_SlowRecAgent(offline.rec_agent, 0.2))}
    async with (
        open_worker(
            service_settings, database_url=service_db_url, catalog=ml_dataset, loop_deps=slow
        ) as worker,
        await authed_client(service_settings, worker, "slow") as client,
    ):
        yield client, worker


async def test_twenty_simultaneous_requests_on_one_session_run_exactly_one_loop(slow_api):
    api, worker = slow_api
    session_id = await _new_session(api)
    url = f"/v1/sessions/{session_id}/recommendations"
    responses = await asyncio.gather(
        *(api.post(url, json={"candidates": [5, 10, 15, 20, 25], "max_rounds": 2}) for _ in range(20))
    )
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] + [409] * 19
    refused = next(r for r in responses if r.status_code == 409).json()
    assert "another recommendation" in refused["detail"]

    winner = next(r for r in responses if r.status_code == 200).json()
    history = (await api.get(f"/v1/sessions/{session_id}/loops")).json()
    assert history["count"] == 1
    assert [r["round"] for r in history["data"][0]["rounds"]] == list(range(1, len(winner["rounds"]) + 1))
    state = (await api.get(f"/v1/sessions/{session_id}")).json()
    assert state["n_loops"] == 1 and state["status"] == "idle"


@pytest.mark.parametrize(
    ("body", "field", "detail_part"),
    [
        ({"candidates": [5, 10, 5]}, "candidates[2]", "duplicate candidate 5"),
        ({"candidates": [5, 1682]}, "candidates[1]", "unknown item id 1682"),
        ({"candidates": [5]}, "candidates", "at least 2"),
        ({"max_rounds": 0}, "max_rounds", "greater than or equal to 1"),
        ({"max_rounds": 21}, "max_rounds", "less than or equal to 20"),
        ({"judge_mode": "robot"}, "judge_mode", "'agent' or 'human'"),
        ({"agents": "llm"}, "agents", "RECLOOP_LLM_BASE_URL"),
        ({"surprise": 1}, "surprise", "Extra inputs"),
    ],
)
async def test_bad_recommendation_requests_leave_the_session_unchanged(
    api, service_worker, body, field, detail_part
):
    session_id = await _new_session(api)
    before = await _db_counts(service_worker)
    response = await api.post(f"/v1/sessions/{session_id}/recommendations", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field and detail_part in response.json()["detail"]
    assert await _db_counts(service_worker) == before
    config = {"configurable": {"thread_id": session_id}}
    assert await service_worker.runner.saver.aget_tuple(config) is None
    assert (await api.get(f"/v1/sessions/{session_id}")).json()["n_loops"] == 0


async def test_malformed_json_for_a_recommendation_is_refused(api):
    session_id = await _new_session(api)
    response = await api.post(
        f"/v1/sessions/{session_id}/recommendations",
        content=b"{max_rounds: 2}",
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 422 and response.json()["field"] == "body"


async def test_two_workers_on_one_database_share_sessions_but_never_run_one_twice(
    slow_api, service_settings, service_db_url, ml_dataset, service_loop_deps
):
    """Two app instances with their own pools and savers, as two uvicorn workers would have."""
    import httpx

    from app.main import create_app
    from app.services.runtime import open_worker

    worker_a, _ = slow_api
    session_id = await _new_session(worker_a)
    url = f"/v1/sessions/{session_id}/recommendations"
    body = {"candidates": [5, 10, 15, 20, 25], "max_rounds": 2}
    async with open_worker(
        service_settings, database_url=service_db_url, catalog=ml_dataset, loop_deps=service_loop_deps
    ) as worker_b:
        transport = httpx.ASGITransport(app=create_app(service_settings, worker=worker_b))
        async with httpx.AsyncClient(
            transport=transport, base_url="http://t", headers=dict(worker_a.headers)
        ) as worker_b:
            running = asyncio.create_task(worker_a.post(url, json=body))
            await asyncio.sleep(0.1)  # worker A holds the session's lock now (its agent is slow)
            refused = await worker_b.post(url, json=body)
            assert refused.status_code == 409
            assert (await running).status_code == 200

            second = await worker_b.post(url, json=body)
            assert second.status_code == 200 and second.json()["loop_index"] == 2
            state = (await worker_a.get(f"/v1/sessions/{session_id}")).json()
            assert state["n_loops"] == 2
