"""Every error response has one body, {"detail": ..., "field": ...}; the mapping lives here only."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import iter_route_contexts
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from app.api.protocol_unserved import unserved_detail
from app.api.schemas import NO_NUL, SOME_TEXT
from app.services.errors import DATABASE_DOWN, ServiceError

_log = logging.getLogger(__name__)


def error_response(status: int, detail: str, field: str | None = None, **headers: str) -> JSONResponse:
    return JSONResponse({"detail": detail, "field": field}, status_code=status, headers=headers or None)


def service_error_response(exc: ServiceError, db_retry_after_s: int) -> JSONResponse:
    """The answer to a domain error, with the headers its status calls for."""
    if exc.status == 503:
        return error_response(exc.status, exc.detail, exc.field, **{"Retry-After": str(db_retry_after_s)})
    if exc.retry_after_s is not None:
        return error_response(exc.status, exc.detail, exc.field, **{"Retry-After": str(exc.retry_after_s)})
    if exc.status == 401:
        return error_response(exc.status, exc.detail, exc.field, **{"WWW-Authenticate": "Bearer"})
    return error_response(exc.status, exc.detail, exc.field)


def database_down_response(exc: Exception, db_retry_after_s: int) -> JSONResponse:
    _log.warning("database unavailable: %s", exc)
    retry = {"Retry-After": str(db_retry_after_s)}
    return error_response(503, "the database is unreachable; retry shortly", None, **retry)


def too_large_response(max_body_bytes: int) -> JSONResponse:
    """413 for a body over the limit (FastAPI's ``max_body_size``: refused before it is read whole)."""
    detail = f"request body too large: at most {max_body_bytes} bytes are accepted (RECLOOP_MAX_BODY_BYTES)"
    return error_response(413, detail, "body")


def field_path(loc: tuple) -> str | None:
    """A field's path as a client spells it: ``metadata.title``, ``history[2]`` (an int is an index)."""
    parts = [p for p in loc if p not in ("body", "query", "path", "header")]
    if not parts:
        return None
    path = str(parts[0])
    for part in parts[1:]:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


_PATTERN_MESSAGES = {
    SOME_TEXT: "is blank or contains a NUL character",
    NO_NUL: "contains a NUL character (text cannot hold one)",
}


def _allowed_methods(request: Request) -> list[str]:
    """Every method a route serves on the request's path (Starlette's 405 names only its first route's)."""
    methods: set[str] = set()
    for route in iter_route_contexts(request.app.routes):
        if route.methods and route.matches(request.scope)[0] != Match.NONE:
            methods |= route.methods
    if "GET" in methods:
        methods.add("HEAD")  # served for every GET route
    return sorted(methods)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def _service_error(request: Request, exc: ServiceError) -> JSONResponse:
        return service_error_response(exc, request.app.state.settings.db_retry_after_s)

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0]
        field = field_path(tuple(first.get("loc", ())))
        if first.get("type") == "json_invalid":
            return error_response(
                422, f"malformed JSON: {first.get('ctx', {}).get('error', first['msg'])}", "body"
            )
        message = _PATTERN_MESSAGES.get(first.get("ctx", {}).get("pattern"), first["msg"])
        return error_response(422, f"{field or 'request'}: {message}", field)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 413:
            return too_large_response(request.app.state.settings.max_body_bytes)
        headers = dict(exc.headers or {})
        if exc.status_code == 405 and (allowed := _allowed_methods(request)):
            headers["Allow"] = ", ".join(allowed)
        if exc.status_code in (404, 405) and (unserved := unserved_detail(request.method, request.url.path)):
            return error_response(exc.status_code, unserved, None, **headers)
        if exc.status_code == 400 and exc.detail == "There was an error parsing the body":
            # FastAPI's answer to a body it cannot decode (not UTF-8): the same shape as malformed JSON.
            return error_response(422, "malformed body: not UTF-8 encoded JSON", "body")
        return error_response(exc.status_code, str(exc.detail), None, **headers)

    async def _database_down(request: Request, exc: Exception) -> JSONResponse:
        worker = getattr(request.app.state, "worker", None)
        if worker is not None:  # the pools wait briefly from now on (postgres/outage.py)
            worker.database.outage.saw(exc)
        return database_down_response(exc, request.app.state.settings.db_retry_after_s)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        _log.exception("unhandled error on %s %s", request.method, request.url.path)
        return error_response(500, f"internal error ({type(exc).__name__}); see the server log", None)

    for exc_type in DATABASE_DOWN:
        app.add_exception_handler(exc_type, _database_down)
