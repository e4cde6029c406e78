"""A run's events, recorded as the graph streams them, for every client that reads the run.

The loop runs in a task of its own (:func:`app.services.loops.start_run`) and adds each event
here; each stream (``/v1``'s, LangGraph protocol's, a client joining a run) follows the log from
some position. A reader that goes away stops reading, never the run.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from app.services.errors import ServiceError
from graph.runner import LoopEvent


class RunEvents:
    """What a run of this worker streamed, in order, kept while it runs: each reader (the client that
    started it, any that join it later) follows it from any position, and a reader that goes away
    stops reading, never the run."""

    def __init__(self, modes: frozenset[str], *, assistant_id: str | None = None, input: Any = None):
        self.modes = modes
        """The graph's stream modes the run records (graph.runner.EVENT_MODES; updates always)."""
        self.assistant_id, self.input = assistant_id, input
        """The assistant the run runs and the input it was given (what its streams say it started with)."""
        self.events: list[LoopEvent] = []
        self.error: dict[str, str] | None = None
        """Why the run ended without finishing (``{"error", "message"}``), once it has."""
        self.done = False
        self._signal = asyncio.Event()

    async def add(self, event: LoopEvent) -> None:
        self.events.append(event)
        self._wake()

    def close(self, error: dict[str, str] | None = None) -> None:
        self.error, self.done = error, True
        self._wake()

    def close_after(self, task: asyncio.Task) -> None:
        """Close the log for the run's ``task``, which has ended, with why if it did not finish."""
        self.close(_why_it_ended(task))

    def _wake(self) -> None:
        self._signal.set()
        self._signal = asyncio.Event()

    async def follow(self, start: int = 0) -> AsyncIterator[tuple[int, LoopEvent]]:
        """Each event from position ``start`` on, with its position, until the run has ended."""
        position = start
        while True:
            signal = self._signal  # taken before looking, so an event added meanwhile wakes it
            if position < len(self.events):
                yield position, self.events[position]
                position += 1
            elif self.done:
                return
            else:
                await signal.wait()


def _why_it_ended(task: asyncio.Task) -> dict[str, str] | None:
    if task.cancelled():
        return {"error": "CancelledError", "message": "the run was cancelled"}
    exc = task.exception()
    if exc is None:
        return None
    if isinstance(exc, ServiceError):
        return {"error": type(exc).__name__, "message": exc.detail}
    return {"error": type(exc).__name__, "message": "the loop did not finish"}


@dataclass(frozen=True)
class TrackedRun:
    """A LangGraph protocol run of this worker while it runs (app/services/protocol_runs.py): its
    task (to join and cancel it) and its events (to stream them)."""

    task: asyncio.Task
    events: RunEvents


ProtocolRuns = dict[str, TrackedRun]
"""This worker's running protocol runs by run id."""
