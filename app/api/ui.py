"""The browser UI: ``/`` redirects to ``/ui/``, which serves one page and its static modules.

The page talks to the same /v1 API as any client (with the key the person signs in with), so
it adds no way around ownership. Everything under /ui carries a strict Content-Security-Policy:
scripts, styles and fetches only from this origin, no inline code at all, images also from
``blob:`` (plots are fetched with the API key, which a plain ``<img src>`` could not send),
and no native form submission, so a key typed into a form can never end up in a URL.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import FileResponse, RedirectResponse
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.ui import STATIC_DIR

UI_PATH = "/ui/"
STATIC_PATH = "/ui/static"
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' blob:",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
UI_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    # Revalidate every time: after an upgrade the page and its modules must not mix versions.
    "Cache-Control": "no-cache",
}

router = APIRouter(include_in_schema=False)


@router.get("/")
async def root() -> RedirectResponse:
    return RedirectResponse(UI_PATH)


@router.get("/ui")
async def ui_without_slash() -> RedirectResponse:
    # The page loads its modules by relative paths, which resolve against /ui/ only.
    return RedirectResponse(UI_PATH)


@router.get(UI_PATH)
async def ui_page() -> FileResponse:
    return FileResponse(STATIC_DIR / "index.html", media_type="text/html", headers=UI_HEADERS)


class _WithHeaders:
    """ASGI wrapper adding fixed headers to every response of the wrapped app."""

    def __init__(self, app: ASGIApp, headers: dict[str, str]):
        self.app = app
        self.raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *self.raw]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def static_app() -> ASGIApp:
    """The UI's modules, styles and icon, to mount at STATIC_PATH."""
    return _WithHeaders(StaticFiles(directory=STATIC_DIR), UI_HEADERS)
