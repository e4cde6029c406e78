"""LangGraph's server protocol, driven by the official client (langgraph-sdk) against a real server.

The app runs behind uvicorn on a free port over the migrated PostgreSQL test database, with the
tiny trained models; every call goes through ``langgraph_sdk.get_client`` as a LangGraph user's
code would, and the answers are checked against the SDK's own types (langgraph_sdk.schema).
"""

from __future__ import annotations

import asyncio
import re
import uuid
from pathlib import Path

import httpx
import pytest
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError
from langgraph_sdk.schema import Assistant, Run, Thread, ThreadState

from app.db import loops as loops_repo
from app.services.keys import create_key

pytestmark = pytest.mark.integration

HISTORY = [49, 180, 257, 293, 0, 171]
CANDIDATES = [5, 10, 15, 20, 25, 30, 35, 40]


def _keys_of(typed_dict: type) -> set[str]:
    return {k for k, v in typed_dict.__annotations__.items() if "NotRequired" not in str(v)}


async def _thread(client, **metadata) -> Thread:
    return await client.threads.create(metadata={"user_id": "u1", "history": HISTORY, **metadata})


async def test_assistants_are_the_loop_variants_with_graph_and_schemas(sdk):
    client = await sdk("assistants")
    found = await client.assistants.search(graph_id="recloop")
    assert {a["name"] for a in found} == {"recloop", "recloop-human"}  # no LLM endpoint configured
    for assistant in found:
        assert _keys_of(Assistant) <= set(assistant)
    human = next(a for a in found if a["name"] == "recloop-human")
    assert human["metadata"] == {"created_by": "system", "agents": "offline", "judge_mode": "human"}
    # As on LangGraph's server, where a graph's own assistants carry created_by="system".
    system = await client.assistants.search(metadata={"created_by": "system"})
    assert {a["name"] for a in system} == {"recloop", "recloop-human"}
    assert (await client.assistants.get(human["assistant_id"]))["name"] == "recloop-human"
    assert (await client.assistants.get("recloop"))["graph_id"] == "recloop"  # the graph id names it too

    drawn = await client.assistants.get_graph("recloop")
    assert {n["id"] for n in drawn["nodes"]} == {
        "__start__",
        "recommend",
        "score",
        "judge",
        "memory_update",
        "__end__",
    }
    assert {"source": "judge", "target": "memory_update"} in [
        {"source": e["source"], "target": e["target"]} for e in drawn["edges"]
    ]
    schemas = await client.assistants.get_schemas("recloop")
    assert set(schemas["input_schema"]["properties"]) == {"candidates", "max_rounds"}
    assert {"rounds", "rec_memory", "final_item"} <= set(schemas["state_schema"]["properties"])
    with pytest.raises(NotFoundError):
        await client.assistants.get("no-such-assistant")


