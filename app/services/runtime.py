"""Everything a worker holds while it serves: pools, the saver, the catalog, models and the compiled graph.

Opened once per process in the app's lifespan (or by tests, which pass their own models and
database) and closed with it. Schema set-up is not done here: see app/db/migrate.py.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg_pool import AsyncConnectionPool
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.db.engine import (
    checkpoint_pool,
    create_engine,
    create_read_sessionmaker,
    create_sessionmaker,
    lock_pool,
    resolve_database_url,
)
from app.db.locks import AdvisoryLocks
from app.db.outage import OutageGate
from app.db.urls import libpq_url
from app.services.keys import VerifiedKeys
from app.settings import Settings
from checkpointer import PooledPostgresSaver
from graph.builder import build_graph
from graph.caches import LoopCaches
from graph.config import AgentMode
from graph.context import LoopDeps
from graph.deps import make_deps
from recmodels.artifacts import load_latest_scorer
from recmodels.dataset import Dataset
from recmodels.scorer import Scorer

_log = logging.getLogger(__name__)


@dataclass
class ServiceResources:
    settings: Settings
    database_url: str
    engine: AsyncEngine
    sessionmaker: async_sessionmaker[AsyncSession]
    locks: AdvisoryLocks
    saver: BaseCheckpointSaver
    catalog: Dataset
    loop_deps: dict[AgentMode, LoopDeps]
    """The loop's dependencies by agent mode: a run passes one as the graph's runtime context."""
    graph: Any = None
    """The loop graph compiled once on the saver (None: no models loaded); every agent mode runs it."""
    verified_keys: VerifiedKeys = field(default_factory=lambda: VerifiedKeys(0.0))
    """API keys this worker verified recently (``Settings.api_key_cache_s``)."""
    parsers: dict[tuple, Any] = field(default_factory=dict)
    """Steering command parsers by the settings that shape them (built once: the LLM client)."""
    similarities: dict[tuple[Any, str], Any] = field(default_factory=dict)
    """Steering similarity by (rec scorer, backend): the text model takes seconds to load."""
    similarity_lock: threading.Lock = field(default_factory=threading.Lock)
    """A command arriving while the start-up warm-up loads the text model waits for it."""
    loop_caches: LoopCaches = field(default_factory=LoopCaches)
    """What this worker's loops computed once (calibrations, text item vectors)."""
    streams: set[asyncio.Future] = field(default_factory=set)
    """Loops of event streams that still run (referenced here so they are not collected)."""
    worker_id: str = field(default_factory=lambda: f"{os.getpid()}:{uuid.uuid4().hex[:24]}")
    """This worker process, as its loops name it (app/services/recovery.py): its pid (for people
    reading the history) and a random part (unique across machines and restarts)."""
    inflight: set[tuple[uuid.UUID, int]] = field(default_factory=set)
    """(session, loop number) of the loops this worker runs right now."""
    unrecorded: dict[tuple[uuid.UUID, int], str] = field(default_factory=dict)
    """Loops whose failure could not be written (the database was gone), with the error to record."""
    reads: async_sessionmaker[AsyncSession] | None = None
    """Autocommit sessions for one-statement reads and writes (:meth:`read`, :meth:`one_statement`);
    None: plain ones."""
    outage: OutageGate = field(default_factory=lambda: OutageGate(normal_s=15.0, outage_s=1.0))
    """The pools' acquire timeout, short while the database is down (app/db/outage.py)."""
    protocol_runs: dict[str, Any] = field(default_factory=dict)
    """Runs of LangGraph's protocol in this worker while they run, by run id (to join, stream and
    cancel them): app.services.protocol_runs.TrackedRun."""

    def read(self) -> AsyncSession:
        """A session for one read statement on the request path: no transaction around it, so one
        round trip instead of three (BEGIN, the query, ROLLBACK when it closes)."""
        return (self.reads or self.sessionmaker)()

    @asynccontextmanager
    async def one_statement(self) -> AsyncIterator[AsyncSession]:
        """A session for one write that is atomic on its own (one statement): committed by the
        server as it runs, one round trip instead of three (BEGIN, the statement, COMMIT)."""
        if self.reads is None:
            async with self.sessionmaker.begin() as db:
                yield db
        else:
            async with self.reads() as db:
                yield db

    @property
    def models_loaded(self) -> bool:
        return self.graph is not None and "offline" in self.loop_deps

    @property
    def agent_modes(self) -> list[AgentMode]:
        """The agent modes loops can run with (``llm`` needs an endpoint), sorted."""
        return sorted(self.loop_deps) if self.graph is not None else []


