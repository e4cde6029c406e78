"""LangGraph's run calls as its clients make them, against a real server on PostgreSQL: the whole
Command RemoteGraph sends, RemoteGraph with the human judge (alone and inside a graph of the
caller's), cancelling a paused run (and /v1's abandoning of a paused loop), strict run input, and
messages in the protocol's own words (issue 41)."""

from __future__ import annotations

import asyncio
import operator
import uuid
from typing import Annotated, TypedDict

import httpx
import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.pregel.remote import RemoteGraph
from langgraph.types import Command, interrupt
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError

pytestmark = pytest.mark.integration

HISTORY = [49, 180, 257, 293, 0, 171]
CANDIDATES = [5, 10, 15, 20, 25, 30, 35, 40]
ACCEPT = {"decision": "accept", "reason": "a classic"}


async def _thread(client, **metadata):
    return await client.threads.create(metadata={"user_id": "u1", "history": HISTORY, **metadata})


async def _refused(call, field: str) -> str:
    with pytest.raises((UnprocessableEntityError, httpx.HTTPStatusError)) as caught:
        await call
    assert caught.value.response.status_code == 422, caught.value.response.text
    body = caught.value.response.json()
    assert body["field"] == field, body
    return body["detail"]


async def test_the_whole_command_remotegraph_sends_resumes_and_what_it_cannot_ask_is_refused(sdk, served):
    client = await sdk("command")
    thread_id = (await _thread(client))["thread_id"]
    paused = await client.runs.wait(thread_id, "recloop-human", input={"candidates": CANDIDATES})
    item = paused["__interrupt__"][0]["value"]["item"]
    headers = {"x-api-key": client.recloop_key}

    async def wait(command: dict) -> httpx.Response:
        body = {"assistant_id": "recloop-human", "command": command}
        return await served.post(f"/threads/{thread_id}/runs/wait", json=body, headers=headers)

    for command, field in (
        ({"resume": ACCEPT, "update": {"rounds": []}}, "command.update"),
        ({"resume": ACCEPT, "goto": "judge"}, "command.goto"),
        ({"resume": ACCEPT, "goto": ["recommend"]}, "command.goto"),
        ({"resume": ACCEPT, "graph": "__parent__"}, "command.graph"),
        ({"resume": ACCEPT, "spin": 1}, "command.spin"),
        ({}, "command.resume"),
        ({"resume": None}, "command.resume"),
        ({"resume": {"decision": "maybe"}}, "command.resume"),
        ({"resume": {"decision": "reject", "reason": "x" * 2001}}, "command.resume.reason"),
    ):
        response = await wait(command)
        assert response.status_code == 422 and response.json()["field"] == field, (command, response.text)
    # RemoteGraph's own serialisation of Command(resume=...): every field, the unused ones empty.
    done = await wait({"graph": None, "update": None, "resume": ACCEPT, "goto": []})
    assert done.status_code == 200, done.text
    assert done.json()["final_item"] == item and done.json()["stop_reason"] == "accepted"
    again = await wait({"resume": ACCEPT, "update": {}, "goto": "", "graph": None})
    assert again.status_code == 409 and again.json()["field"] == "command.resume"
    assert (
        "no run waiting at an interrupt" in again.json()["detail"]
        and "feedback" not in again.json()["detail"]
    )


async def test_remotegraph_interrupts_and_resumes_the_human_judge(served, service_worker):
    from app.services.keys import create_key

    key = (await create_key(service_worker.database.sessionmaker, owner="remote")).secret
    url = str(served.base_url)
    remote = RemoteGraph("recloop-human", url=url, api_key=key)
    thread = await remote.client.threads.create(metadata={"history": HISTORY})
    config = {"configurable": {"thread_id": thread["thread_id"]}}
    paused = await remote.ainvoke({"candidates": CANDIDATES}, config)
    proposal = paused["__interrupt__"][0]["value"]
    state = await remote.aget_state(config)
    assert state.next == ("judge",) and state.interrupts[0].value == proposal
    done = await remote.ainvoke(Command(resume=ACCEPT), config)
    assert done["final_item"] == proposal["item"] and done["stop_reason"] == "accepted"
    # the sync client, in a thread (the server runs on this event loop)
    again = await asyncio.to_thread(remote.invoke, {"candidates": CANDIDATES}, config)
    reject = {"decision": "reject", "reason": "seen it"}
    second = await asyncio.to_thread(remote.invoke, Command(resume=reject), config)
    assert second["__interrupt__"][0]["value"]["round"] == 2  # the loop goes on and asks again
    assert again["__interrupt__"][0]["value"]["round"] == 1
    final = await asyncio.to_thread(remote.invoke, Command(resume=ACCEPT), config)
    assert final["stop_reason"] == "accepted" and len(final["rounds"]) == 2