async def test_wait_and_stream_run_loops_on_a_thread_and_history_records_them(sdk, served):
    client = await sdk("flow")
    thread = await _thread(client, topic="flow")
    assert _keys_of(Thread) <= set(thread)
    assert thread["status"] == "idle" and thread["metadata"]["topic"] == "flow"

    values = await client.runs.wait(
        thread["thread_id"], "recloop", input={"candidates": CANDIDATES, "max_rounds": 3}
    )
    assert values["final_item"] in CANDIDATES and values["stop_reason"] in ("accepted", "max_rounds")
    assert 1 <= len(values["rounds"]) <= 3 and values["history"] == HISTORY

    parts = [
        part
        async for part in client.runs.stream(
            thread["thread_id"],
            "recloop",
            input={"candidates": CANDIDATES},
            stream_mode=["updates", "values"],
        )
    ]
    assert parts[0].event == "metadata" and uuid.UUID(parts[0].data["run_id"])
    updates = [p.data for p in parts if p.event == "updates"]
    assert [next(iter(u)) for u in updates[:4]] == ["recommend", "score", "judge", "memory_update"]
    assert "proposal" in updates[0]["recommend"]
    last_values = [p.data for p in parts if p.event == "values"][-1]
    assert last_values["loop_index"] == 2 and last_values["final_item"] in CANDIDATES

    runs = await client.runs.list(thread["thread_id"])
    assert [r["status"] for r in runs] == ["success", "success"]
    assert all(_keys_of(Run) <= set(r) for r in runs)
    assert (await client.runs.get(thread["thread_id"], parts[0].data["run_id"]))["status"] == "success"
    # The thread is the session, its runs are the session's /v1 loops: one id space, one owner.
    v1 = await served.get(
        f"/v1/sessions/{thread['thread_id']}/loops", headers={"x-api-key": client.recloop_key}
    )
    assert [loop["loop_index"] for loop in v1.json()["data"]] == [2, 1]
    assert [loop["final_item"] for loop in v1.json()["data"]] == [
        last_values["final_item"],
        values["final_item"],
    ]
    assert (await served.get(f"/v1/sessions/{thread['thread_id']}/loops")).status_code == 404  # another key

    state = await client.threads.get_state(thread["thread_id"])
    assert _keys_of(ThreadState) <= set(state)
    assert state["values"]["loop_index"] == 2 and state["next"] == [] and state["interrupts"] == []
    history = await client.threads.get_history(thread["thread_id"], limit=3)
    assert len(history) == 3 and history[0]["checkpoint"] == state["checkpoint"]
    older = await client.threads.get_history(thread["thread_id"], limit=2, before=history[0]["checkpoint"])
    assert [h["checkpoint"] for h in older] == [h["checkpoint"] for h in history[1:3]]
    at = await client.threads.get_state(
        thread["thread_id"], checkpoint_id=history[1]["checkpoint"]["checkpoint_id"]
    )
    assert at["checkpoint"] == history[1]["checkpoint"] and at["values"] == history[1]["values"]
    with pytest.raises(NotFoundError):
        await client.threads.get_state(thread["thread_id"], checkpoint_id=str(uuid.uuid4()))


async def test_a_thread_that_has_not_run_has_null_values_as_on_langgraph(sdk):
    client = await sdk("no-state")
    tag = uuid.uuid4().hex
    thread = await _thread(client, tag=tag)
    assert thread["values"] is None and thread["interrupts"] == {}
    assert (await client.threads.get(thread["thread_id"]))["values"] is None  # was {}: an object
    [found] = await client.threads.search(metadata={"tag": tag})
    assert found["values"] is None
    await client.runs.wait(thread["thread_id"], "recloop", input={"candidates": CANDIDATES, "max_rounds": 2})
    values = (await client.threads.get(thread["thread_id"]))["values"]
    assert isinstance(values, dict) and values["final_item"] in CANDIDATES


async def test_a_created_run_answers_its_kwargs_as_a_read_run_does(sdk):
    client = await sdk("kwargs")
    thread = await _thread(client)
    run = await client.runs.create(
        thread["thread_id"], "recloop", input={"candidates": CANDIDATES, "max_rounds": 2}
    )
    assert run["kwargs"] == {"input": {"candidates": CANDIDATES, "max_rounds": 2}}  # was {}
    await client.runs.join(thread["thread_id"], run["run_id"])
    assert (await client.runs.get(thread["thread_id"], run["run_id"]))["kwargs"] == run["kwargs"]


