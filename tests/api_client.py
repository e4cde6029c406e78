"""An httpx client on the app in-process (ASGI), authenticated with a new API key, for tests."""

from __future__ import annotations

import httpx

from app.main import create_app
from app.services.keys import create_key
from app.services.runtime import Worker
from app.settings import Settings


async def authed_client(settings: Settings, worker: Worker, owner: str, *, app=None) -> httpx.AsyncClient:
    """A client of ``app`` (default: a new app on ``worker``) with a new key of ``owner``; the
    caller closes it."""
    key = await create_key(worker.database.sessionmaker, owner=owner)
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app or create_app(settings, worker=worker)),
        base_url="http://recloop.test",
        headers={"Authorization": f"Bearer {key.secret}"},
        timeout=30,
    )