def load_scorers(settings: Settings, catalog: Dataset) -> tuple[Scorer, Scorer]:
    """The trained rec and reward models (one object when they are the same model)."""
    # Intra-op threads spin at barriers: beside other busy processes (workers, PostgreSQL) two
    # threads on two cores turned 5 ms scorings into 200-300 ms stalls.
    torch.set_num_threads(settings.torch_threads)
    rec = load_latest_scorer(settings.models_dir, catalog, settings.rec_model)
    reward = (
        rec
        if settings.reward_model == settings.rec_model
        else load_latest_scorer(settings.models_dir, catalog, settings.reward_model)
    )
    return rec, reward


async def load_loop_deps(
    settings: Settings, catalog: Dataset, caches: LoopCaches | None = None
) -> dict[AgentMode, LoopDeps]:
    """The trained rec and reward models (loaded once) and the agents built on them, on the
    calibration `recloop prepare` fitted (:class:`graph.calibration.CalibrationMissing` without it:
    a worker never fits)."""
    rec, reward = load_scorers(settings, catalog)
    deps: dict[AgentMode, LoopDeps] = {
        "offline": await make_deps(settings.loop_config(), catalog, rec, reward, "offline", caches=caches)
    }
    if settings.llm_enabled:
        deps["llm"] = await make_deps(settings.loop_config(), catalog, rec, reward, "llm", caches=caches)
    return deps


def compile_graph(saver: BaseCheckpointSaver) -> Any:
    """The one loop graph on the service's saver; each run passes its agent mode's deps as context."""
    return build_graph().compile(checkpointer=saver)


def service_saver(pool: AsyncConnectionPool, settings: Settings) -> PooledPostgresSaver:
    """The checkpoint saver as the service configures it (also what the conformance suite tests)."""
    return PooledPostgresSaver(
        pool,
        write_behind=settings.checkpoint_write_behind,
        commit_delay_s=settings.checkpoint_commit_delay_ms / 1000,
        cached_threads=settings.checkpoint_cached_threads,
    )


async def _open_pool(stack: AsyncExitStack, pool: AsyncConnectionPool) -> AsyncConnectionPool:
    # wait=False: a worker starts even while the database is down and serves 503 until it is back.
    await pool.open(wait=False)
    stack.push_async_callback(pool.close)
    return pool


@asynccontextmanager
async def open_resources(
    settings: Settings,
    *,
    database_url: str | None = None,
    catalog: Dataset | None = None,
    loop_deps: dict[AgentMode, LoopDeps] | None = None,
) -> AsyncIterator[ServiceResources]:
    """Open pools and load models; close everything on exit."""
    url = libpq_url(database_url) if database_url else resolve_database_url(settings)
    catalog = catalog or Dataset.open(settings.datasets_dir, settings.dataset)
    caches = LoopCaches()
    loop_deps = loop_deps if loop_deps is not None else await load_loop_deps(settings, catalog, caches)
    async with AsyncExitStack() as stack:
        outage = OutageGate(normal_s=settings.db_pool_timeout_s, outage_s=settings.db_outage_timeout_s)
        stack.push_async_callback(outage.close)
        engine = create_engine(url, settings)
        outage.watch_engine(engine)
        stack.push_async_callback(engine.dispose)
        locks = AdvisoryLocks(await _open_pool(stack, lock_pool(url, settings, outage.on_connect())))
        outage.watch_pool(locks.pool)
        saver: BaseCheckpointSaver
        if settings.checkpointer == "memory":
            saver = InMemorySaver()
        elif settings.checkpointer == "postgres_stock":
            saver = AsyncPostgresSaver(conn=await _open_pool(stack, checkpoint_pool(url, settings)))
        else:
            pool = await _open_pool(stack, checkpoint_pool(url, settings, outage.on_connect()))
            outage.watch_pool(pool)
            saver = service_saver(pool, settings)
        resources = ServiceResources(
            settings=settings,
            database_url=url,
            engine=engine,
            sessionmaker=create_sessionmaker(engine),
            reads=create_read_sessionmaker(engine),
            locks=locks,
            saver=saver,
            catalog=catalog,
            loop_deps=loop_deps,
            verified_keys=VerifiedKeys(settings.api_key_cache_s),
            graph=compile_graph(saver) if loop_deps else None,
            loop_caches=caches,
            outage=outage,
        )
        yield resources
