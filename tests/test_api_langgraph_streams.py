"""LangGraph's stream modes beyond values/updates, and joining a run's stream, with the real SDK.

Against a real server on PostgreSQL (the ``sdk`` fixture, tests/conftest.py); what each mode sends
is documented in app/api/protocol_stream.py and docs/langgraph.md.
"""

from __future__ import annotations

import asyncio

import pytest

pytestmark = pytest.mark.integration

HISTORY = [49, 180, 257, 293, 0, 171]
CANDIDATES = [5, 10, 15, 20, 25, 30, 35, 40]
NODES = ["recommend", "score", "judge", "memory_update"]


async def _thread(client):
    return await client.threads.create(metadata={"history": HISTORY})


async def _parts(stream) -> list:
    return [part async for part in stream]


async def _streamed(client, thread, stream_mode, max_rounds: int = 1) -> list:
    """A loop on the thread, streamed in ``stream_mode``: every part."""
    input = {"candidates": CANDIDATES, "max_rounds": max_rounds}
    return await _parts(
        client.runs.stream(thread["thread_id"], "recloop", input=input, stream_mode=stream_mode)
    )


async def test_events_mode_brackets_the_run_and_each_node_as_langgraphs_server_does(sdk):
    client = await sdk("events")
    thread = await _thread(client)
    run_input = {"candidates": CANDIDATES, "max_rounds": 1}
    parts = await _parts(
        client.runs.stream(thread["thread_id"], "recloop", input=run_input, stream_mode="events")
    )
    assert parts[0].event == "metadata"
    events = [p.data for p in parts if p.event == "events"]
    assert {p.event for p in parts} == {"metadata", "events"}
    run_id = parts[0].data["run_id"]
    # The run is named by its graph id, and starts with its input (bench/langgraph_reference.py).
    first, last = events[0], events[-1]
    assert (first["event"], first["name"], first["run_id"]) == ("on_chain_start", "recloop", run_id)
    assert first["data"] == {"input": run_input} and first["tags"] == []
    assert first["metadata"]["graph_id"] == "recloop" and first["metadata"]["assistant_id"]
    assert (last["event"], last["name"]) == ("on_chain_end", "recloop")
    assert last["data"]["output"]["final_item"] in CANDIDATES
    nodes = events[1:-1]
    assert [(e["event"], e["name"]) for e in nodes] == [
        (kind, node) for node in NODES for kind in ("on_chain_start", "on_chain_stream", "on_chain_end")
    ]
    steps = []
    for start, stream, end in zip(nodes[::3], nodes[1::3], nodes[2::3], strict=True):
        assert start["run_id"] == stream["run_id"] == end["run_id"] and start["parent_ids"] == [run_id]
        meta = start["metadata"]
        assert meta["langgraph_node"] == start["name"] and meta["thread_id"] == thread["thread_id"]
        assert meta["langgraph_path"] == ["__pregel_pull", start["name"]]
        assert meta["langgraph_checkpoint_ns"] == f"{start['name']}:{start['run_id']}"
        assert meta["langgraph_triggers"] == [f"branch:to:{start['name']}"]
        assert start["tags"] == [f"graph:step:{meta['langgraph_step']}"] == end["tags"]
        assert end["metadata"] == meta  # the end's metadata is the start's (its triggers too)
        steps.append(meta["langgraph_step"])
        assert "input" in start["data"] and stream["data"]["chunk"] == end["data"]["output"]
        assert end["data"]["input"] == start["data"]["input"]
    assert steps == list(range(steps[0], steps[0] + len(NODES)))
    assert "proposal" in dict(nodes[2]["data"]["output"])  # recommend's writes


