"""FastAPI dependencies as Annotated aliases: handlers read like type signatures."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request

from app.services.keys import Caller, authenticate
from app.services.limits import count_request
from app.services.runtime import ServiceResources


def get_resources(request: Request) -> ServiceResources:
    return request.app.state.resources


ResourcesDep = Annotated[ServiceResources, Depends(get_resources)]


def bearer(authorization: str | None, x_api_key: str | None) -> str | None:
    if x_api_key:
        return x_api_key
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    return authorization


async def get_caller(
    res: ResourcesDep,
    authorization: Annotated[str | None, Header(description="Bearer <API key>")] = None,
    x_api_key: Annotated[str | None, Header(description="Alternative to Authorization")] = None,
) -> Caller:
    caller = await authenticate(res.sessionmaker, bearer(authorization, x_api_key), cache=res.verified_keys)
    await count_request(res, caller)  # 429 past the key's request rate
    return caller


CallerDep = Annotated[Caller, Depends(get_caller)]
