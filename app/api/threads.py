"""LangGraph's protocol: /threads, which are recloop's sessions (see app/services/protocol.py)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response, status

from app.api.deps import CallerDep, ResourcesDep
from app.api.protocol_public import state_public, thread_public
from app.api.protocol_schemas import HistoryQuery, StateAtCheckpoint, ThreadCreate, ThreadSearch
from app.services import protocol as service

router = APIRouter(prefix="/threads", tags=["langgraph"], include_in_schema=False)


@router.post("")
async def create_thread(body: ThreadCreate, res: ResourcesDep, caller: CallerDep) -> dict[str, Any]:
    """A new session: ``metadata.history`` is the user's history, ``metadata.user_id`` who they are."""
    session = await service.create_thread(
        res, caller, metadata=body.metadata, thread_id=body.thread_id, if_exists=body.if_exists
    )
    return thread_public(session)


@router.post("/search")
async def search_threads(body: ThreadSearch, res: ResourcesDep, caller: CallerDep) -> list[dict[str, Any]]:
    rows = await service.search_threads(
        res,
        caller,
        metadata=body.metadata,
        status=body.status,
        ids=body.ids,
        limit=body.limit,
        offset=body.offset,
    )
    return [thread_public(s) for s in rows]


@router.post("/count")
async def count_threads(body: ThreadSearch, res: ResourcesDep, caller: CallerDep) -> int:
    rows = await service.search_threads(
        res, caller, metadata=body.metadata, status=body.status, ids=body.ids, limit=10_000, offset=0
    )
    return len(rows)


@router.get("/{thread_id}")
async def get_thread(thread_id: str, res: ResourcesDep, caller: CallerDep) -> dict[str, Any]:
    session = await service.get_thread(res, caller, thread_id)
    return thread_public(session, await service.thread_state(res, session))


@router.delete("/{thread_id}", status_code=status.HTTP_204_NO_CONTENT)
async def delete_thread(thread_id: str, res: ResourcesDep, caller: CallerDep) -> Response:
    """The session, its loop history and its checkpoints (409 while a loop runs on it)."""
    await service.delete_thread(res, caller, thread_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/{thread_id}/state")
async def get_state(thread_id: str, res: ResourcesDep, caller: CallerDep) -> dict[str, Any]:
    session = await service.get_thread(res, caller, thread_id)
    return state_public(session.thread_id, await service.thread_state(res, session))


@router.post("/{thread_id}/state/checkpoint")
async def get_state_at(
    thread_id: str, body: StateAtCheckpoint, res: ResourcesDep, caller: CallerDep
) -> dict[str, Any]:
    """The state at ``checkpoint.checkpoint_id`` (the latest without one): what RemoteGraph reads."""
    session = await service.get_thread(res, caller, thread_id)
    checkpoint_id = body.checkpoint.get("checkpoint_id")
    return state_public(session.thread_id, await service.thread_state(res, session, checkpoint_id))


@router.get("/{thread_id}/state/{checkpoint_id}")
async def get_state_by_id(
    thread_id: str, checkpoint_id: str, res: ResourcesDep, caller: CallerDep
) -> dict[str, Any]:
    session = await service.get_thread(res, caller, thread_id)
    return state_public(session.thread_id, await service.thread_state(res, session, checkpoint_id))


@router.post("/{thread_id}/history")
async def get_history(
    thread_id: str, body: HistoryQuery, res: ResourcesDep, caller: CallerDep
) -> list[dict[str, Any]]:
    """The thread's states, newest first; ``before`` is a checkpoint (or its id)."""
    before = body.before.get("checkpoint_id") if isinstance(body.before, dict) else body.before
    session, states = await service.state_history(res, caller, thread_id, limit=body.limit, before=before)
    return [state_public(session.thread_id, s) for s in states]
