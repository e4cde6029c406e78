"""The request body limit (``Settings.max_body_bytes``): 413 before a larger body is read.

A body announced larger (Content-Length) is refused before a byte of it is read; a chunked one
is counted as it arrives and refused once it passes the limit, so at most the limit is ever held
in memory, and no handler has run. Starlette's own RequestBodyLimitMiddleware (FastAPI's
``max_body_size``) does the same but replaces any answer to an oversized Content-Length with its
plain-text 413, and every error of this API has the one JSON body.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.errors import too_large_response


class BodyTooLarge(HTTPException):
    """An HTTPException, so that FastAPI passes it on from body parsing instead of calling it a 400."""

    def __init__(self) -> None:
        super().__init__(status_code=413)


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, max_body_bytes: int):
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = Headers(scope=scope).get("content-length", "")
        if length.isdigit() and int(length) > self.max_body_bytes:
            await too_large_response(self.max_body_bytes)(scope, receive, send)
            return
        received = 0
        started = False

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    raise BodyTooLarge()
            return message

        async def noting_start(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, noting_start)
        except BodyTooLarge:
            if started:
                raise
            await too_large_response(self.max_body_bytes)(scope, receive, send)
