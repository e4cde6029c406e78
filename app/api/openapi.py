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

from app.api.idempotency import idempotency_key
from app.api.schemas import ErrorBody
from app.services.runtime import ServiceResources

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
IDEMPOTENT = [Depends(idempotency_key)]
"""The POSTs that create or run something take an Idempotency-Key (app/api/idempotency.py)."""


def install_openapi(app: FastAPI) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = get_openapi(
            title=app.title, version=app.version, description=app.description, routes=app.routes
        )
        resources: ServiceResources | None = getattr(app.state, "resources", None)
        if resources is None:  # before start-up: static constraints only, and not cached
            return schema
        _runtime_constraints(schema["components"]["schemas"], resources)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def _runtime_constraints(components: dict[str, Any], res: ServiceResources) -> None:
    settings = res.settings
    item_id = {"type": "integer", "minimum": 0, "maximum": res.catalog.n_items - 1}

    history = components["SessionCreate"]["properties"]["history"]
    history.update(minItems=1, maxItems=settings.max_history_items, items=item_id)
    consumed = components["ConsumptionCreate"]["properties"]["items"]
    consumed.update(items=item_id, maxItems=min(consumed.get("maxItems", 1000), settings.max_history_items))

    recommendation = components["RecommendationCreate"]["properties"]
    for option in recommendation["candidates"]["anyOf"]:
        if option.get("type") == "array":
            option.update(minItems=2, maxItems=settings.max_candidates, uniqueItems=True, items=item_id)
    agents = res.agent_modes or ["offline"]
    recommendation["agents"]["enum"] = agents

    command = components["CommandCreate"]["properties"]["text"]
    command.update(maxLength=settings.steering_max_command_chars)