async def test_messages_modes_carry_each_agents_reason_as_an_ai_message(sdk):
    client = await sdk("messages")
    thread = await _thread(client)
    parts = await _streamed(client, thread, ["messages-tuple", "updates"], max_rounds=2)
    updates = [p.data for p in parts if p.event == "updates"]
    proposals = [u["recommend"]["proposal"] for u in updates if "recommend" in u]
    judgements = [u["judge"]["judgement"] for u in updates if "judge" in u]
    messages = [p.data for p in parts if p.event == "messages"]
    assert len(messages) == len(proposals) + len(judgements) >= 2
    spoken = [answer for pair in zip(proposals, judgements, strict=True) for answer in pair]
    for (message, metadata), said in zip(messages, spoken, strict=True):
        assert message["type"] == "ai" and message["content"] == said["reason"]
        assert metadata["thread_id"] == thread["thread_id"]
        # The node's metadata, as LangGraph's server gives a chat model's message (its step above all).
        node = metadata["langgraph_node"]
        assert isinstance(metadata["langgraph_step"], int) and metadata["graph_id"] == "recloop"
        assert metadata["langgraph_triggers"] == [f"branch:to:{node}"]
        assert metadata["langgraph_path"] == ["__pregel_pull", node]
        assert metadata["checkpoint_ns"] == metadata["langgraph_checkpoint_ns"]
        assert metadata["checkpoint_ns"].startswith(f"{node}:")
        assert message["response_metadata"] == {}
    steps = [metadata["langgraph_step"] for _, metadata in messages]
    assert steps == sorted(steps) and len(set(steps)) == len(steps)
    first, first_meta = messages[0]
    assert (
        first["name"] == "recommendation_agent" and first["additional_kwargs"]["item"] == proposals[0]["item"]
    )
    assert first_meta["langgraph_node"] == "recommend"
    assert messages[1][0]["name"] == "user_agent" and messages[1][1]["langgraph_node"] == "judge"
    assert len({m["id"] for m, _ in messages}) == len(messages)

    legacy = await _streamed(client, thread, "messages", max_rounds=1)
    kinds = [p.event for p in legacy if p.event != "metadata"]
    assert kinds[:2] == ["messages/metadata", "messages/complete"] and len(kinds) % 2 == 0
    (message,) = legacy[2].data
    assert set(legacy[1].data) == {message["id"]} and message["content"]


async def test_tasks_checkpoints_and_debug_modes_pass_langgraphs_payloads(sdk):
    client = await sdk("debug")
    thread = await _thread(client)
    parts = await _streamed(client, thread, ["tasks", "checkpoints", "debug", "custom"], max_rounds=1)
    tasks = [p.data for p in parts if p.event == "tasks"]
    assert [t["name"] for t in tasks if "input" in t] == NODES
    assert [t["name"] for t in tasks if "result" in t] == NODES
    checkpoints = [p.data for p in parts if p.event == "checkpoints"]
    assert checkpoints and checkpoints[-1]["values"]["final_item"] in CANDIDATES
    assert checkpoints[-1]["config"]["configurable"]["thread_id"] == thread["thread_id"]
    debug = [p.data for p in parts if p.event == "debug"]
    assert {d["type"] for d in debug} >= {"checkpoint", "task", "task_result"}
    # A checkpoint's ids, as LangGraph's server adds them (bench/langgraph_reference.py).
    saved = [d["payload"] for d in debug if d["type"] == "checkpoint"]
    for payload in saved:
        configurable = payload["config"]["configurable"]
        assert payload["checkpoint"] == {
            "checkpoint_id": configurable["checkpoint_id"],
            "thread_id": thread["thread_id"],
            "checkpoint_ns": "",
        }
    assert (
        saved[-1]["parent_checkpoint"]["checkpoint_id"]
        == (saved[-1]["parent_config"]["configurable"]["checkpoint_id"])
    )
    assert "custom" not in {p.event for p in parts}  # accepted; the loop writes none


