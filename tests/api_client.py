"""An httpx client on the app in-process (ASGI), authenticated with a new API key, for tests."""

from __future__ import annotations

import httpx

from app.main import create_app
from app.services.keys import create_key
from app.services.runtime import ServiceResources
from app.settings import Settings


async def authed_client(
    settings: Settings, resources: ServiceResources, owner: str, *, app=None
) -> httpx.AsyncClient:
    """A client of ``app`` (default: a new app on ``resources``) with a new key of ``owner``; the
    caller closes it."""
    key = await create_key(resources.sessionmaker, owner=owner)
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app or create_app(settings, resources=resources)),
        base_url="http://recloop.test",
        headers={"Authorization": f"Bearer {key.secret}"},
        timeout=30,
    )