class Caller(TypedDict, total=False):
    thread_id: str
    candidates: list[int]
    item: int
    asked: Annotated[list[int], operator.add]


async def test_remotegraph_as_a_node_of_the_callers_graph_pauses_it_and_is_resumed_through_it(
    served, service_worker
):
    """The caller's graph asks recloop, which pauses for a person; the caller's graph pauses with
    recloop's proposal, and resuming it passes the person's judgement on to recloop's run."""
    from app.services.keys import create_key

    key = (await create_key(service_worker.database.sessionmaker, owner="remote-node")).secret
    remote = RemoteGraph("recloop-human", url=str(served.base_url), api_key=key)

    async def recommend_with_recloop(state: Caller) -> Caller:
        # Runs again from the top when the caller resumes: what recloop already did is read, not redone.
        config = {"configurable": {"thread_id": state["thread_id"]}}
        waiting = (await remote.aget_state(config)).interrupts
        if not waiting:  # no loop waits: start one; recloop-human pauses it at its judge
            await remote.ainvoke({"candidates": CANDIDATES}, config)
            waiting = (await remote.aget_state(config)).interrupts
        answer = interrupt(waiting[0].value)  # the caller's graph pauses here with recloop's proposal
        done = await remote.ainvoke(Command(resume=answer), config)
        return {"item": done["final_item"], "asked": [waiting[0].value["item"]]}

    builder = StateGraph(Caller)
    builder.add_node("recommend_with_recloop", recommend_with_recloop)
    builder.add_edge(START, "recommend_with_recloop")
    caller = builder.compile(checkpointer=InMemorySaver())

    thread = await remote.client.threads.create(metadata={"history": HISTORY})
    own = {"configurable": {"thread_id": "caller-1"}}
    paused = await caller.ainvoke({"thread_id": thread["thread_id"]}, own)
    [asked] = paused["__interrupt__"]
    assert asked.value["item"] in CANDIDATES
    assert (await remote.client.threads.get(thread["thread_id"]))["status"] == "interrupted"
    done = await caller.ainvoke(Command(resume=ACCEPT), own)
    assert done["item"] == asked.value["item"] and done["asked"] == [asked.value["item"]]
    runs = await remote.client.runs.list(thread["thread_id"])
    assert [(r["metadata"]["loop_index"], r["status"]) for r in runs] == [(1, "success")]

    # RemoteGraph added as the node itself: recloop's interrupt pauses the caller's graph as well.
    direct = StateGraph(Caller)
    direct.add_node("recloop", remote)
    direct.add_edge(START, "recloop")
    graph = direct.compile(checkpointer=InMemorySaver())
    other = await remote.client.threads.create(metadata={"history": HISTORY})
    config = {"configurable": {"thread_id": other["thread_id"]}}
    paused = await graph.ainvoke({"candidates": CANDIDATES}, config)
    assert paused["__interrupt__"][0].value["item"] in CANDIDATES


