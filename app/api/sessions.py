"""/v1/sessions: create, list, read, record consumption, delete."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from app.api.deps import CallerDep, CatalogDep, DatabaseDep, RunnerDep, SettingsDep
from app.api.openapi import IDEMPOTENT, V1_ERRORS, error_responses
from app.api.schemas import (
    MAX_OFFSET,
    NO_NUL,
    ConsumptionCreate,
    Rfc3339,
    SessionCreate,
    SessionPublic,
    SessionsPublic,
    SessionStatePublic,
    SessionStatus,
)
from app.db.sessions import SessionFilter
from app.services import sessions as service

router = APIRouter(prefix="/v1/sessions", tags=["sessions"], responses=V1_ERRORS)
ON_A_SESSION = error_responses(404)


@router.post(
    "",
    response_model=SessionPublic,
    status_code=status.HTTP_201_CREATED,
    dependencies=IDEMPOTENT,
    responses=error_responses(409),
)
async def create_session(
    body: SessionCreate, database: DatabaseDep, catalog: CatalogDep, settings: SettingsDep, caller: CallerDep
) -> SessionPublic:
    """Start a session for a user with an initial history; its id is also its LangGraph thread id."""
    session = await service.create_session(
        database, catalog, settings, caller, user_id=body.user_id, history=body.history
    )
    return SessionPublic.model_validate(session)


@router.get("", response_model=SessionsPublic)
async def list_sessions(
    database: DatabaseDep,
    caller: CallerDep,
    user_id: Annotated[str | None, Query(max_length=200, pattern=NO_NUL)] = None,
    status: SessionStatus | None = None,
    created_after: Rfc3339 | None = None,
    created_before: Rfc3339 | None = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
) -> SessionsPublic:
    """Your sessions, newest first, filtered by user id, status and creation time."""
    where = SessionFilter(
        user_id=user_id, status=status, created_after=created_after, created_before=created_before
    )
    rows, count = await service.list_sessions(database, caller, where=where, limit=limit, offset=offset)
    return SessionsPublic(data=[SessionPublic.model_validate(r) for r in rows], count=count)


@router.get("/{session_id}", response_model=SessionStatePublic, responses=ON_A_SESSION)
async def get_session(
    session_id: uuid.UUID, database: DatabaseDep, runner: RunnerDep, caller: CallerDep
) -> SessionStatePublic:
    """The session, the agents' memories on its thread, and any proposal awaiting your judgement."""
    state = await service.get_session_state(database, runner, caller, session_id)
    return SessionStatePublic(
        **SessionPublic.model_validate(state.session).model_dump(),
        rec_memory=state.rec_memory,
        user_memory=state.user_memory,
        pending=state.pending,
        usage=state.usage,
    )


@router.post(
    "/{session_id}/consumed",
    response_model=SessionPublic,
    responses=error_responses(404, 409),
    dependencies=IDEMPOTENT,
)
async def record_consumption(
    session_id: uuid.UUID,
    body: ConsumptionCreate,
    database: DatabaseDep,
    catalog: CatalogDep,
    settings: SettingsDep,
    caller: CallerDep,
) -> SessionPublic:
    """Record items the user actually consumed: appended to the history the next loop uses."""
    session = await service.record_consumption(
        database, catalog, settings, caller, session_id, items=body.items
    )
    return SessionPublic.model_validate(session)


@router.delete("/{session_id}", status_code=status.HTTP_204_NO_CONTENT, responses=error_responses(404, 409))
async def delete_session(
    session_id: uuid.UUID, database: DatabaseDep, runner: RunnerDep, caller: CallerDep
) -> Response:
    """Delete the session, its loop history and its checkpoints."""
    await service.delete_session(database, runner, caller, session_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
