"""The FastAPI app: wiring only (factory, lifespan, routers, error mapping, request metrics)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from fastapi import FastAPI

from app.api import (
    assistants,
    catalog,
    eval_runs,
    health,
    inspection,
    recommendations,
    sessions,
    steering,
    thread_runs,
    threads,
    ui,
    usage,
)
from app.api.body_limit import BodyLimitMiddleware
from app.api.errors import install_error_handlers
from app.api.idempotency import IdempotencyMiddleware
from app.api.input_guard import InputGuardMiddleware
from app.api.metrics import RequestMetricsMiddleware
from app.api.openapi import install_openapi
from app.services import catalog as catalog_service
from app.services import loops, recovery, startup
from app.services import steering as steering_service
from app.services.runtime import Worker, open_worker
from app.settings import Settings, get_settings

DESCRIPTION = """Agentic recommendation with a feedback loop (AFL/FLOW, arXiv 2410.20027).

Every `/v1` call needs an API key (`Authorization: Bearer <key>`); `recloop keys create` makes one.
A session is one user's LangGraph thread: ask it for recommendations, answer a human-judged
loop through `/feedback`, record what the user consumed, and read its loop history.
A browser UI over this same API is at `/ui/`.
"""


def create_app(settings: Settings | None = None, *, worker: Worker | None = None) -> FastAPI:
    """The app. Given ``worker`` (tests), it uses it and leaves closing it to the caller."""
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if worker is not None:
            app.state.worker = worker
            yield
            return
        async with AsyncExitStack() as stack:
            # Models, calibrations and title vectors load here: a stop signal must end it at once.
            with startup.interruptible():
                opened = await stack.enter_async_context(open_worker(settings))
            app.state.worker = opened
            warm_up = None
            if settings.steering_warmup:
                warm_up = asyncio.create_task(steering_service.warm_up(opened.steering))
            app.state.steering_warmup = warm_up
            # After steering's: at 10^6 items both take seconds of the GIL and hundreds of MB while
            # they build; one after the other, their peaks do not add up (a search meanwhile builds
            # the index itself).
            title_index = asyncio.create_task(
                _after(warm_up, lambda: catalog_service.warm_up(opened.catalog))
            )
            # Resumes (or resolves) loops left running by this worker or by dead ones
            # (app/services/recovery.py, app/services/resume.py).
            watch = asyncio.create_task(
                recovery.watch(opened.database, opened.runner, run=loops.run_takeover)
            )
            try:
                yield
            finally:
                watch.cancel()
                title_index.cancel()
                if warm_up is not None:
                    warm_up.cancel()

    app = FastAPI(title="recloop", version="1", description=DESCRIPTION, lifespan=lifespan)
    app.state.settings = settings
    if worker is not None:
        app.state.worker = worker  # usable without running the lifespan (in-process test clients)
    install_error_handlers(app)
    install_openapi(app)
    for module in (sessions, recommendations, steering, catalog, usage, eval_runs, health, inspection, ui):
        app.include_router(module.router)
    # LangGraph's server protocol (langgraph-sdk's assistants, threads and runs): docs/langgraph.md
    for module in (assistants, threads, thread_runs):
        app.include_router(module.router)
    app.mount(ui.STATIC_PATH, ui.static_app(), name="ui-static")

    app.add_middleware(IdempotencyMiddleware)
    # Nothing PostgreSQL cannot store reaches the handlers (or the idempotency keys' table).
    app.add_middleware(InputGuardMiddleware, max_json_depth=settings.max_json_depth)
    # Outside the middlewares that read whole bodies.
    app.add_middleware(BodyLimitMiddleware, max_body_bytes=settings.max_body_bytes)
    app.add_middleware(RequestMetricsMiddleware)
    return app


async def _after(first: asyncio.Task[Any] | None, then: Callable[[], Awaitable[None]]) -> None:
    """``then()`` once ``first`` has ended, however it ended (its failure is its own task's to report)."""
    if first is not None:
        await asyncio.wait({first})
    await then()


def create_app_from_env() -> FastAPI:
    """uvicorn factory for worker processes (`recloop serve --workers N`): settings from the environment."""
    return create_app(get_settings())
