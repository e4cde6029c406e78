"""The pooled write-behind saver: every checkpoint kept, rounds committed when they close, stock format."""

from __future__ import annotations

import asyncio

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.types import Command

from app.db.engine import checkpoint_pool
from graph.builder import build_graph
from graph.runner import loop_config
from llm.usage import empty_usage
from postgres import checkpoints
from postgres.checkpoints import PooledPostgresSaver

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
    saver.background_commits = False  # each round's commit finishes before the graph goes on
    deps = service_loop_deps["offline"]
    graph = build_graph().compile(checkpointer=saver)
    thread = "write-behind-rounds"
    config = loop_config(thread, 4)
    loop_input = {"history": HISTORY, "candidates": CANDIDATES, "max_rounds": 4, "judge_mode": "human"}

    # Round 1 judged by a "human" (reject), round 2 pauses at the judge.
    await graph.ainvoke(loop_input, config, durability="sync", context=deps)
    await saver.aflush(thread)
    seen_during_round_2: list[tuple[str, int, bool]] = []
    stored = len(await _stored(saver.pool, thread))
    async for update in graph.astream(
        Command(resume={"decision": "reject", "reason": "not tonight"}),
        config,
        durability="sync",
        context=deps,
    ):
        node = next(iter(update))
        committed = await reader.aget_tuple({"configurable": {"thread_id": thread}})
        stored, before = len(await _stored(saver.pool, thread)), stored
        seen_during_round_2.append((node, _committed_rounds(committed), stored > before))

    # Each step's checkpoint is written before the next step starts (durability "sync"), but only
    # the one that closes round 1 (memory_update) is committed; the judge step before it and round
    # 2's steps after it stay in memory until the round closes or the run ends and is flushed.
    assert seen_during_round_2 == [
        ("judge", 0, False),
        ("memory_update", 1, True),
        ("recommend", 1, False),
        ("score", 1, False),
        ("__interrupt__", 1, False),
    ]
    await saver.aflush(thread)
    assert len(await _stored(saver.pool, thread)) > stored  # round 2's steps, committed by the flush

    # The stock saver reads the flushed state, including the pending interrupt of round 2.
    state = await build_graph().compile(checkpointer=reader).aget_state(config)
    assert len(state.values["rounds"]) == 1 and state.values["rounds"][0]["user_reason"] == "not tonight"
    assert [i.value["round"] for task in state.tasks for i in task.interrupts] == [2]


async def test_concurrent_threads_do_not_wait_for_each_other(savers, service_loop_deps):
    saver, reader = savers
    deps = service_loop_deps["offline"]
    graph = build_graph().compile(checkpointer=saver)
    loop_input = {"history": HISTORY, "candidates": CANDIDATES, "max_rounds": 4}

    async def run(thread: str) -> dict:
        result = await graph.ainvoke(loop_input, loop_config(thread, 4), context=deps)
        await saver.aflush(thread)
        return result

    results = await asyncio.gather(*(run(f"parallel-{i}") for i in range(8)))
    for i, result in enumerate(results):
        committed = await reader.aget_tuple({"configurable": {"thread_id": f"parallel-{i}"}})
        assert _committed_rounds(committed) == len(result["rounds"])
        assert committed.checkpoint["channel_values"]["final_item"] == result["final_item"]


async def test_reads_flush_pending_writes_first(savers, service_loop_deps):
    saver, _ = savers
    deps = service_loop_deps["offline"]
    graph = build_graph().compile(checkpointer=saver)
    thread = "read-your-writes"
    loop_input = {"history": HISTORY, "candidates": CANDIDATES, "max_rounds": 2, "judge_mode": "human"}
    await graph.ainvoke(loop_input, loop_config(thread, 2), context=deps)
    stored = len(await _stored(saver.pool, thread))  # the pause's writes are not committed yet...
    state = await graph.aget_state(loop_config(thread, 2))  # ...but a read sees them
    assert len(await _stored(saver.pool, thread)) > stored
    assert [i.value["round"] for task in state.tasks for i in task.interrupts] == [1]


