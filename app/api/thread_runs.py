"""LangGraph's protocol: /threads/{id}/runs, each one a loop of the session (app/services/protocol_runs.py).

``runs.wait`` answers the thread's state when the loop ends or pauses; ``runs.stream`` sends
``metadata``, then the parts of the modes asked for as the graph runs (app/api/protocol_stream.py),
then ``error`` if the loop failed; ``runs.create`` starts the loop in the background and ``join``,
``join_stream``, ``get`` and ``cancel`` follow it. Every started run records its events in a
:class:`app.services.run_events.RunEvents` that each of its streams reads, so a stream's client
that goes away stops reading, never the loop.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal, NamedTuple

from fastapi import APIRouter, Depends, Header, Query, Response, status
from sse_starlette import EventSourceResponse, ServerSentEvent

from app.api.deps import CallerDep, DatabaseDep, ProtocolRunsDep, RunnerDep, SteeringDep
from app.api.openapi import PROTOCOL_ERRORS, PROTOCOL_TAG
from app.api.protocol_public import final_values
from app.api.protocol_schemas import STREAM_MODES, RunCreate, refuse
from app.api.protocol_stream import BACKGROUND_MODES, ProtocolStream, graph_modes_for, served_modes
from app.api.schemas import MAX_OFFSET
from app.db.database import Database
from app.db.models import Session
from app.services import loops
from app.services import protocol as service
from app.services import protocol_runs as runs_service
from app.services.errors import InvalidInput
from app.services.keys import Caller
from app.services.protocol import AssistantSpec
from app.services.run_events import ProtocolRuns, RunEvents
from app.services.service_runner import ServiceRunner
from app.services.steering_models import SteeringModels
from graph.runner import INTERRUPT, to_plain

router = APIRouter(prefix="/threads/{thread_id}/runs", tags=[PROTOCOL_TAG], responses=PROTOCOL_ERRORS)


class RunParts(NamedTuple):
    """What starting a run takes (runs.wait, runs.stream and runs.create): one dependency for the four."""

    database: Database
    runner: ServiceRunner
    steering: SteeringModels
    runs: ProtocolRuns


async def _run_parts(
    database: DatabaseDep, runner: RunnerDep, steering: SteeringDep, runs: ProtocolRunsDep
) -> RunParts:
    return RunParts(database, runner, steering, runs)


RunPartsDep = Annotated[RunParts, Depends(_run_parts)]


async def _opening(parts: RunParts, caller: Caller, thread_id: str, body: RunCreate):
    refuse(body, thread_id)
    assistant = service.get_assistant(parts.runner, body.assistant_id)
    session = await service.get_thread(parts.database, caller, thread_id)
    resume = body.command.resume if body.command is not None else None
    request = runs_service.RunRequest(assistant=assistant, input=body.input, resume=resume)
    opening = runs_service.open_run(
        parts.database, parts.runner, parts.steering, caller, thread_id, session.id, request
    )
    return session, assistant, opening


def _final_values(run: loops.LoopRun) -> dict[str, Any]:
    """The state the run left (what LangGraph's server answers for a wait or a join)."""
    values = to_plain(run.streamed.values)
    if run.streamed.pending is not None:
        values[INTERRUPT] = run.streamed.interrupts
    return values


@router.post("/wait")
async def wait_run(thread_id: str, body: RunCreate, parts: RunPartsDep, caller: CallerDep) -> dict[str, Any]:
    """Run the loop and answer the state it leaves; the run goes on if the client goes away, unless
    ``on_disconnect="cancel"``, and runs.cancel reaches it meanwhile, as any run of this worker."""
    started = await _started(parts, thread_id, body, caller, frozenset())
    try:
        await asyncio.shield(started.task)  # its error, if it fails, is the answer
    except asyncio.CancelledError:
        if body.on_disconnect == "cancel":
            runs_service.cancel_local(parts.runs, started.run_id)
        raise
    return _final_values(started.run)


class Started(NamedTuple):
    session: Session
    assistant: AssistantSpec
    run: loops.LoopRun
    run_id: str
    events: RunEvents
    task: asyncio.Task


async def _started(
    parts: RunParts, thread_id: str, body: RunCreate, caller: Caller, modes: frozenset[str]
) -> Started:
    """Validate, lock and start the loop in a task of its own that records the events ``modes`` need."""
    session, assistant, opening = await _opening(parts, caller, thread_id, body)
    events = RunEvents(graph_modes_for(modes), assistant_id=assistant.assistant_id, input=body.input)
    run, task = await loops.start_run(parts.runner, opening, on_event=events.add, event_modes=events.modes)
    run_id = runs_service.run_id_for(session.id, run.loop_index)
    runs_service.track(parts.runs, run_id, task, events)
    return Started(session, assistant, run, run_id, events, task)


@router.post("")
async def create_run(
    thread_id: str, body: RunCreate, parts: RunPartsDep, caller: CallerDep
) -> dict[str, Any]:
    """Start the loop in the background (409 while another runs on the thread); it records every
    stream mode, for the clients that join it (``runs.join_stream``)."""
    started = await _started(parts, thread_id, body, caller, BACKGROUND_MODES)
    return runs_service.started_run_public(started.session, started.run, started.assistant)


def _protocol_stream(modes: list[str], thread_id: str, run_id: str, events: RunEvents) -> ProtocolStream:
    return ProtocolStream(
        modes, thread_id=thread_id, run_id=run_id, assistant_id=events.assistant_id, run_input=events.input
    )


async def _sse_stream(
    runs: ProtocolRuns,
    events: RunEvents,
    parts: ProtocolStream,
    *,
    first: list[ServerSentEvent],
    start: int = 0,
    cancel_on_disconnect: bool = False,
) -> AsyncIterator[ServerSentEvent]:
    finished = False
    try:
        for part in first:
            yield part
        async for position, event in events.follow(start):
            for part in parts.parts(position, event):
                yield part
        for part in parts.finish(events.error):
            yield part
        finished = True
    finally:
        if cancel_on_disconnect and not finished:
            runs_service.cancel_local(runs, parts.run_id)


SSE = {200: {"content": {"text/event-stream": {}}, "description": "Server-Sent Events."}}


@router.post("/stream", response_class=EventSourceResponse, responses=SSE)
async def stream_run(
    thread_id: str, body: RunCreate, parts: RunPartsDep, caller: CallerDep
) -> EventSourceResponse:
    """The loop's events as it runs, in the modes asked for (app/api/protocol_stream.py); a client
    that goes away stops reading, not the loop (``on_disconnect="cancel"`` cancels it)."""
    modes = served_modes(body.stream_modes())
    started = await _started(parts, thread_id, body, caller, frozenset(modes))
    run_id, events = started.run_id, started.events
    stream_parts = _protocol_stream(modes, thread_id, run_id, events)
    metadata = ServerSentEvent(data=json.dumps({"run_id": run_id, "attempt": 1}), event="metadata")
    stream = _sse_stream(
        parts.runs,
        events,
        stream_parts,
        first=[metadata],
        cancel_on_disconnect=body.on_disconnect == "cancel",
    )
    # Location: where the SDK reconnects (with Last-Event-ID) if the connection drops mid-run.
    location = {
        "Content-Location": f"/threads/{thread_id}/runs/{run_id}",
        "Location": f"/threads/{thread_id}/runs/{run_id}/stream",
    }
    return EventSourceResponse(stream, ping=15, headers=location)


@router.get("/{run_id}/stream", response_class=EventSourceResponse, responses=SSE)
async def join_run_stream(
    thread_id: str,
    run_id: str,
    database: DatabaseDep,
    runs: ProtocolRunsDep,
    caller: CallerDep,
    stream_mode: Annotated[
        list[str] | None, Query(json_schema_extra={"items": {"enum": ["", *STREAM_MODES]}})
    ] = None,
    cancel_on_disconnect: bool = False,
    last_event_id: Annotated[str | None, Header(json_schema_extra={"pattern": "^[0-9]{1,18}$"})] = None,
) -> EventSourceResponse:
    """Join a run's stream: its events from the start (or after ``Last-Event-ID``), then live, until
    it ends. A run of another worker, or one that has ended, sends nothing (it is waited for first)."""
    start = 0
    if last_event_id is not None:
        if not (last_event_id.isascii() and last_event_id.isdigit() and len(last_event_id) <= 18):
            raise InvalidInput(
                "Last-Event-ID: the id of an event of this stream (a number)", field="Last-Event-ID"
            )
        start = int(last_event_id) + 1
    asked = [mode for mode in stream_mode or () if mode]  # the SDK sends an empty one for "all"
    unknown = sorted(set(asked) - set(STREAM_MODES))
    if unknown:
        raise InvalidInput(
            f"stream_mode: not a stream mode of LangGraph's: {', '.join(map(repr, unknown))} (the modes are "
            f"{', '.join(STREAM_MODES)})",
            field="stream_mode",
        )
    modes = served_modes(asked or list(BACKGROUND_MODES))
    # Checked before joining: a run of another worker is waited for, and bad input must not wait.
    events = await runs_service.joined_events(database, runs, caller, thread_id, run_id)
    if events is None:
        events = RunEvents(frozenset())
        events.close()
    parts = _protocol_stream(modes, thread_id, run_id, events)
    stream = _sse_stream(
        runs, events, parts, first=[], start=start, cancel_on_disconnect=cancel_on_disconnect
    )
    return EventSourceResponse(stream, ping=15)


@router.get("")
async def list_runs(
    thread_id: str,
    database: DatabaseDep,
    caller: CallerDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 10,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    status: Literal["pending", "running", "error", "success", "timeout", "interrupted"] | None = None,
) -> list[dict[str, Any]]:
    return await runs_service.list_runs(
        database, caller, thread_id, limit=limit, offset=offset, status=status
    )


@router.get("/{run_id}")
async def get_run(thread_id: str, run_id: str, database: DatabaseDep, caller: CallerDep) -> dict[str, Any]:
    return await runs_service.get_run(database, caller, thread_id, run_id)


@router.get("/{run_id}/join")
async def join_run(
    thread_id: str,
    run_id: str,
    database: DatabaseDep,
    runner: RunnerDep,
    runs: ProtocolRunsDep,
    caller: CallerDep,
) -> dict[str, Any]:
    """Wait for the run to end or pause; the thread's state then (as for a wait)."""
    session = await runs_service.join_run(database, runs, caller, thread_id, run_id)
    return final_values(await service.thread_state(runner, session))


@router.post("/{run_id}/cancel", status_code=status.HTTP_202_ACCEPTED, response_class=Response)
async def cancel_run(
    thread_id: str,
    run_id: str,
    database: DatabaseDep,
    runner: RunnerDep,
    runs: ProtocolRunsDep,
    caller: CallerDep,
    wait: bool = False,
    action: Annotated[str, Query(max_length=100, json_schema_extra={"enum": ["interrupt"]})] = "interrupt",
    reason: Annotated[str | None, Query(max_length=200)] = None,
) -> Response:
    """runs.cancel: the run ends, recorded as cancelled (status ``interrupted``), running or paused at
    its human judge, and its thread is free. Answered once it has ended, with or without ``wait``."""
    if action != "interrupt":
        raise InvalidInput(
            f"action: {action!r} is not served; 'interrupt' is (a cancelled run keeps its place in the "
            "thread's history, so there is no 'rollback')",
            field="action",
        )
    await runs_service.cancel_run(database, runner, runs, caller, thread_id, run_id, reason=reason)
    return Response(status_code=status.HTTP_202_ACCEPTED)
