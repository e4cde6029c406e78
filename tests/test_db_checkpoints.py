"""The pooled write-behind saver: rounds are committed when they close, in the stock saver's format."""

from __future__ import annotations

import asyncio

import pytest
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.types import Command

from app.db.engine import checkpoint_pool
from app.services.checkpoints import PooledPostgresSaver
from graph.builder import build_graph
from graph.runner import loop_config

pytestmark = pytest.mark.integration

HISTORY = [49, 180, 257, 293, 0, 171]
CANDIDATES = [5, 10, 15, 20, 25, 30, 35, 40]


@pytest.fixture
async def savers(service_settings, service_db_url):
    """The service's saver and, on its own pool, a stock saver that reads what is committed."""
    writer_pool = checkpoint_pool(service_db_url, service_settings)
    reader_pool = checkpoint_pool(service_db_url, service_settings)
    await writer_pool.open()
    await reader_pool.open()
    try:
        yield PooledPostgresSaver(writer_pool), AsyncPostgresSaver(conn=reader_pool)
    finally:
        await writer_pool.close()
        await reader_pool.close()


def _committed_rounds(checkpoint) -> int:
    return len(checkpoint.checkpoint["channel_values"].get("rounds") or []) if checkpoint else 0


async def test_a_round_is_committed_when_it_closes_and_not_before(savers, service_loop_deps):
    saver, reader = savers
    graph = build_graph(service_loop_deps["offline"]).compile(checkpointer=saver)
    thread = "write-behind-rounds"
    config = loop_config(thread, 4)
    loop_input = {"history": HISTORY, "candidates": CANDIDATES, "max_rounds": 4, "judge_mode": "human"}

    # Round 1 judged by a "human" (reject), round 2 pauses at the judge.
    await graph.ainvoke(loop_input, config, durability="sync")
    await saver.aflush(thread)
    seen_during_round_2: list[tuple[str, int, bool]] = []
    async for update in graph.astream(
        Command(resume={"decision": "reject", "reason": "not tonight"}), config, durability="sync"
    ):
        node = next(iter(update))
        committed = await reader.aget_tuple({"configurable": {"thread_id": thread}})
        pending = bool(saver._pending.get(thread))
        seen_during_round_2.append((node, _committed_rounds(committed), pending))

    # Each step's checkpoint is written before the next step starts (durability "sync"), but only
    # the one that closes round 1 (memory_update) is committed; the judge step before it and round
    # 2's steps after it stay in memory until the round closes or the run ends and is flushed.
    assert seen_during_round_2 == [
        ("judge", 0, True),
        ("memory_update", 1, False),
        ("recommend", 1, True),
        ("score", 1, True),
        ("__interrupt__", 1, True),
    ]
    await saver.aflush(thread)
    assert not saver._pending.get(thread)

    # The stock saver reads the flushed state, including the pending interrupt of round 2.
    state = await build_graph(service_loop_deps["offline"]).compile(checkpointer=reader).aget_state(config)
    assert len(state.values["rounds"]) == 1 and state.values["rounds"][0]["user_reason"] == "not tonight"
    assert [i.value["round"] for task in state.tasks for i in task.interrupts] == [2]


async def test_concurrent_threads_do_not_wait_for_each_other(savers, service_loop_deps):
    saver, reader = savers
    graph = build_graph(service_loop_deps["offline"]).compile(checkpointer=saver)
    loop_input = {"history": HISTORY, "candidates": CANDIDATES, "max_rounds": 4}

    async def run(thread: str) -> dict:
        result = await graph.ainvoke(loop_input, loop_config(thread, 4))
        await saver.aflush(thread)
        return result

    results = await asyncio.gather(*(run(f"parallel-{i}") for i in range(8)))
    for i, result in enumerate(results):
        committed = await reader.aget_tuple({"configurable": {"thread_id": f"parallel-{i}"}})
        assert _committed_rounds(committed) == len(result["rounds"])
        assert committed.checkpoint["channel_values"]["final_item"] == result["final_item"]
    assert not any(saver._pending.values())


async def test_reads_flush_pending_writes_first(savers, service_loop_deps):
    saver, _ = savers
    graph = build_graph(service_loop_deps["offline"]).compile(checkpointer=saver)
    thread = "read-your-writes"
    loop_input = {"history": HISTORY, "candidates": CANDIDATES, "max_rounds": 2, "judge_mode": "human"}
    await graph.ainvoke(loop_input, loop_config(thread, 2))
    assert saver._pending.get(thread)  # the pause's writes are not committed yet...
    state = await graph.aget_state(loop_config(thread, 2))  # ...but a read sees them
    assert not saver._pending.get(thread)
    assert [i.value["round"] for task in state.tasks for i in task.interrupts] == [1]