async def _stored(pool, thread: str) -> list[tuple[str, str | None]]:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT checkpoint_id, parent_checkpoint_id FROM checkpoints WHERE thread_id = %s "
            "ORDER BY checkpoint_id",
            (thread,),
        )
        return [(row["checkpoint_id"], row["parent_checkpoint_id"]) for row in await cur.fetchall()]


def _history_shape(history) -> list[tuple]:
    """What a state history says, without ids and timestamps (they differ between savers)."""
    return [
        (
            snapshot.metadata["step"],
            snapshot.metadata["source"],
            snapshot.next,
            snapshot.values.get("loop_index"),
            len(snapshot.values.get("rounds") or []),
            snapshot.parent_config is None,
        )
        for snapshot in history
    ]


async def test_every_checkpoint_is_kept_and_the_history_matches_the_in_memory_saver(
    savers, service_loop_deps
):
    saver, reader = savers
    deps = service_loop_deps["offline"]
    graph = build_graph().compile(checkpointer=saver)
    reference = build_graph().compile(checkpointer=InMemorySaver())
    thread = "group-commit"
    loop_input = {"history": HISTORY, "candidates": CANDIDATES, "max_rounds": 4}
    for _ in range(3):  # three loops on one thread, each resuming from what the last one committed
        result = await graph.ainvoke(loop_input, loop_config(thread, 4), context=deps)
        expected = await reference.ainvoke(loop_input, loop_config(thread, 4), context=deps)
        assert result == expected
        await saver.aflush(thread)

    # The stock saver reads back the same history, step by step, as LangGraph's in-memory saver has.
    config = loop_config(thread, 4)
    stored = [s async for s in build_graph().compile(checkpointer=reader).aget_state_history(config)]
    in_memory = [s async for s in reference.aget_state_history(config)]
    assert _history_shape(stored) == _history_shape(in_memory)
    assert len(stored) > 3 * 4  # at least one checkpoint per step, not one per round
    rows = await _stored(saver.pool, thread)
    assert len(rows) == len(stored)
    ids = {checkpoint_id for checkpoint_id, _ in rows}
    assert [parent for _, parent in rows if parent not in ids] == [None]  # one unbroken chain


async def test_replay_fork_and_update_state_from_a_past_checkpoint(savers, service_loop_deps):
    saver, _ = savers
    saver.commit_delay_s = 0.02  # as the service runs it
    deps = service_loop_deps["offline"]
    graph = build_graph().compile(checkpointer=saver)
    thread = "time-travel"
    config = loop_config(thread, 3)
    loop_input = {"history": HISTORY, "candidates": CANDIDATES, "max_rounds": 3, "judge_mode": "human"}
    await graph.ainvoke(loop_input, config, context=deps)
    await graph.ainvoke(Command(resume={"decision": "reject", "reason": "seen it"}), config, context=deps)
    history = [s async for s in graph.aget_state_history(config)]
    assert [i.value["round"] for task in history[0].tasks for i in task.interrupts] == [2]

    # Replay from the checkpoint before round 1's judge: the human is asked about round 1 again.
    before_judge = next(s for s in history if s.next == ("judge",) and not s.values.get("rounds"))
    replayed = await graph.ainvoke(None, before_judge.config, context=deps)
    assert replayed["__interrupt__"][0].value["round"] == 1

    # Fork: answer round 1 as if the judge node had accepted; the fork ends the loop there.
    judgement = {"decision": "accept", "reason": "a fork", "preferred_items": [], "fallback": False}
    forked = await graph.aupdate_state(
        before_judge.config, {"judgement": {**judgement, "usage": empty_usage()}}, as_node="judge"
    )
    assert forked["configurable"]["checkpoint_id"] != before_judge.config["configurable"]["checkpoint_id"]
    fork_state = await graph.aget_state(forked)
    assert fork_state.next == ("memory_update",)
    assert (
        fork_state.parent_config["configurable"]["checkpoint_id"]
        == (before_judge.config["configurable"]["checkpoint_id"])
    )
    finished = await graph.ainvoke(None, forked, context=deps)
    assert finished["stop_reason"] == "accepted" and finished["rounds"][-1]["user_reason"] == "a fork"
    assert finished["final_item"] == before_judge.values["proposal"]["item"]
    # The fork is the thread's newest state now; the original branch is still in the history.
    every = [s async for s in graph.aget_state_history(config)]
    assert every[0].values["final_item"] == finished["final_item"]
    assert {s.config["configurable"]["checkpoint_id"] for s in history} <= {
        s.config["configurable"]["checkpoint_id"] for s in every
    }