async def test_a_human_judge_interrupt_is_resumed_with_a_command(sdk):
    client = await sdk("human")
    thread = await _thread(client)
    paused = await client.runs.wait(thread["thread_id"], "recloop-human", input={"candidates": CANDIDATES})
    [interrupt] = paused["__interrupt__"]
    assert interrupt["value"]["item"] in CANDIDATES and interrupt["value"]["round"] == 1

    seen = await client.threads.get(thread["thread_id"])
    assert seen["status"] == "interrupted"
    assert [i["value"] for i in next(iter(seen["interrupts"].values()))] == [interrupt["value"]]
    state = await client.threads.get_state(thread["thread_id"])
    assert state["next"] == ["judge"] and state["interrupts"][0]["value"] == interrupt["value"]
    with pytest.raises(httpx.HTTPStatusError) as caught:  # a new loop while one waits for its judgement
        await client.runs.wait(thread["thread_id"], "recloop-human", input={})
    assert caught.value.response.status_code == 409

    done = await client.runs.wait(
        thread["thread_id"], "recloop-human", command={"resume": {"decision": "accept", "reason": "fits"}}
    )
    assert "__interrupt__" not in done
    assert done["final_item"] == interrupt["value"]["item"] and done["stop_reason"] == "accepted"
    assert done["rounds"][-1]["user_reason"] == "fits"
    assert (await client.threads.get(thread["thread_id"]))["status"] == "idle"
    [run] = await client.runs.list(thread["thread_id"])
    assert (
        run["status"] == "success"
        and run["assistant_id"] == (await client.assistants.get("recloop-human"))["assistant_id"]
    )
    with pytest.raises(httpx.HTTPStatusError) as caught:  # runs.wait raises httpx's own errors
        await client.runs.wait(
            thread["thread_id"], "recloop-human", command={"resume": {"decision": "maybe"}}
        )
    assert caught.value.response.status_code == 422


async def test_search_by_metadata_and_status_then_delete(sdk):
    client = await sdk("search")
    tag = uuid.uuid4().hex
    first, second = await _thread(client, tag=tag, n=1), await _thread(client, tag=tag, n=2)
    await _thread(client, tag="other")
    found = await client.threads.search(metadata={"tag": tag})
    assert [t["thread_id"] for t in found] == [second["thread_id"], first["thread_id"]]  # newest first
    assert [t["thread_id"] for t in await client.threads.search(metadata={"tag": tag, "n": 1})] == [
        first["thread_id"]
    ]
    assert len(await client.threads.search(metadata={"tag": tag}, limit=1, offset=1)) == 1
    assert await client.threads.search(metadata={"tag": tag}, status="busy") == []
    assert len(await client.threads.search(metadata={"tag": tag}, status="idle")) == 2

    await client.threads.delete(first["thread_id"])
    with pytest.raises(NotFoundError):
        await client.threads.get(first["thread_id"])
    assert [t["thread_id"] for t in await client.threads.search(metadata={"tag": tag})] == [
        second["thread_id"]
    ]


async def test_bad_thread_metadata_is_refused_naming_the_field(sdk):
    client = await sdk("bad")
    for metadata, field in (
        ({"user_id": "u"}, "metadata.history"),
        ({"history": [10**9]}, "metadata.history[0]"),
    ):
        with pytest.raises(UnprocessableEntityError) as caught:
            await client.threads.create(metadata=metadata)
        assert caught.value.response.json()["field"] == field
    thread = await _thread(client)
    with pytest.raises(UnprocessableEntityError) as caught:
        await client.runs.create(thread["thread_id"], "recloop", input={"history": [1, 2]})
    assert caught.value.response.json()["field"] == "input.history"
    with pytest.raises(UnprocessableEntityError) as caught:
        await client.runs.create(thread["thread_id"], "recloop", input={}, multitask_strategy="enqueue")
    assert caught.value.response.json()["field"] == "multitask_strategy"
    assert (await client.runs.list(thread["thread_id"])) == []  # nothing ran


async def test_another_owners_thread_is_not_found(sdk):
    alice, bob = await sdk("alice"), await sdk("bob")
    thread = await _thread(alice, tag="private")
    thread_id = thread["thread_id"]
    for call in (
        bob.threads.get(thread_id),
        bob.threads.get_state(thread_id),
        bob.threads.get_history(thread_id),
        bob.threads.delete(thread_id),
        bob.runs.create(thread_id, "recloop", input={}),
        bob.runs.list(thread_id),
    ):
        with pytest.raises(NotFoundError):
            await call
    assert await bob.threads.search(metadata={"tag": "private"}) == []
    assert (await alice.threads.get(thread_id))["thread_id"] == thread_id


