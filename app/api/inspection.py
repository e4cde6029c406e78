"""/v1/graph and a session's /checkpoints and /loops/{n}/candidates: the graph as LangGraph sees it."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Path, Query

from app.api.deps import CallerDep, CatalogDep, DatabaseDep, RunnerDep
from app.api.openapi import V1_ERRORS, error_responses
from app.api.schemas import CheckpointPublic, CheckpointsPublic, GraphPublic, LoopCandidatesPublic
from app.services import inspection as service

router = APIRouter(prefix="/v1", tags=["graph"], responses=V1_ERRORS)


@router.get("/graph", response_model=GraphPublic, responses=error_responses(503))
async def graph_drawing(runner: RunnerDep, caller: CallerDep) -> GraphPublic:
    """The loop graph's nodes and edges, read from the compiled graph, and its Mermaid text."""
    return GraphPublic.model_validate(service.drawing(runner))


@router.get(
    "/sessions/{session_id}/checkpoints",
    response_model=CheckpointsPublic,
    responses=error_responses(404, 503),
)
async def checkpoints(
    session_id: uuid.UUID,
    database: DatabaseDep,
    runner: RunnerDep,
    caller: CallerDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> CheckpointsPublic:
    """The session's newest checkpoints (its LangGraph thread), newest first: step, the node that
    wrote each, what runs next and the state's key fields."""
    views = await service.checkpoints(database, runner, caller, session_id, limit=limit)
    return CheckpointsPublic(data=[CheckpointPublic.model_validate(v) for v in views], count=len(views))


@router.get(
    "/sessions/{session_id}/loops/{loop_index}/candidates",
    response_model=LoopCandidatesPublic,
    responses=error_responses(404, 503),
)
async def loop_candidates(
    session_id: uuid.UUID,
    loop_index: Annotated[int, Path(ge=1, le=1_000_000)],
    database: DatabaseDep,
    runner: RunnerDep,
    catalog: CatalogDep,
    caller: CallerDep,
) -> LoopCandidatesPublic:
    """A loop's candidates in the order the agents saw them, with the rec model's and the reward
    model's scores and ranks, the round(s) that proposed each and the loop's answer."""
    rows, proposals = await service.loop_candidates(database, runner, catalog, caller, session_id, loop_index)
    return LoopCandidatesPublic(loop_index=loop_index, proposals=proposals, data=rows)