async def test_cancelling_a_paused_run_ends_it_and_frees_the_thread(sdk, served):
    client = await sdk("cancel-paused")
    thread_id = (await _thread(client))["thread_id"]
    paused = await client.runs.wait(thread_id, "recloop-human", input={"candidates": CANDIDATES})
    assert paused["__interrupt__"][0]["value"]["round"] == 1
    [run] = await client.runs.list(thread_id)
    assert run["status"] == "success"  # it ran to its interrupt, as on LangGraph's server
    assert (await client.threads.get(thread_id))["status"] == "interrupted"

    await client.runs.cancel(thread_id, run["run_id"])
    cancelled = await client.runs.get(thread_id, run["run_id"])
    assert cancelled["status"] == "interrupted"
    assert cancelled["metadata"]["error"].startswith("cancelled: the client abandoned the loop")
    thread = await client.threads.get(thread_id)
    assert thread["status"] == "idle" and thread["interrupts"] == {}
    state = await client.threads.get_state(thread_id)
    assert state["next"] == [] and state["interrupts"] == [] and state["tasks"] == []
    # The thread takes the next run, and its history says what happened.
    values = await client.runs.wait(thread_id, "recloop", input={"candidates": CANDIDATES})
    assert values["final_item"] in CANDIDATES and values["loop_index"] == 2
    runs = await client.runs.list(thread_id)
    assert [(r["metadata"]["loop_index"], r["status"]) for r in runs] == [(2, "success"), (1, "interrupted")]
    assert [r["metadata"]["loop_index"] for r in await client.runs.list(thread_id, status="interrupted")] == [
        1
    ]
    assert [r["metadata"]["loop_index"] for r in await client.runs.list(thread_id, status="success")] == [2]
    assert await client.runs.list(thread_id, status="error") == []
    with pytest.raises(ConflictError) as caught:  # it has ended
        await client.runs.cancel(thread_id, run["run_id"])
    assert "has ended (interrupted)" in caught.value.response.json()["detail"]
    v1 = await served.get(f"/v1/sessions/{thread_id}/loops", headers={"x-api-key": client.recloop_key})
    assert [(loop["loop_index"], loop["status"], loop["cancelled"]) for loop in v1.json()["data"]] == [
        (2, "completed", False),
        (1, "failed", True),
    ]


async def test_a_cancel_racing_a_runs_start_never_leaves_an_interrupt_pending(sdk):
    client = await sdk("cancel-race")
    thread_id = (await _thread(client))["thread_id"]
    for attempt in range(12):
        run = await client.runs.create(thread_id, "recloop-human", input={"candidates": CANDIDATES})
        if attempt % 3:
            await asyncio.sleep(0.02 * (attempt % 3))  # before, at and after it reaches its judge
        await client.runs.cancel(thread_id, run["run_id"], wait=bool(attempt % 2))
        assert (await client.runs.get(thread_id, run["run_id"]))["status"] == "interrupted"
        thread = await client.threads.get(thread_id)
        assert thread["status"] == "idle" and thread["interrupts"] == {}, (attempt, thread)
        assert (await client.threads.get_state(thread_id))["interrupts"] == []
    runs = await client.runs.list(thread_id, limit=20)
    assert len(runs) == 12 and {r["status"] for r in runs} == {"interrupted"}


async def test_cancel_refuses_rollback_and_unknown_actions(sdk, served, held_rec_agent):
    client = await sdk("cancel-actions")
    thread_id = (await _thread(client))["thread_id"]
    run = await client.runs.create(thread_id, "recloop", input={"candidates": CANDIDATES})
    headers = {"x-api-key": client.recloop_key}
    for action in ("rollback", "bogus"):
        response = await served.post(
            f"/threads/{thread_id}/runs/{run['run_id']}/cancel", params={"action": action}, headers=headers
        )
        assert response.status_code == 422 and response.json()["field"] == "action"
        assert repr(action) in response.json()["detail"]
    # busy: the second run is refused in the protocol's words
    with pytest.raises(ConflictError) as caught:
        await client.runs.create(thread_id, "recloop", input={})
    detail = caught.value.response.json()["detail"]
    assert f"thread {thread_id} is busy" in detail and "session" not in detail
    response = await served.post(  # the JavaScript SDK sends a reason; the Python one 0.4.14 cannot
        f"/threads/{thread_id}/runs/{run['run_id']}/cancel",
        params={"reason": "changed my mind"},
        headers=headers,
    )
    assert response.status_code == 202
    cancelled = await client.runs.get(thread_id, run["run_id"])
    assert cancelled["status"] == "interrupted" and cancelled["metadata"]["error"].endswith(
        "(changed my mind)"
    )
    v1 = await served.get(f"/v1/sessions/{thread_id}/loops", headers=headers)
    assert [(loop["status"], loop["cancelled"]) for loop in v1.json()["data"]] == [("failed", True)]


