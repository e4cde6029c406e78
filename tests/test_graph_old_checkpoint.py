"""A checkpoint written by an older recloop (tests/fixtures/loop_checkpoint_047f00a.json) still loads
and resumes: threads stored in a service's database outlive the code that wrote them."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from app.settings import Settings
from graph.builder import build_graph
from graph.runner import loop_config, loop_input, resume_input
from lab.calibration.deps import calibrated_deps

FIXTURE = Path(__file__).parent / "fixtures" / "loop_checkpoint_047f00a.json"
MAX_ROUNDS = 4


def _typed(pair: list[str]) -> tuple[str, bytes]:
    kind, data = pair
    return kind, base64.b64decode(data)


async def _saver_with_old_thread() -> tuple[InMemorySaver, dict]:
    """A saver holding the fixture's checkpoint and pending writes, put through the saver's API."""
    stored = json.loads(FIXTURE.read_text())
    saver = InMemorySaver()
    checkpoint = saver.serde.loads_typed(_typed(stored["checkpoint"]))
    metadata = saver.serde.loads_typed(_typed(stored["metadata"]))
    thread = {"configurable": {"thread_id": stored["thread_id"], "checkpoint_ns": ""}}
    saved = await saver.aput(thread, checkpoint, metadata, checkpoint["channel_versions"])
    for task_id, channel, value in stored["pending_writes"]:
        await saver.aput_writes(saved, [(channel, saver.serde.loads_typed(_typed(value)))], task_id)
    return saver, stored


@pytest.fixture
async def deps(ml_dataset, ml_scorers, session_data_dir):
    """The deps the fixture was written with (offline agents, gru4rec recommends, sasrec rewards)."""
    settings = Settings(_env_file=None, data_dir=session_data_dir, accept_top_k=1, reward_display="score")
    return await calibrated_deps(
        settings.loop_config(), ml_dataset, ml_scorers["gru4rec"], ml_scorers["sasrec"], "offline"
    )


async def test_an_old_paused_loop_loads_and_resumes_where_it_waited(deps):
    saver, stored = await _saver_with_old_thread()
    expected = stored["expected"]
    graph = build_graph().compile(checkpointer=saver)
    config = loop_config(stored["thread_id"], MAX_ROUNDS)

    paused = await graph.aget_state(config)
    assert paused.next == ("judge",)
    assert [i.value["item"] for task in paused.tasks for i in task.interrupts] == [expected["pending_item"]]
    assert paused.values["loop_index"] == 2 and [r["round"] for r in paused.values["rounds"]] == [1]

    # The human rejects round 2: the loop goes on to round 3 with what the old state holds.
    again = await graph.ainvoke(resume_input({"decision": "reject", "reason": "no"}), config, context=deps)
    third = again["__interrupt__"][0].value
    assert (third["loop_index"], third["round"]) == (2, 3)
    assert third["item"] not in (expected["loop2_round1"], expected["pending_item"])  # never again
    assert third["item"] in paused.values["candidates"]

    done = await graph.ainvoke(resume_input({"decision": "accept", "reason": "yes"}), config, context=deps)
    assert done["stop_reason"] == "accepted" and done["final_item"] == third["item"]
    assert [(r["loop_index"], r["round"], r["decision"]) for r in done["rounds"]] == [
        (2, 1, "reject"),
        (2, 2, "reject"),
        (2, 3, "accept"),
    ]
    assert [m["item"] for m in done["rec_memory"]] == [*expected["rec_memory"], expected["pending_item"]]
    assert done["user_memory"] == done["rec_memory"]


async def test_a_new_loop_opens_on_an_old_thread_and_keeps_its_memory(deps):
    saver, stored = await _saver_with_old_thread()
    expected = stored["expected"]
    graph = build_graph().compile(checkpointer=saver)
    old = (await graph.aget_state(loop_config(stored["thread_id"], MAX_ROUNDS))).values
    config = loop_config(stored["thread_id"], 2)

    fresh = await graph.ainvoke(loop_input(deps, old["history"], old["candidates"], 2), config, context=deps)
    assert fresh["loop_index"] == 3 and fresh["stop_reason"] in ("accepted", "max_rounds")
    assert [r["round"] for r in fresh["rounds"]] == list(range(1, len(fresh["rounds"]) + 1))
    assert {r["loop_index"] for r in fresh["rounds"]} == {3}
    assert fresh["judge_mode"] == "agent" and fresh["llm_seconds"] == 0.0
    assert [m["item"] for m in fresh["rec_memory"][: len(expected["rec_memory"])]] == expected["rec_memory"]
    assert not (await graph.aget_state(config)).next  # the abandoned human judgement is gone
