"""FastAPI dependencies as Annotated aliases: handlers read like type signatures."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Annotated, Any

from fastapi import Depends, Header, Request

from app.db.database import Database
from app.services.errors import Unauthorized
from app.services.keys import Caller, VerifiedKeys, authenticate
from app.services.limits import count_request
from app.services.run_events import ProtocolRuns
from app.services.runtime import Worker
from app.services.service_runner import ServiceRunner
from app.services.steering_models import SteeringModels
from app.settings import Settings
from recmodels.dataset import Dataset


def _part(of: Callable[[Worker], object]) -> Any:
    """A part of the worker the lifespan opened (app/services/runtime.py), as a dependency.
    Async: FastAPI would run a plain function in its thread pool, a hop per request."""

    async def part(request: Request) -> object:
        return of(request.app.state.worker)

    return Depends(part)


SettingsDep = Annotated[Settings, _part(lambda w: w.settings)]
DatabaseDep = Annotated[Database, _part(lambda w: w.database)]
CatalogDep = Annotated[Dataset, _part(lambda w: w.catalog)]
RunnerDep = Annotated[ServiceRunner, _part(lambda w: w.runner)]
SteeringDep = Annotated[SteeringModels, _part(lambda w: w.steering)]
ProtocolRunsDep = Annotated[ProtocolRuns, _part(lambda w: w.protocol_runs)]
VerifiedKeysDep = Annotated[VerifiedKeys, _part(lambda w: w.verified_keys)]


def bearer(authorization: str | None, x_api_key: str | None) -> str | None:
    """The API key of a request: ``x-api-key``, or ``Authorization: Bearer <key>`` (no other form)."""
    if x_api_key:
        return x_api_key
    if not authorization or not authorization.strip():
        return None
    scheme, _, key = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise Unauthorized(
            "Authorization: send 'Bearer <key>' (or the key alone in the x-api-key header)",
            field="Authorization",
        )
    return key.strip()


CLAIM_STATE = "idempotency_claim"
"""Where the idempotency middleware leaves a keyed request's claim (the request's state)."""


async def get_caller(
    request: Request,
    database: DatabaseDep,
    settings: SettingsDep,
    verified_keys: VerifiedKeysDep,
    authorization: Annotated[str | None, Header(description="Bearer <API key>")] = None,
    x_api_key: Annotated[str | None, Header(description="Alternative to Authorization")] = None,
) -> Caller:
    """The request's owner, holding its Idempotency-Key's claim if it sent one (app/api/idempotency.py)."""
    caller = await authenticate(database.sessionmaker, bearer(authorization, x_api_key), cache=verified_keys)
    await count_request(database, settings, caller)  # 429 past the key's request rate
    claim = getattr(request.state, CLAIM_STATE, None)
    return replace(caller, claim=claim) if claim is not None else caller


CallerDep = Annotated[Caller, Depends(get_caller)]
