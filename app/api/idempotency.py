"""``Idempotency-Key`` on the POSTs that create or run something (see app/services/idempotency.py).

A plain ASGI middleware: it needs the whole request body to compare retries, and the whole
answer (JSON, or every event of a stream) to replay it.
"""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import Header
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.deps import bearer
from app.api.errors import error_response
from app.services import idempotency as service
from app.services.errors import DATABASE_DOWN, ServiceError, Unauthorized
from app.services.keys import authenticate

IDEMPOTENT_POSTS = re.compile(r"/v1/sessions(/[^/]+/(recommendations|feedback|consumed|commands))?")
# LangGraph's protocol: creating a thread, and a run of any kind (app/api/threads.py, thread_runs.py).
PROTOCOL_POSTS = re.compile(r"/threads(/[^/]+/runs(/wait|/stream)?)?")


async def idempotency_key(
    key: Annotated[
        str | None,
        Header(
            alias=service.HEADER,
            pattern=service.KEY_PATTERN,
            description="Any unique string (a UUID): a retry with the same key and body gets the first "
            "answer again without running anything; a retry while the first runs gets 409; the same key "
            "with another body gets 422. Kept 24 h per API key.",
        ),
    ] = None,
) -> None:
    """Documents the header on the routes that take it; the middleware below does the work."""


class IdempotencyMiddleware:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope) if scope["type"] == "http" else None
        if (
            headers is None
            or scope["method"] != "POST"
            or service.HEADER.lower() not in headers
            or not (IDEMPOTENT_POSTS.fullmatch(scope["path"]) or PROTOCOL_POSTS.fullmatch(scope["path"]))
        ):
            await self.app(scope, receive, send)
            return
        res = scope["app"].state.resources
        key = headers[service.HEADER]
        try:
            service.check_key(key)
            caller = await authenticate(
                res.sessionmaker,
                bearer(headers.get("authorization"), headers.get("x-api-key")),
                cache=res.verified_keys,
            )
        except Unauthorized:
            await self.app(scope, receive, send)  # the app answers 401 as for any request
            return
        except ServiceError as exc:
            await error_response(exc.status, exc.detail, exc.field)(scope, receive, send)
            return
        body = await _read_body(receive)
        streamed = "text/event-stream" in headers.get("accept", "")
        request = service.fingerprint(scope["method"], scope["path"], body, streamed=streamed)
        answer = _Capture(send)
        try:
            async with service.claim(res, caller, key, request) as stored:
                if stored is not None:
                    await _replay(stored, send)
                    return
                await self.app(scope, _receive_again(body, receive), answer.send)
                if answer.status is not None and 200 <= answer.status < 300:
                    await service.remember(res, caller, key, request, answer.stored())
        except ServiceError as exc:
            if answer.status is None:
                await error_response(exc.status, exc.detail, exc.field)(scope, receive, send)
                return
            raise
        except DATABASE_DOWN:
            if answer.status is None:
                retry = str(res.settings.db_retry_after_s)
                response = error_response(
                    503, "the database is unreachable; retry shortly", None, **{"Retry-After": retry}
                )
                await response(scope, receive, send)
                return
            raise


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def _receive_again(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # then: the client's disconnect, when it comes

    return replay


class _Capture:
    """Passes the app's answer on and keeps a copy (the whole stream, for an event stream)."""

    def __init__(self, send: Send):
        self._send = send
        self.status: int | None = None
        self.content_type = "application/json"
        self.chunks: list[bytes] = []

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.content_type = Headers(raw=message.get("headers", [])).get("content-type", self.content_type)
        elif message["type"] == "http.response.body":
            self.chunks.append(message.get("body", b""))
        await self._send(message)

    def stored(self) -> service.StoredAnswer:
        assert self.status is not None
        return service.StoredAnswer(self.status, self.content_type, b"".join(self.chunks))


async def _replay(stored: service.StoredAnswer, send: Send) -> None:
    headers = [
        (b"content-type", stored.content_type.encode()),
        (b"content-length", str(len(stored.body)).encode()),
        (b"idempotent-replayed", b"true"),
    ]
    await send({"type": "http.response.start", "status": stored.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": stored.body, "more_body": False})