async def test_a_failed_commit_is_retried_and_nothing_is_lost(savers, service_loop_deps, monkeypatch):
    saver, reader = savers
    deps = service_loop_deps["offline"]
    graph = build_graph().compile(checkpointer=saver)
    thread = "failed-commit"
    real_execute = saver._execute
    failures = []

    async def fail_first(statements):
        if not failures:
            failures.append(len(statements))
            raise OSError("connection lost")
        await real_execute(statements)

    monkeypatch.setattr(saver, "_execute", fail_first)
    result = await graph.ainvoke(
        {"history": HISTORY, "candidates": CANDIDATES, "max_rounds": 4}, loop_config(thread, 4), context=deps
    )
    await saver.aflush(thread)
    assert failures
    committed = await reader.aget_tuple({"configurable": {"thread_id": thread}})
    assert _committed_rounds(committed) == len(result["rounds"])
    assert committed.checkpoint["channel_values"]["final_item"] == result["final_item"]


async def test_aflush_raises_when_the_database_stays_away(savers, service_loop_deps, monkeypatch):
    saver, reader = savers
    deps = service_loop_deps["offline"]
    graph = build_graph().compile(checkpointer=saver)

    async def always_fail(statements):
        raise OSError("connection lost")

    monkeypatch.setattr(saver, "_execute", always_fail)
    thread = "database-gone"
    result = await graph.ainvoke(
        {"history": HISTORY, "candidates": CANDIDATES, "max_rounds": 2}, loop_config(thread, 2), context=deps
    )
    with pytest.raises(OSError):
        await saver.aflush(thread)
    monkeypatch.undo()  # the database is back: the writes were kept, a later flush commits them
    await saver.aflush(thread)
    committed = await reader.aget_tuple({"configurable": {"thread_id": thread}})
    assert _committed_rounds(committed) == len(result["rounds"])


async def test_commit_delay_lets_a_run_commit_once_and_a_failed_handover_keeps_the_writes(
    savers, service_loop_deps, monkeypatch
):
    saver, reader = savers
    transactions = []
    real_run = checkpoints._run

    async def counted(cur, rows):
        transactions.append(len(rows))
        await real_run(cur, rows)

    monkeypatch.setattr(checkpoints, "_run", counted)
    saver.commit_delay_s = 30.0  # far longer than the run: its rounds wait for the final commit
    deps = service_loop_deps["offline"]
    graph = build_graph().compile(checkpointer=saver)
    thread = "delayed-commit"
    result = await graph.ainvoke(
        {"history": HISTORY, "candidates": CANDIDATES, "max_rounds": 4}, loop_config(thread, 4), context=deps
    )
    assert await reader.aget_tuple({"configurable": {"thread_id": thread}}) is None

    # The caller's transaction fails: the writes go back to the buffer, nothing is committed.
    with pytest.raises(RuntimeError):
        async with saver.commit_with(thread) as statements:
            assert statements
            raise RuntimeError("history write failed")
    assert await reader.aget_tuple({"configurable": {"thread_id": thread}}) is None

    await saver.aflush(thread)  # does not wait out the delay, and commits once
    committed = await reader.aget_tuple({"configurable": {"thread_id": thread}})
    assert _committed_rounds(committed) == len(result["rounds"])
    assert transactions == [len(statements)]
    # The input checkpoint, the start step and four steps per round.
    assert len(await _stored(saver.pool, thread)) == len(result["rounds"]) * 4 + 2


