"""FastAPI dependencies as Annotated aliases: handlers read like type signatures."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request

from app.services.keys import Caller, authenticate
from app.services.runtime import ServiceResources


def get_resources(request: Request) -> ServiceResources:
    return request.app.state.resources


ResourcesDep = Annotated[ServiceResources, Depends(get_resources)]


def _bearer(authorization: str | None, x_api_key: str | None) -> str | None:
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
    return await authenticate(
        res.sessionmaker, _bearer(authorization, x_api_key), cache_s=res.settings.api_key_cache_s
    )


CallerDep = Annotated[Caller, Depends(get_caller)]
