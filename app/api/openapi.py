"""The OpenAPI schema states every constraint the server enforces, including those set at run time.

Some limits come from the settings (longest history, candidate list, command) and the catalog
(item ids 0..n-1), and which agents exist depends on whether an LLM endpoint is configured. The
generated schema is completed with them once the worker's resources are open, so that a request
the schema allows is one the server accepts (what schemathesis checks, tests/test_api_contract.py).
"""

from __future__ import annotations

from typing import Any

from fastapi import Depends, FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import iter_route_contexts

from app.api.idempotency import idempotency_key
from app.api.schemas import ErrorBody
from app.services.runtime import Worker
from app.settings import Settings
from graph.config import AgentMode
from recmodels.dataset import Dataset

RETRY_AFTER = {
    "Retry-After": {"description": "Seconds to wait before retrying.", "schema": {"type": "integer"}}
}
_ERRORS: dict[int, dict[str, Any]] = {
    401: {"description": "Missing, invalid or revoked API key."},
    404: {"description": "No such resource (other keys' sessions answer 404 too)."},
    409: {
        "description": "The session is busy (a loop or update runs on it) or awaits feedback, or the first "
        "request with this Idempotency-Key still runs; Retry-After says when to retry the busy cases.",
        "headers": RETRY_AFTER,
    },
    413: {"description": "The body is larger than RECLOOP_MAX_BODY_BYTES; nothing was read or changed."},
    422: {"description": "Invalid input: `field` names it, `detail` says why. Nothing was changed."},
    429: {"description": "Rate limit or daily LLM-token budget of the key reached.", "headers": RETRY_AFTER},
    500: {"description": "The loop failed; it is recorded in the session's history as failed."},
    503: {"description": "The database is unreachable or the models are not loaded.", "headers": RETRY_AFTER},
}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for these error statuses, each with the one error body."""
    return {status: {"model": ErrorBody, **_ERRORS[status]} for status in statuses}


V1_ERRORS = error_responses(401, 413, 422, 429, 503)
"""What every /v1 call can answer."""
PROTOCOL_ERRORS = error_responses(401, 404, 409, 413, 422, 429, 503)
"""What every call of LangGraph's protocol can answer besides its own answer."""
IDEMPOTENT = [Depends(idempotency_key)]
"""The POSTs that create or run something take an Idempotency-Key (app/api/idempotency.py)."""


PROTOCOL_TAG = "langgraph"
"""The tag of LangGraph's protocol routes: they have a document of their own (:data:`PROTOCOL_PATH`)."""
PROTOCOL_PATH = "/langgraph/openapi.json"
PROTOCOL_DESCRIPTION = """LangGraph's server protocol as recloop serves it (docs/langgraph.md): the
bodies as recloop reads them, every limit it enforces stated. Its contract is `langgraph-sdk`'s client;
this document is for checking requests (and for tests/test_api_contract.py, which sweeps it)."""


def _is_protocol(route: Any) -> bool:
    return PROTOCOL_TAG in (getattr(route, "tags", None) or [])


def install_openapi(app: FastAPI) -> None:
    """``/openapi.json`` documents /v1; :data:`PROTOCOL_PATH` documents LangGraph's protocol routes."""
    documents: dict[str, dict[str, Any]] = {}

    def document(name: str, **kwargs: Any) -> dict[str, Any]:
        if name in documents:
            return documents[name]
        schema = get_openapi(version=app.version, **kwargs)
        worker: Worker | None = getattr(app.state, "worker", None)
        if worker is None:  # before start-up: static constraints only, and not cached
            return schema
        components = schema.get("components", {}).get("schemas", {})
        if name == PROTOCOL_TAG:
            _protocol_constraints(components, worker.settings, worker.catalog)
        else:
            _runtime_constraints(components, worker.settings, worker.catalog, worker.runner.agent_modes)
        documents[name] = schema
        return schema

    def openapi() -> dict[str, Any]:
        routes = [r for r in iter_route_contexts(app.routes) if not _is_protocol(r)]
        app.openapi_schema = document("v1", title=app.title, description=app.description, routes=routes)
        return app.openapi_schema

    def protocol_openapi() -> dict[str, Any]:
        routes = [r for r in iter_route_contexts(app.routes) if _is_protocol(r)]
        title = f"{app.title}: LangGraph's server protocol"
        return document(PROTOCOL_TAG, title=title, description=PROTOCOL_DESCRIPTION, routes=routes)

    app.openapi = openapi  # type: ignore[method-assign]
    app.state.protocol_openapi = protocol_openapi


def _runtime_constraints(
    components: dict[str, Any], settings: Settings, catalog: Dataset, agent_modes: list[AgentMode]
) -> None:
    item_id = {"type": "integer", "minimum": 0, "maximum": catalog.n_items - 1}

    history = components["SessionCreate"]["properties"]["history"]
    history.update(minItems=1, maxItems=settings.max_history_items, items=item_id)
    consumed = components["ConsumptionCreate"]["properties"]["items"]
    consumed.update(items=item_id, maxItems=min(consumed.get("maxItems", 1000), settings.max_history_items))

    recommendation = components["RecommendationCreate"]["properties"]
    for option in recommendation["candidates"]["anyOf"]:
        if option.get("type") == "array":
            option.update(minItems=2, maxItems=settings.max_candidates, uniqueItems=True, items=item_id)
    recommendation["agents"]["enum"] = agent_modes or ["offline"]

    command = components["CommandCreate"]["properties"]["text"]
    command.update(maxLength=settings.steering_max_command_chars)


def _protocol_constraints(components: dict[str, Any], settings: Settings, catalog: Dataset) -> None:
    """The limits of the protocol's bodies that come from the settings and the catalog."""
    item_id = {"type": "integer", "minimum": 0, "maximum": catalog.n_items - 1}
    for name in ("ThreadCreate", "ThreadPatch", "ThreadSearch"):
        metadata = components[name]["properties"]["metadata"]
        for option in metadata.get("anyOf", [metadata]):
            if option.get("type") == "object":
                option["x-max-bytes"] = settings.max_metadata_bytes
    run_input = components["RunCreate"]["properties"]["input"]["anyOf"][0]["properties"]
    run_input["candidates"].update(
        items=item_id, minItems=2, maxItems=settings.max_candidates, uniqueItems=True
    )
    created = components["ThreadCreate"]["properties"]["metadata"]
    created.update(
        required=["history"],
        properties={
            "history": {
                "type": "array",
                "items": item_id,
                "minItems": 1,
                "maxItems": settings.max_history_items,
            },
            "user_id": {
                "type": "string",
                "minLength": 1,
                "maxLength": 200,
                "pattern": r"^[^\x00]*\S[^\x00]*$",
            },
        },
    )