def _as_read(found):
    """A checkpoint tuple with what differs between two correct reads (nothing) made comparable."""
    return (found.config, found.checkpoint, found.metadata, found.parent_config, found.pending_writes)


async def test_the_latest_checkpoint_is_answered_from_what_the_worker_wrote(
    savers, service_loop_deps, monkeypatch
):
    saver, reader = savers
    deps = service_loop_deps["offline"]
    graph = build_graph().compile(checkpointer=saver)
    thread = "tip-cache"
    latest = {"configurable": {"thread_id": thread}}
    # A paused loop: the newest checkpoint has task writes (the judge's interrupt) as well.
    await graph.ainvoke(
        {"history": HISTORY, "candidates": CANDIDATES, "max_rounds": 2, "judge_mode": "human"},
        loop_config(thread, 2),
        context=deps,
    )
    stock_reads = []
    real_stock_saver = checkpoints.stock_saver

    def counted(conn, serde):
        stock_reads.append(1)
        return real_stock_saver(conn, serde)

    monkeypatch.setattr(checkpoints, "stock_saver", counted)
    cached = await saver.aget_tuple(latest)
    assert stock_reads == []  # one index lookup, no blobs fetched
    assert cached.pending_writes  # the interrupt is among them
    assert _as_read(cached) == _as_read(await reader.aget_tuple(latest))

    # The run resumes from the cached tip exactly as from the stored one.
    await graph.ainvoke(
        Command(resume={"decision": "reject", "reason": "no"}), loop_config(thread, 2), context=deps
    )
    assert _as_read(await saver.aget_tuple(latest)) == _as_read(await reader.aget_tuple(latest))
    assert stock_reads == []
    # A past checkpoint is read from the database (it has the resume's writes by now).
    past = await saver.aget_tuple(
        {"configurable": {**latest["configurable"], **cached.config["configurable"]}}
    )
    assert stock_reads == [1] and _as_read(past)[:4] == _as_read(cached)[:4]
    assert len(past.pending_writes) > len(cached.pending_writes)


async def test_a_tip_written_elsewhere_since_is_not_used(savers, service_loop_deps, service_settings):
    saver, reader = savers
    deps = service_loop_deps["offline"]
    other_worker = PooledPostgresSaver(saver.pool)  # same database, its own buffers and tips
    thread = "tip-elsewhere"
    latest = {"configurable": {"thread_id": thread}}
    loop_input = {"history": HISTORY, "candidates": CANDIDATES, "max_rounds": 4}
    await build_graph().compile(checkpointer=saver).ainvoke(loop_input, loop_config(thread, 4), context=deps)
    await saver.aflush(thread)
    await (
        build_graph()
        .compile(checkpointer=other_worker)
        .ainvoke(loop_input, loop_config(thread, 4), context=deps)
    )
    await other_worker.aflush(thread)

    found = await saver.aget_tuple(latest)
    assert found.checkpoint["channel_values"]["loop_index"] == 2  # the other worker's loop
    assert _as_read(found) == _as_read(await reader.aget_tuple(latest))
    # Deleting the thread forgets the tip as well.
    await saver.adelete_thread(thread)
    assert await saver.aget_tuple(latest) is None


async def test_no_tips_are_kept_when_the_cache_is_off(savers, service_loop_deps):
    saver, _ = savers
    saver.cached_threads = 0
    deps = service_loop_deps["offline"]
    graph = build_graph().compile(checkpointer=saver)
    await graph.ainvoke(
        {"history": HISTORY, "candidates": CANDIDATES, "max_rounds": 2},
        loop_config("no-tip", 2),
        context=deps,
    )
    assert not saver._tips
    assert (await saver.aget_tuple({"configurable": {"thread_id": "no-tip"}})) is not None
