"""LangGraph's protocol: /threads, which are recloop's sessions (see app/services/protocol.py)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Response, status

from app.api.deps import CallerDep, CatalogDep, DatabaseDep, RunnerDep, SettingsDep
from app.api.openapi import PROTOCOL_ERRORS, PROTOCOL_TAG
from app.api.protocol_public import state_public, thread_public
from app.api.protocol_schemas import (
    HistoryQuery,
    StateAtCheckpoint,
    ThreadCount,
    ThreadCreate,
    ThreadPatch,
    ThreadSearch,
    refuse,
)
from app.services import protocol as service

router = APIRouter(prefix="/threads", tags=[PROTOCOL_TAG], responses=PROTOCOL_ERRORS)


@router.post("")
async def create_thread(
    body: ThreadCreate, database: DatabaseDep, catalog: CatalogDep, settings: SettingsDep, caller: CallerDep
) -> dict[str, Any]:
    """A new session: ``metadata.history`` is the user's history, ``metadata.user_id`` who they are."""
    refuse(body)
    session = await service.create_thread(
        database,
        catalog,
        settings,
        caller,
        metadata=body.metadata,
        thread_id=body.thread_id,
        if_exists=body.if_exists,
    )
    return thread_public(session)


@router.post("/search")
async def search_threads(
    body: ThreadSearch, database: DatabaseDep, settings: SettingsDep, caller: CallerDep
) -> list[dict[str, Any]]:
    refuse(body)
    rows = await service.search_threads(
        database,
        settings,
        caller,
        metadata=body.metadata,
        status=body.status,
        ids=body.ids,
        limit=body.limit,
        offset=body.offset,
        sort_by=body.sort_by,
        sort_order=body.sort_order,
    )
    found = [thread_public(s) for s in rows]
    if body.select:
        found = [{k: v for k, v in thread.items() if k in body.select} for thread in found]
    return found


@router.post("/count")
async def count_threads(
    body: ThreadCount, database: DatabaseDep, settings: SettingsDep, caller: CallerDep
) -> int:
    """How many of the caller's threads match (every one: a count takes no offset or limit)."""
    refuse(body)
    return await service.count_threads(database, settings, caller, metadata=body.metadata, status=body.status)


@router.get("/{thread_id}")
async def get_thread(
    thread_id: str, database: DatabaseDep, runner: RunnerDep, caller: CallerDep
) -> dict[str, Any]:
    session = await service.get_thread(database, caller, thread_id)
    return thread_public(session, await service.thread_state(runner, session))


@router.patch("/{thread_id}", responses={204: {"description": "With `Prefer: return=minimal`."}})
async def update_thread(
    thread_id: str,
    body: ThreadPatch,
    database: DatabaseDep,
    runner: RunnerDep,
    settings: SettingsDep,
    caller: CallerDep,
    prefer: Annotated[str | None, Header(max_length=200)] = None,
) -> Any:
    """threads.update: ``metadata`` merged into the thread's (``user_id`` and ``history`` stay as
    created); the thread as it is then, or 204 with ``Prefer: return=minimal``."""
    refuse(body)
    session = await service.update_thread(database, settings, caller, thread_id, metadata=body.metadata)
    if prefer == "return=minimal":
        return Response(status_code=status.HTTP_204_NO_CONTENT)
    return thread_public(session, await service.thread_state(runner, session))


@router.delete("/{thread_id}", status_code=status.HTTP_204_NO_CONTENT)
async def delete_thread(
    thread_id: str, database: DatabaseDep, runner: RunnerDep, caller: CallerDep
) -> Response:
    """The session, its loop history and its checkpoints (409 while a loop runs on it)."""
    await service.delete_thread(database, runner, caller, thread_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/{thread_id}/state")
async def get_state(
    thread_id: str, database: DatabaseDep, runner: RunnerDep, caller: CallerDep
) -> dict[str, Any]:
    session = await service.get_thread(database, caller, thread_id)
    return state_public(session.thread_id, await service.thread_state(runner, session))


@router.post("/{thread_id}/state/checkpoint")
async def get_state_at(
    thread_id: str, body: StateAtCheckpoint, database: DatabaseDep, runner: RunnerDep, caller: CallerDep
) -> dict[str, Any]:
    """The state at ``checkpoint.checkpoint_id`` (the latest without one): what RemoteGraph reads."""
    session = await service.get_thread(database, caller, thread_id)
    snapshot = await service.thread_state(runner, session, body.checkpoint, field="checkpoint.checkpoint_id")
    return state_public(session.thread_id, snapshot)


@router.get("/{thread_id}/state/{checkpoint_id}")
async def get_state_by_id(
    thread_id: str, checkpoint_id: str, database: DatabaseDep, runner: RunnerDep, caller: CallerDep
) -> dict[str, Any]:
    session = await service.get_thread(database, caller, thread_id)
    return state_public(session.thread_id, await service.thread_state(runner, session, checkpoint_id))


@router.post("/{thread_id}/history")
async def get_history(
    thread_id: str, body: HistoryQuery, database: DatabaseDep, runner: RunnerDep, caller: CallerDep
) -> list[dict[str, Any]]:
    """The thread's states, newest first; ``before`` and ``checkpoint`` name a checkpoint (or its id),
    ``metadata`` filters by the checkpoints' metadata."""
    session, states = await service.state_history(
        database,
        runner,
        caller,
        thread_id,
        limit=body.limit,
        before=body.before,
        at=body.checkpoint,
        metadata=body.metadata,
    )
    return [state_public(session.thread_id, s) for s in states]
