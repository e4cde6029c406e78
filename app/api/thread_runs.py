"""LangGraph's protocol: /threads/{id}/runs, each one a loop of the session (app/services/protocol.py).

``runs.wait`` answers the thread's state when the loop ends or pauses; ``runs.stream`` sends
``metadata``, then ``values`` and/or ``updates`` events as the graph runs (an interrupt is an
``updates`` event ``{"__interrupt__": [{"value", "id"}]}``, and the last ``values`` event
carries it too), then ``error`` if the loop failed; ``runs.create`` starts the loop in the
background and ``join`` / ``get`` / ``cancel`` follow it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Response, status
from sse_starlette import EventSourceResponse, ServerSentEvent

from app.api.deps import CallerDep, ResourcesDep
from app.api.protocol_schemas import RunCreate, final_values
from app.api.sse import EventQueue, relay
from app.services import loops
from app.services import protocol as service
from app.services.errors import InvalidInput, ServiceError
from app.services.keys import Caller
from app.services.runtime import ServiceResources
from graph.runner import INTERRUPT, LoopEvent, to_plain

router = APIRouter(prefix="/threads/{thread_id}/runs", tags=["langgraph"], include_in_schema=False)


async def _opening(res: ServiceResources, caller: Caller, thread_id: str, body: RunCreate):
    refused = body.refused_field()
    if refused is not None:
        raise InvalidInput(f"{refused[0]}: {refused[1]}", field=refused[0])
    assistant = service.get_assistant(res, body.assistant_id)
    session = await service.get_thread(res, caller, thread_id)
    resume = body.command.resume if body.command is not None else None
    request = service.RunRequest(assistant=assistant, input=body.input, resume=resume)
    return session, assistant, service.open_run(res, caller, session.id, request)


def _final_values(run: loops.LoopRun) -> dict[str, Any]:
    """The state the run left (what LangGraph's server answers for a wait or a join)."""
    values = to_plain(run.streamed.values)
    if run.streamed.pending is not None:
        values[INTERRUPT] = run.streamed.interrupts
    return values


@router.post("/wait")
async def wait_run(thread_id: str, body: RunCreate, res: ResourcesDep, caller: CallerDep) -> dict[str, Any]:
    _, _, opening = await _opening(res, caller, thread_id, body)
    async with opening as run:
        await run.run()
    return _final_values(run)


@router.post("")
async def create_run(thread_id: str, body: RunCreate, res: ResourcesDep, caller: CallerDep) -> dict[str, Any]:
    """Start the loop in the background (409 while another runs on the thread)."""
    session, assistant, opening = await _opening(res, caller, thread_id, body)
    run, task = await loops.start_run(res, opening)
    run_id = service.run_id_for(session.id, run.loop_index)
    service.track(res, run_id, task)
    task.add_done_callback(lambda t: t.cancelled() or t.exception())  # recorded in the loop history
    return service.started_run_public(session, run, assistant)


@router.post("/stream")
async def stream_run(
    thread_id: str, body: RunCreate, res: ResourcesDep, caller: CallerDep
) -> EventSourceResponse:
    session, _, opening = await _opening(res, caller, thread_id, body)
    modes = body.stream_modes()
    events: EventQueue = asyncio.Queue()
    last: dict[str, Any] = {}

    metadata_sent = asyncio.Event()  # the run id comes first, before the loop's own events

    async def on_event(event: LoopEvent) -> None:
        await metadata_sent.wait()
        if event.mode == "values":
            last["values"] = event.data
            if "values" in modes:
                await events.put(ServerSentEvent(data=json.dumps(event.data), event="values"))
            return
        if event.is_interrupt and "values" in modes:
            values = {**last.get("values", {}), INTERRUPT: event.interrupts}
            await events.put(ServerSentEvent(data=json.dumps(values), event="values"))
        if "updates" in modes:
            update = {INTERRUPT: event.interrupts} if event.is_interrupt else {event.node: event.data}
            await events.put(ServerSentEvent(data=json.dumps(update), event="updates"))

    run, task = await loops.start_run(res, opening, on_event=on_event, values_events="values" in modes)
    run_id = service.run_id_for(session.id, run.loop_index)
    service.track(res, run_id, task)
    await events.put(ServerSentEvent(data=json.dumps({"run_id": run_id, "attempt": 1}), event="metadata"))
    metadata_sent.set()

    async def finish() -> None:
        try:
            await task
        except ServiceError as exc:
            body = {"error": type(exc).__name__, "message": exc.detail}
            await events.put(ServerSentEvent(data=json.dumps(body), event="error"))
        except BaseException as exc:  # the stream has started: report, do not hang the client
            body = {"error": type(exc).__name__, "message": "the loop did not finish"}
            await events.put(ServerSentEvent(data=json.dumps(body), event="error"))

    location = {"Content-Location": f"/threads/{thread_id}/runs/{run_id}"}
    return EventSourceResponse(relay(res, events, finish()), ping=15, headers=location)


@router.get("")
async def list_runs(
    thread_id: str,
    res: ResourcesDep,
    caller: CallerDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 10,
    offset: Annotated[int, Query(ge=0)] = 0,
    status: Literal["pending", "running", "error", "success", "timeout", "interrupted"] | None = None,
) -> list[dict[str, Any]]:
    return await service.list_runs(res, caller, thread_id, limit=limit, offset=offset, status=status)


@router.get("/{run_id}")
async def get_run(thread_id: str, run_id: str, res: ResourcesDep, caller: CallerDep) -> dict[str, Any]:
    return await service.get_run(res, caller, thread_id, run_id)


@router.get("/{run_id}/join")
async def join_run(thread_id: str, run_id: str, res: ResourcesDep, caller: CallerDep) -> dict[str, Any]:
    """Wait for the run to end or pause; the thread's state then (as for a wait)."""
    session = await service.join_run(res, caller, thread_id, run_id)
    return final_values(await service.thread_state(res, session))


@router.post("/{run_id}/cancel", status_code=status.HTTP_202_ACCEPTED)
async def cancel_run(
    thread_id: str,
    run_id: str,
    res: ResourcesDep,
    caller: CallerDep,
    wait: bool = False,
    action: Literal["interrupt", "rollback"] = "interrupt",
) -> Response:
    """Cancel a background run of this worker; it is recorded as cancelled (status ``interrupted``)."""
    if action != "interrupt":
        raise InvalidInput("action: only 'interrupt' is served (the loop's history is kept)", field="action")
    await service.cancel_run(res, caller, thread_id, run_id, wait=bool(wait))
    return Response(status_code=status.HTTP_202_ACCEPTED)
