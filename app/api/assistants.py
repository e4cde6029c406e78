"""LangGraph's protocol: /assistants (the loop variants), plus the server's /info and /ok.

Not in /openapi.json (that documents /v1): the contract of these routes is ``langgraph-sdk``'s
client; docs/langgraph.md lists what is served.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.api.deps import CallerDep, ResourcesDep
from app.api.protocol_schemas import AssistantSearch
from app.services import protocol as service

router = APIRouter(tags=["langgraph"], include_in_schema=False)


@router.get("/ok")
async def ok() -> dict[str, bool]:
    return {"ok": True}


@router.get("/info")
async def info() -> dict[str, Any]:
    """What LangGraph's clients ask a server first (its version and the features it serves)."""
    from importlib.metadata import version

    return {
        "version": version("recloop"),
        "langgraph_py_version": version("langgraph"),
        "flags": {"assistants": True, "crons": False, "langsmith": False, "store": False},
    }


@router.post("/assistants/search")
async def search_assistants(
    body: AssistantSearch, res: ResourcesDep, caller: CallerDep
) -> list[dict[str, Any]]:
    found = service.search_assistants(
        res,
        graph_id=body.graph_id,
        name=body.name,
        metadata=body.metadata,
        limit=body.limit,
        offset=body.offset,
    )
    return [a.public() for a in found]


@router.post("/assistants/count")
async def count_assistants(body: AssistantSearch, res: ResourcesDep, caller: CallerDep) -> int:
    found = service.search_assistants(
        res, graph_id=body.graph_id, name=body.name, metadata=body.metadata, limit=1000, offset=0
    )
    return len(found)


@router.get("/assistants/{assistant_id}")
async def get_assistant(assistant_id: str, res: ResourcesDep, caller: CallerDep) -> dict[str, Any]:
    return service.get_assistant(res, assistant_id).public()


@router.get("/assistants/{assistant_id}/graph")
async def get_graph(assistant_id: str, res: ResourcesDep, caller: CallerDep) -> dict[str, Any]:
    service.get_assistant(res, assistant_id)
    return service.assistant_graph()


@router.get("/assistants/{assistant_id}/schemas")
async def get_schemas(assistant_id: str, res: ResourcesDep, caller: CallerDep) -> dict[str, Any]:
    service.get_assistant(res, assistant_id)
    return service.assistant_schemas()


@router.get("/assistants/{assistant_id}/subgraphs")
async def get_subgraphs(assistant_id: str, res: ResourcesDep, caller: CallerDep) -> dict[str, Any]:
    service.get_assistant(res, assistant_id)
    return {}  # the loop graph has no subgraphs