async def test_twenty_concurrent_runs_on_one_thread_one_runs_the_rest_are_refused(
    sdk, held_rec_agent, service_worker
):
    client = await sdk("concurrent")
    thread = await _thread(client)
    answers = await asyncio.gather(
        *(
            client.runs.create(thread["thread_id"], "recloop", input={"candidates": CANDIDATES})
            for _ in range(20)
        ),
        return_exceptions=True,
    )
    started = [a for a in answers if isinstance(a, dict)]
    refused = [a for a in answers if isinstance(a, ConflictError)]
    assert len(started) == 1 and len(refused) == 19, answers
    assert (await client.threads.get(thread["thread_id"]))["status"] == "busy"
    held_rec_agent.set()
    values = await client.runs.join(thread["thread_id"], started[0]["run_id"])
    assert values["loop_index"] == 1 and values["final_item"] in CANDIDATES
    assert (await client.runs.get(thread["thread_id"], started[0]["run_id"]))["status"] == "success"
    async with service_worker.database.sessionmaker() as db:
        rows, count = await loops_repo.list_loops(
            db, session_id=uuid.UUID(thread["thread_id"]), limit=50, offset=0
        )
    assert count == 1 and rows[0].status == "completed"


async def test_a_background_run_is_cancelled_and_recorded(sdk, held_rec_agent):
    client = await sdk("cancel")
    thread = await _thread(client)
    run = await client.runs.create(thread["thread_id"], "recloop", input={"candidates": CANDIDATES})
    assert run["status"] == "running"
    await client.runs.cancel(thread["thread_id"], run["run_id"], wait=True)
    cancelled = await client.runs.get(thread["thread_id"], run["run_id"])
    assert cancelled["status"] == "interrupted" and cancelled["metadata"]["error"].startswith("cancelled")
    assert (await client.threads.get(thread["thread_id"]))["status"] == "idle"  # free for the next run
    held_rec_agent.set()
    values = await client.runs.wait(thread["thread_id"], "recloop", input={"candidates": CANDIDATES})
    assert values["final_item"] in CANDIDATES
    runs = await client.runs.list(thread["thread_id"])  # newest first; the cancelled loop kept its number
    assert [(r["metadata"]["loop_index"], r["status"]) for r in runs] == [(2, "success"), (1, "interrupted")]


async def test_info_and_ok_answer_without_a_key(served):
    async with httpx.AsyncClient(base_url=str(served.base_url)) as anonymous:
        assert (await anonymous.get("/ok")).json() == {"ok": True}
        info = (await anonymous.get("/info")).json()
        assert info["version"] and info["flags"]["assistants"] is True
        assert (await anonymous.post("/threads/search", json={})).status_code == 401


DOC = Path(__file__).parents[1] / "docs" / "langgraph.md"


async def test_the_snippets_of_the_langgraph_docs_run(served, service_worker, monkeypatch):
    snippets = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    assert len(snippets) == 2  # langgraph-sdk, RemoteGraph
    key = await create_key(service_worker.database.sessionmaker, owner="docs")
    monkeypatch.setenv("RECLOOP_URL", str(served.base_url))
    monkeypatch.setenv("RECLOOP_API_KEY", key.secret)
    for snippet in snippets:  # sync clients: in a thread, while the server runs on this loop
        await asyncio.to_thread(exec, compile(snippet, str(DOC), "exec"), {"__name__": "snippet"})


async def test_a_retried_run_with_the_same_idempotency_key_runs_once(sdk):
    client = await sdk("idempotent")
    thread = await _thread(client)
    headers = {"Idempotency-Key": str(uuid.uuid4())}
    body = {"candidates": CANDIDATES, "max_rounds": 2}
    first = await client.runs.wait(thread["thread_id"], "recloop", input=body, headers=headers)
    for _ in range(100):  # the first answer is stored just after it is sent: a 409 says "retry"
        try:
            again = await client.runs.wait(thread["thread_id"], "recloop", input=body, headers=headers)
            break
        except httpx.HTTPStatusError as exc:
            assert exc.response.status_code == 409 and "still running" in exc.response.text
            await asyncio.sleep(0.05)
    assert again == first
    assert len(await client.runs.list(thread["thread_id"])) == 1
