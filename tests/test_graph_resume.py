"""Resume: stop a loop after round 2, continue the same thread later from round 3 with memory intact."""

from __future__ import annotations

import random

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from app.settings import Settings
from graph.builder import build_graph
from graph.runner import loop_config
from lab.calibration.deps import calibrated_deps
from recmodels.candidates import sample_candidates

MAX_ROUNDS = 4


@pytest.fixture
async def slow_to_please(ml_dataset, ml_scorers, session_data_dir):
    """Deps and a row on which the offline loop needs all four rounds (the rec model never finds
    the reward model's favourite early; score display, so no items are named)."""
    settings = Settings(_env_file=None, data_dir=session_data_dir, accept_top_k=1, reward_display="score")
    deps = await calibrated_deps(
        settings.loop_config(), ml_dataset, ml_scorers["gru4rec"], ml_scorers["sasrec"], "offline"
    )
    rng = random.Random(1)
    for row in ml_dataset.eval_rows("test")[0]:
        history = list(row.history)
        candidates = sample_candidates(history, row.next, ml_dataset.n_items, rng)
        favourite = deps.reward_scorer.rank(history, candidates)[0]
        if deps.rec_scorer.rank(history, candidates).index(favourite) >= MAX_ROUNDS:
            return deps, {
                "new_loop": True,
                "history": history,
                "candidates": candidates,
                "max_rounds": MAX_ROUNDS,
            }
    pytest.fail("no test row needs four rounds")


async def test_resume_after_round_two_continues_with_round_three(slow_to_please):
    deps, loop_input = slow_to_please
    saver = InMemorySaver()
    config = loop_config("resume-thread", MAX_ROUNDS)

    paused = build_graph().compile(checkpointer=saver, interrupt_after=["memory_update"])
    await paused.ainvoke(loop_input, config, context=deps)  # stops after round 1
    state = await paused.ainvoke(None, config, context=deps)  # continues, stops after round 2
    assert [r["round"] for r in state["rounds"]] == [1, 2]
    assert len(state["rec_memory"]) == len(state["user_memory"]) == 2
    assert state["stop_reason"] is None
    assert (await paused.aget_state(config)).next == ("recommend",)
    before = [dict(r) for r in state["rounds"]]

    # a fresh compilation on the same checkpointer: what a restarted process does
    resumed = build_graph().compile(checkpointer=saver)
    final = await resumed.ainvoke(None, config, context=deps)
    assert [r["round"] for r in final["rounds"]] == [1, 2, 3, 4]
    assert final["rounds"][:2] == before
    assert final["loop_index"] == 1
    assert final["stop_reason"] == "max_rounds"
    assert len(final["rec_memory"]) == 4
    assert [m["item"] for m in final["user_memory"][:2]] == [r["item"] for r in before]
    assert len({r["item"] for r in final["rounds"]}) == 4  # rounds 3-4 saw the rejections of 1-2


async def test_a_round_limit_then_a_new_loop_reuses_the_threads_memory(slow_to_please):
    deps, loop_input = slow_to_please
    graph = build_graph().compile(checkpointer=InMemorySaver())
    config = loop_config("limit-thread", MAX_ROUNDS)
    first = await graph.ainvoke({**loop_input, "max_rounds": 2}, config, context=deps)
    assert first["stop_reason"] == "max_rounds" and len(first["rounds"]) == 2
    second = await graph.ainvoke({**loop_input, "max_rounds": 2}, config, context=deps)
    assert second["loop_index"] == 2 and [r["round"] for r in second["rounds"]] == [1, 2]
    # the second loop starts where the memory says: the first loop's rejected items are not proposed again
    first_items = {r["item"] for r in first["rounds"]}
    assert not first_items & {r["item"] for r in second["rounds"]}
    assert len(second["rec_memory"]) == 4


async def test_new_input_on_a_paused_loop_opens_a_new_loop(slow_to_please):
    deps, loop_input = slow_to_please
    saver = InMemorySaver()
    config = loop_config("paused-thread", MAX_ROUNDS)
    paused = build_graph().compile(checkpointer=saver, interrupt_after=["memory_update"])
    state = await paused.ainvoke(
        loop_input, config, context=deps
    )  # loop 1 paused after its first (rejected) round
    assert state["loop_index"] == 1 and len(state["rounds"]) == 1 and state["stop_reason"] is None

    graph = build_graph().compile(checkpointer=saver)
    fresh = await graph.ainvoke({**loop_input, "max_rounds": 2}, config, context=deps)
    assert fresh["loop_index"] == 2
    assert [(r["loop_index"], r["round"]) for r in fresh["rounds"]] == [(2, 1), (2, 2)]
    assert fresh["user_memory"][0] == state["user_memory"][0]  # loop 1's rejection is remembered


async def test_new_input_while_a_human_answer_is_pending_opens_a_new_loop(slow_to_please):
    deps, loop_input = slow_to_please
    graph = build_graph().compile(checkpointer=InMemorySaver())
    config = loop_config("abandoned-thread", MAX_ROUNDS)
    waiting = await graph.ainvoke({**loop_input, "judge_mode": "human"}, config, context=deps)
    assert waiting["__interrupt__"]
    fresh = await graph.ainvoke({**loop_input, "judge_mode": "agent"}, config, context=deps)
    assert fresh["loop_index"] == 2 and fresh["rounds"][0]["round"] == 1
    assert fresh["stop_reason"] in ("accepted", "max_rounds")
    assert not (await graph.aget_state(config)).next


async def test_input_without_the_marker_opens_a_loop_only_after_the_last_one_ended(slow_to_please):
    deps, loop_input = slow_to_please
    unmarked = {k: v for k, v in loop_input.items() if k != "new_loop"}
    saver = InMemorySaver()
    config = loop_config("unmarked-thread", MAX_ROUNDS)
    graph = build_graph().compile(checkpointer=saver)
    first = await graph.ainvoke({**unmarked, "max_rounds": 1}, config, context=deps)  # a thread's first loop
    second = await graph.ainvoke({**unmarked, "max_rounds": 1}, config, context=deps)  # the first one ended
    assert (first["loop_index"], second["loop_index"]) == (1, 2)

    paused = build_graph().compile(checkpointer=saver, interrupt_after=["memory_update"])
    open_loop = await paused.ainvoke({**loop_input, "max_rounds": 3}, config, context=deps)
    assert open_loop["loop_index"] == 3 and open_loop["stop_reason"] is None
    # unmarked input on an open loop continues it; the marker is what opens a new one mid-loop
    assert (await graph.ainvoke(unmarked, config, context=deps))["loop_index"] == 3
    assert (await graph.ainvoke({**loop_input, "max_rounds": 1}, config, context=deps))["loop_index"] == 4


async def test_a_loop_stores_no_copy_of_the_state_in_its_task_writes(slow_to_please):
    deps, loop_input = slow_to_please
    saver = InMemorySaver()
    config = loop_config("lean-thread", MAX_ROUNDS)
    graph = build_graph().compile(checkpointer=saver)
    await graph.ainvoke(loop_input, config, context=deps)
    await graph.ainvoke(
        loop_input, config, context=deps
    )  # the second loop starts with four remembered rounds
    writes = [w for saved in saver.list(config) for w in saved.pending_writes or []]
    assert writes and {channel for _, channel, _ in writes} >= {"proposal", "rounds"}
    assert [
        w for w in writes if w[1] == "__pregel_tasks"
    ] == []  # new input marks itself; nothing sends the whole state to `recommend`
