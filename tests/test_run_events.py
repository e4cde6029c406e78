"""A run's recorded events: every reader gets all of them, in order, from where it starts, live."""

from __future__ import annotations

import asyncio

import pytest

from app.services.errors import Conflict
from app.services.run_events import RunEvents
from graph.runner import LoopEvent


def _update(node: str) -> LoopEvent:
    return LoopEvent("updates", node, {node: True})


async def _read(events: RunEvents, start: int = 0) -> list[tuple[int, str]]:
    return [(position, event.node) async for position, event in events.follow(start)]


async def test_readers_that_start_before_during_and_after_get_the_same_events():
    events = RunEvents(frozenset())
    early = asyncio.ensure_future(_read(events))
    await events.add(_update("recommend"))
    await asyncio.sleep(0)
    middle = asyncio.ensure_future(_read(events))
    resumed = asyncio.ensure_future(_read(events, start=1))
    await events.add(_update("score"))
    await events.add(_update("judge"))
    assert not early.done()  # a live reader waits for more until the run has ended
    events.close()
    expected = [(0, "recommend"), (1, "score"), (2, "judge")]
    assert await asyncio.wait_for(early, 1) == expected
    assert await asyncio.wait_for(middle, 1) == expected
    assert await asyncio.wait_for(resumed, 1) == expected[1:]
    assert await _read(events) == expected  # after the end: the whole log, then it returns
    assert events.error is None


async def test_a_reader_that_goes_away_changes_nothing_for_the_others():
    events = RunEvents(frozenset())
    leaving = asyncio.ensure_future(_read(events))
    staying = asyncio.ensure_future(_read(events))
    await asyncio.sleep(0)
    leaving.cancel()
    await events.add(_update("recommend"))
    events.close()
    assert await asyncio.wait_for(staying, 1) == [(0, "recommend")]
    assert leaving.cancelled()


@pytest.mark.parametrize(
    ("outcome", "error"),
    [
        ("finished", None),
        ("service error", {"error": "Conflict", "message": "busy"}),
        ("crash", {"error": "RuntimeError", "message": "the loop did not finish"}),
        ("cancelled", {"error": "CancelledError", "message": "the run was cancelled"}),
    ],
)
async def test_the_log_closes_with_why_its_run_ended(outcome, error):
    async def run():
        if outcome == "service error":
            raise Conflict("busy")
        if outcome == "crash":
            raise RuntimeError("internal detail that stays in the logs")
        if outcome == "cancelled":
            await asyncio.sleep(10)

    events = RunEvents(frozenset())
    task = asyncio.ensure_future(run())
    task.add_done_callback(events.close_after)
    if outcome == "cancelled":
        await asyncio.sleep(0)
        task.cancel()
    await asyncio.wait([task])
    await asyncio.sleep(0)  # the done callback runs
    assert events.done and events.error == error