async def test_protocol_messages_name_threads_and_protocol_calls(sdk, served):
    client = await sdk("wording")
    thread_id = (await _thread(client))["thread_id"]
    missing = str(uuid.uuid4())
    with pytest.raises(NotFoundError) as caught:
        await client.runs.create(missing, "recloop", input={})
    assert caught.value.response.json() == {"detail": f"no thread {missing}", "field": "thread_id"}
    await client.runs.wait(thread_id, "recloop-human", input={"candidates": CANDIDATES})
    with pytest.raises(ConflictError) as caught:
        await client.runs.create(thread_id, "recloop", input={})
    body = caught.value.response.json()
    assert body["field"] == "thread_id" and "command=" in body["detail"] and "runs.cancel" in body["detail"]
    assert "/feedback" not in body["detail"] and "session" not in body["detail"]
    detail = await _refused(client.runs.create(thread_id, "recloop", input={"history": [1]}), "input.history")
    assert "/v1" not in detail
    for resume in (
        {"decision": "accept", "reason": 5},
        {"decision": "accept"},
        {"decision": "reject", "reason": " "},
    ):
        await _refused(
            client.runs.wait(thread_id, "recloop-human", command={"resume": resume}), "command.resume.reason"
        )
    assert (await client.threads.get(thread_id))["status"] == "interrupted"  # still waiting for a judgement


async def test_run_bodies_are_typed_as_langgraph_types_them(sdk, served):
    client = await sdk("strict-runs")
    thread_id = (await _thread(client))["thread_id"]
    headers = {"x-api-key": client.recloop_key}
    for body, field in (
        ({"config": {"recursion_limit": "x"}}, "config.recursion_limit"),
        ({"config": {"recursion_limit": True}}, "config.recursion_limit"),
        ({"config": {"tags": "a"}}, "config.tags"),
        ({"config": {"configurable": {"thread_id": str(uuid.uuid4())}}}, "config.configurable.thread_id"),
        (
            {"config": {"configurable": {"checkpoint_id": str(uuid.uuid4())}}},
            "config.configurable.checkpoint_id",
        ),
        ({"stream_mode": "bogus"}, "stream_mode"),
        ({"stream_mode": ["values", 5]}, "stream_mode"),
        ({"stream_mode": {"values": 1}}, "stream_mode"),
        ({"context": {"agents": "llm"}}, "context"),
        ({"metadata": {"mine": 1}}, "metadata"),
        ({"input": [1, 2]}, "input"),
        ({"interrupt_before": ["judge"]}, "interrupt_before"),
        ({"checkpoint_id": str(uuid.uuid4())}, "checkpoint_id"),
        ({"durability": "sometimes"}, "durability"),
        ({"stream_subgraphs": "yes"}, "stream_subgraphs"),
        ({"after_seconds": 5}, "after_seconds"),
    ):
        for route in ("", "/wait", "/stream"):
            response = await served.post(
                f"/threads/{thread_id}/runs{route}", json={"assistant_id": "recloop", **body}, headers=headers
            )
            assert response.status_code == 422, (body, route, response.text)
            assert response.json()["field"] == field, (body, response.json())
    detail = (
        await served.post(
            f"/threads/{thread_id}/runs/stream",
            json={"assistant_id": "recloop", "stream_mode": "bogus"},
            headers=headers,
        )
    ).json()["detail"]
    assert (
        detail.startswith("stream_mode: not a stream mode of LangGraph's: 'bogus'")
        and "messages-tuple" in detail
    )
    # what RemoteGraph and the SDKs send besides is accepted, and changes nothing
    accepted = {
        "config": {
            "recursion_limit": 25,
            "tags": ["t"],
            "metadata": {"a": 1},
            "configurable": {"thread_id": thread_id, "__pregel_resuming": False},
        },
        "stream_subgraphs": True,
        "if_not_exists": "create",
        "durability": "async",
        "on_completion": "keep",
        "feedback_keys": ["score"],
        "interrupt_before": None,
        "context": None,
    }
    values = await client.runs.wait(
        thread_id,
        "recloop",
        input={"candidates": CANDIDATES},
        config=accepted["config"],
        if_not_exists="create",
    )
    assert values["final_item"] in CANDIDATES
    response = await served.post(
        f"/threads/{thread_id}/runs/wait",
        json={"assistant_id": "recloop", "input": {"candidates": CANDIDATES}, **accepted},
        headers=headers,
    )
    assert response.status_code == 200, response.text
    assert (await client.runs.list(thread_id, limit=5))[0]["status"] == "success"


