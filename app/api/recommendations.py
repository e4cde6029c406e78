"""/v1/sessions/{id}/recommendations, /feedback and /loops: run the loop and read its history.

With ``Accept: text/event-stream`` a recommendation (or feedback) streams each node's update
as a Server-Sent Event and ends with a ``result`` event carrying the same body as the JSON reply.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Annotated

from fastapi import APIRouter, Header, Path, Query
from sse_starlette import EventSourceResponse, ServerSentEvent

from app.api.deps import CallerDep, CatalogDep, DatabaseDep, RunnerDep, SteeringDep
from app.api.openapi import IDEMPOTENT, V1_ERRORS, error_responses
from app.api.schemas import (
    MAX_OFFSET,
    FeedbackCreate,
    LoopCancel,
    LoopPublic,
    LoopsPublic,
    LoopStatus,
    RecommendationCreate,
    RecommendationPublic,
)
from app.services import loop_cancel
from app.services import loops as service
from app.services.errors import ServiceError
from app.services.loops import LoopRequest, LoopRun
from app.services.run_events import RunEvents
from app.services.service_runner import ServiceRunner
from recmodels.dataset import Dataset

STREAM_DOC = {
    200: {"content": {"text/event-stream": {}}, "description": "JSON, or SSE when asked."},
    **error_responses(409, 500),
}
router = APIRouter(
    prefix="/v1/sessions", tags=["recommendations"], responses={**V1_ERRORS, **error_responses(404)}
)

AcceptHeader = Annotated[str | None, Header(include_in_schema=False)]


async def _respond(
    runner: ServiceRunner, catalog: Dataset, opening: AbstractAsyncContextManager[LoopRun], accept: str | None
) -> RecommendationPublic | EventSourceResponse:
    if not accept or "text/event-stream" not in accept:
        async with opening as run:
            return RecommendationPublic.from_outcome(await run.run(), catalog)
    # Enter the lock before answering, so 404/409/422 are real status codes, not stream events.
    return EventSourceResponse(await _stream(runner, catalog, opening), ping=15)


async def _stream(
    runner: ServiceRunner, catalog: Dataset, opening: AbstractAsyncContextManager[LoopRun]
) -> AsyncIterator[ServerSentEvent]:
    """Start the loop now and return its events.

    The loop runs in a task of its own (:func:`app.services.loops.start_run`), started before the
    response is, and records its events (app/services/run_events.py), which the stream follows:
    a client that goes away (even before the stream's first event) stops reading, never the loop.
    """
    events = RunEvents(frozenset())
    _, task = await service.start_run(runner, opening, on_event=events.add)
    task.add_done_callback(events.close_after)

    async def stream() -> AsyncIterator[ServerSentEvent]:
        async for _, event in events.follow():
            data = json.dumps({"node": event.node, "update": event.data})
            yield ServerSentEvent(data=data, event="interrupt" if event.is_interrupt else "update")
        try:
            outcome = await task  # it has ended: the log is closed when it does
            public = RecommendationPublic.from_outcome(outcome, catalog)
            yield ServerSentEvent(data=public.model_dump_json(), event="result")
        except ServiceError as exc:
            body = {"detail": exc.detail, "field": exc.field, "status": exc.status}
            yield ServerSentEvent(data=json.dumps(body), event="error")
        except Exception as exc:  # the stream has started: report, do not hang the client
            body = {"detail": f"loop failed: {type(exc).__name__}", "field": None, "status": 500}
            yield ServerSentEvent(data=json.dumps(body), event="error")

    return stream()


@router.post(
    "/{session_id}/recommendations",
    response_model=RecommendationPublic,
    responses=STREAM_DOC,
    dependencies=IDEMPOTENT,
)
async def recommend(
    session_id: uuid.UUID,
    body: RecommendationCreate,
    database: DatabaseDep,
    runner: RunnerDep,
    models: SteeringDep,
    catalog: CatalogDep,
    caller: CallerDep,
    accept: AcceptHeader = None,
):
    """Run one feedback loop for the session and return the recommended item, its reason and every round."""
    request = LoopRequest(
        candidates=body.candidates, max_rounds=body.max_rounds, agents=body.agents, judge_mode=body.judge_mode
    )
    opening = service.open_loop(database, runner, models, caller, session_id, request)
    return await _respond(runner, catalog, opening, accept)


@router.post(
    "/{session_id}/feedback",
    response_model=RecommendationPublic,
    responses=STREAM_DOC,
    dependencies=IDEMPOTENT,
)
async def feedback(
    session_id: uuid.UUID,
    body: FeedbackCreate,
    database: DatabaseDep,
    runner: RunnerDep,
    models: SteeringDep,
    catalog: CatalogDep,
    caller: CallerDep,
    accept: AcceptHeader = None,
):
    """Answer the proposal a human-judged loop waits on; the loop resumes (and may ask again)."""
    opening = service.open_feedback(
        database, runner, models, caller, session_id, decision=body.decision, reason=body.reason
    )
    return await _respond(runner, catalog, opening, accept)


@router.get("/{session_id}/loops", response_model=LoopsPublic)
async def loop_history(
    session_id: uuid.UUID,
    database: DatabaseDep,
    caller: CallerDep,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    status: LoopStatus | None = None,
) -> LoopsPublic:
    """The session's loops, newest first, each with its parameters, outcome, timings and rounds.

    A loop is ``running`` while it runs and ``failed`` (with ``error``) if it raised; either way it
    keeps its number. ``status`` keeps the loops of one status."""
    rows, count = await service.loop_history(
        database, caller, session_id, limit=limit, offset=offset, status=status
    )
    return LoopsPublic(data=[LoopPublic.model_validate(r) for r in rows], count=count)


@router.post(
    "/{session_id}/loops/{loop_index}/cancel",
    response_model=LoopPublic,
    responses={**error_responses(409)},
)
async def cancel_loop(
    session_id: uuid.UUID,
    loop_index: Annotated[int, Path(ge=1, le=1_000_000)],
    database: DatabaseDep,
    runner: RunnerDep,
    caller: CallerDep,
    body: LoopCancel = None,  # type: ignore[assignment]  (optional: no body, no reason)
) -> LoopPublic:
    """Abandon a loop paused at its human judge: it is recorded ``failed``, its ``error`` saying the
    client abandoned it (with ``reason``), its proposal is no longer pending, and the session takes
    the next recommendation. 409 for a loop that does not wait for feedback (running or ended)."""
    await service.get_loop(database, caller, session_id, loop_index)  # 404 for a loop the session has not
    await loop_cancel.abandon_paused(
        database, runner, caller, session_id, loop_index, reason=body.reason if body else None
    )
    return LoopPublic.model_validate(await service.get_loop(database, caller, session_id, loop_index))
