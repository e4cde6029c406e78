"""FastAPI dependencies as Annotated aliases: handlers read like type signatures."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

from fastapi import Depends, Header, Request

from app.services.errors import Unauthorized
from app.services.keys import Caller, authenticate
from app.services.limits import count_request
from app.services.runtime import ServiceResources


def get_resources(request: Request) -> ServiceResources:
    return request.app.state.resources


ResourcesDep = Annotated[ServiceResources, Depends(get_resources)]


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
    res: ResourcesDep,
    authorization: Annotated[str | None, Header(description="Bearer <API key>")] = None,
    x_api_key: Annotated[str | None, Header(description="Alternative to Authorization")] = None,
) -> Caller:
    """The request's owner, holding its Idempotency-Key's claim if it sent one (app/api/idempotency.py)."""
    caller = await authenticate(res.sessionmaker, bearer(authorization, x_api_key), cache=res.verified_keys)
    await count_request(res, caller)  # 429 past the key's request rate
    claim = getattr(request.state, CLAIM_STATE, None)
    return replace(caller, claim=claim) if claim is not None else caller


CallerDep = Annotated[Caller, Depends(get_caller)]