async def test_v1_abandons_a_paused_loop_and_its_history_says_so(api):
    session = (await api.post("/v1/sessions", json={"user_id": "u", "history": HISTORY})).json()
    base = f"/v1/sessions/{session['id']}"
    paused = (
        await api.post(f"{base}/recommendations", json={"judge_mode": "human", "candidates": CANDIDATES})
    ).json()
    assert paused["status"] == "awaiting_feedback"
    assert (await api.post(f"{base}/loops/2/cancel")).status_code == 404
    response = await api.post(f"{base}/loops/1/cancel", json={"reason": "the user left"})
    assert response.status_code == 200, response.text
    loop = response.json()
    assert loop["status"] == "failed" and loop["loop_index"] == 1 and loop["cancelled"] is True
    assert (
        loop["error"]
        == "cancelled: the client abandoned the loop while it waited for a judgement (the user left)"
    )
    state = (await api.get(base)).json()
    assert state["status"] == "idle" and state["pending"] is None
    again = await api.post(f"{base}/loops/1/cancel")
    assert again.status_code == 409 and again.json()["field"] == "loop_index"
    assert (
        await api.post(f"{base}/feedback", json={"decision": "accept", "reason": "late"})
    ).status_code == 409
    done = (await api.post(f"{base}/recommendations", json={"candidates": CANDIDATES})).json()
    assert done["status"] == "completed" and done["loop_index"] == 2
    history = (await api.get(f"{base}/loops")).json()["data"]
    assert [(h["loop_index"], h["status"]) for h in history] == [(2, "completed"), (1, "failed")]
    refused = await api.post(f"{base}/loops/2/cancel", json={"reason": ""})
    assert refused.status_code == 422 and refused.json()["field"] == "reason"


async def test_a_failure_whose_message_reads_cancelled_is_an_error_not_a_cancel(api, monkeypatch):
    """Cancellation is the loop's state (``cancelled``), set only by a client's cancel: an agent's
    failure, whatever its words, is a failed run (``error``), never an ``interrupted`` one."""
    from graph.agents.offline import OfflineRecAgent

    async def broken(self, ctx):
        raise RuntimeError("cancelled: the agent's own words")

    monkeypatch.setattr(OfflineRecAgent, "propose", broken)
    session = (await api.post("/v1/sessions", json={"user_id": "u", "history": HISTORY})).json()
    base = f"/v1/sessions/{session['id']}"
    failed = await api.post(f"{base}/recommendations", json={"candidates": CANDIDATES})
    assert failed.status_code == 500, failed.text
    (loop,) = (await api.get(f"{base}/loops")).json()["data"]
    assert (loop["status"], loop["cancelled"]) == ("failed", False)
    assert "cancelled: the agent's own words" in loop["error"]
    runs = (await api.get(f"/threads/{session['id']}/runs")).json()
    assert [run["status"] for run in runs] == ["error"]
    for status, expected in (("error", 1), ("interrupted", 0)):
        listed = await api.get(f"/threads/{session['id']}/runs", params={"status": status})
        assert len(listed.json()) == expected, (status, listed.json())
