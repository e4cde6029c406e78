"""Request latency per route template, as a plain ASGI middleware.

Plain ASGI rather than ``@app.middleware("http")``: Starlette's BaseHTTPMiddleware wraps every
response in an extra task and stream, which costs on each request and buffers SSE poorly.
"""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.services.metrics import REQUEST_LATENCY


class RequestMetricsMiddleware:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = "500"

        async def send_and_note_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = str(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_and_note_status)
        finally:
            route = scope.get("route")
            REQUEST_LATENCY.labels(
                route=getattr(route, "path", "unmatched"), method=scope["method"], status=status
            ).observe(time.perf_counter() - started)
