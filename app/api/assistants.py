"""LangGraph's protocol: /assistants (the loop variants), plus the server's /info and /ok.

Not in /openapi.json (that documents /v1) but in a document of their own, /langgraph/openapi.json
(app/api/openapi.py); their contract is ``langgraph-sdk``'s client; docs/langgraph.md lists what
is served.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request

from app.api.deps import CallerDep, RunnerDep
from app.api.openapi import PROTOCOL_ERRORS, PROTOCOL_PATH, PROTOCOL_TAG
from app.api.protocol_schemas import AssistantCount, AssistantSearch, refuse
from app.services import protocol as service

router = APIRouter(tags=[PROTOCOL_TAG], responses=PROTOCOL_ERRORS)


@router.get(PROTOCOL_PATH, include_in_schema=False)
async def protocol_openapi(request: Request) -> dict[str, Any]:
    """The OpenAPI document of LangGraph's protocol routes (no key needed, as for /openapi.json)."""
    return request.app.state.protocol_openapi()


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
    body: AssistantSearch, runner: RunnerDep, caller: CallerDep
) -> list[dict[str, Any]]:
    found = service.search_assistants(
        runner,
        graph_id=body.graph_id,
        name=body.name,
        metadata=body.metadata,
        sort_by=body.sort_by,
        descending=body.sort_order == "desc",
    )
    return [a.public() for a in found[body.offset : body.offset + body.limit]]


@router.post("/assistants/count")
async def count_assistants(body: AssistantCount, runner: RunnerDep, caller: CallerDep) -> int:
    refuse(body)
    return len(
        service.search_assistants(runner, graph_id=body.graph_id, name=body.name, metadata=body.metadata)
    )


@router.get("/assistants/{assistant_id}")
async def get_assistant(assistant_id: str, runner: RunnerDep, caller: CallerDep) -> dict[str, Any]:
    return service.get_assistant(runner, assistant_id).public()


@router.get("/assistants/{assistant_id}/graph")
async def get_graph(assistant_id: str, runner: RunnerDep, caller: CallerDep) -> dict[str, Any]:
    service.get_assistant(runner, assistant_id)
    return service.assistant_graph()


@router.get("/assistants/{assistant_id}/schemas")
async def get_schemas(assistant_id: str, runner: RunnerDep, caller: CallerDep) -> dict[str, Any]:
    service.get_assistant(runner, assistant_id)
    return service.assistant_schemas()


@router.get("/assistants/{assistant_id}/subgraphs")
async def get_subgraphs(assistant_id: str, runner: RunnerDep, caller: CallerDep) -> dict[str, Any]:
    service.get_assistant(runner, assistant_id)
    return {}  # the loop graph has no subgraphs


@router.get("/assistants/{assistant_id}/subgraphs/{namespace}")
async def get_subgraphs_in(
    assistant_id: str, namespace: Annotated[str, Path(max_length=200)], runner: RunnerDep, caller: CallerDep
) -> dict[str, Any]:
    service.get_assistant(runner, assistant_id)
    return {}  # in any namespace
