"""How /v1 streams a loop: events queued by the run, relayed to the client (LangGraph's protocol
reads a run's recorded events instead: app/api/protocol_stream.py).

The loop runs in a task of its own (:func:`app.services.loops.start_run`); ``finish`` awaits it
and queues the last events. A client that goes away stops reading, not the loop: the relay
waits for ``finish`` (shielded) before it closes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine
from typing import Any

from sse_starlette import ServerSentEvent

from app.services.runtime import ServiceResources

EventQueue = asyncio.Queue[ServerSentEvent | None]


def relay(
    res: ServiceResources, events: EventQueue, finish: Coroutine[Any, Any, None]
) -> AsyncIterator[ServerSentEvent]:
    """Relay ``events`` until ``finish`` (queueing the last ones) is done."""

    async def finish_then_close() -> None:
        try:
            await finish
        finally:
            await events.put(None)

    closing = asyncio.ensure_future(finish_then_close())
    res.streams.add(closing)  # referenced until done, so it is not collected
    closing.add_done_callback(res.streams.discard)

    async def relayed() -> AsyncIterator[ServerSentEvent]:
        try:
            while (event := await events.get()) is not None:
                yield event
        finally:
            await asyncio.shield(closing)  # the client's cancellation cannot interrupt the loop

    return relayed()