async def test_joining_a_background_run_replays_it_from_the_start_then_follows_it(sdk, held_rec_agent):
    client = await sdk("join")
    thread = await _thread(client)
    run = await client.runs.create(
        thread["thread_id"], "recloop", input={"candidates": CANDIDATES, "max_rounds": 2}
    )
    joined = asyncio.ensure_future(
        _parts(client.runs.join_stream(thread["thread_id"], run["run_id"], stream_mode=["updates", "values"]))
    )
    await asyncio.sleep(0.3)
    assert not joined.done()  # the run is held: the join follows it live
    held_rec_agent.set()
    parts = await asyncio.wait_for(joined, 60)
    updates = [p.data for p in parts if p.event == "updates"]
    assert [next(iter(u)) for u in updates[:4]] == NODES
    values = [p.data for p in parts if p.event == "values"]
    assert values[-1]["loop_index"] == 1 and values[-1]["final_item"] in CANDIDATES
    assert {p.event for p in parts} == {"updates", "values"}  # only the modes asked for
    assert (await client.runs.get(thread["thread_id"], run["run_id"]))["status"] == "success"

    # Resuming after an event id: the parts after it, no more, no fewer.
    ids = [int(p.id) for p in parts if p.id]
    assert ids == sorted(ids)
    # The run has ended: a late join (here or on another worker) sends nothing and returns.
    assert await _parts(client.runs.join_stream(thread["thread_id"], run["run_id"])) == []
    assert await _parts(client.runs.join_stream(thread["thread_id"], run["run_id"], last_event_id="3")) == []


async def test_a_join_resumes_after_its_last_event_id(sdk, held_judge):
    client = await sdk("resume-join")
    thread = await _thread(client)
    run = await client.runs.create(
        thread["thread_id"], "recloop", input={"candidates": CANDIDATES, "max_rounds": 1}
    )
    first = client.runs.join_stream(thread["thread_id"], run["run_id"], stream_mode="updates")
    seen = [await anext(first), await anext(first)]  # recommend, score; the judge is held
    assert [next(iter(p.data)) for p in seen] == ["recommend", "score"]
    rest = client.runs.join_stream(
        thread["thread_id"], run["run_id"], stream_mode="updates", last_event_id=seen[0].id
    )
    resumed = [await anext(rest)]
    held_judge.set()
    seen += [p async for p in first]
    resumed += [p async for p in rest]
    assert [p.data for p in resumed] == [p.data for p in seen[1:]]  # after recommend: no more, no fewer
    assert [next(iter(p.data)) for p in resumed] == ["score", "judge", "memory_update"]


async def test_a_join_of_another_owners_run_is_not_found_and_a_bad_last_event_id_is_refused(sdk, served):
    owner, stranger = await sdk("join-owner"), await sdk("join-stranger")
    thread = await _thread(owner)
    run = await owner.runs.create(thread["thread_id"], "recloop", input={"candidates": CANDIDATES})
    url = f"/threads/{thread['thread_id']}/runs/{run['run_id']}/stream"
    other = await served.get(url, headers={"x-api-key": stranger.recloop_key})
    assert other.status_code == 404
    bad = await served.get(url, headers={"x-api-key": owner.recloop_key, "Last-Event-ID": "soon"})
    assert bad.status_code == 422 and "Last-Event-ID" in bad.text
    await owner.runs.join(thread["thread_id"], run["run_id"])


async def test_a_stream_whose_client_leaves_with_on_disconnect_cancel_cancels_the_loop(sdk, held_rec_agent):
    client = await sdk("disconnect")
    thread = await _thread(client)
    stream = client.runs.stream(
        thread["thread_id"], "recloop", input={"candidates": CANDIDATES}, on_disconnect="cancel"
    )
    metadata = await anext(stream)
    await stream.aclose()  # the client goes away while the loop is held
    for _ in range(100):
        run = await client.runs.get(thread["thread_id"], metadata.data["run_id"])
        if run["status"] != "running":
            break
        await asyncio.sleep(0.05)
    assert run["status"] == "interrupted" and run["metadata"]["error"].startswith("cancelled")


def test_an_interrupt_has_a_response_schema_only_if_the_graph_gave_one():
    from langgraph.types import Interrupt

    from graph.runner import plain_interrupts

    schema = {"type": "object", "properties": {"decision": {"enum": ["accept", "reject"]}}}
    asked, plain = Interrupt(value={"item": 5}, id="a", response_schema=schema), Interrupt(value=1, id="b")
    # The SDK's Interrupt declares response_schema NotRequired[dict]: a null is no key.
    assert plain_interrupts([asked, plain]) == [
        {"value": {"item": 5}, "id": "a", "response_schema": schema},
        {"value": 1, "id": "b"},
    ]
