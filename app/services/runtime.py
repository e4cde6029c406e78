"""Everything a worker holds while it serves: the database, the catalog, the loop runner (models, the
saver and the compiled graph) and steering's models.

Opened once per process in the app's lifespan (or by tests, which pass their own models and
database) and closed with it. Schema set-up is not done here: see app/db/migrate.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field

import torch
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph.state import CompiledStateGraph
from psycopg_pool import AsyncConnectionPool

from app.db.database import Database, open_database, open_pool
from app.db.engine import checkpoint_pool, resolve_database_url
from app.services.keys import VerifiedKeys
from app.services.run_events import ProtocolRuns
from app.services.service_runner import ServiceRunner
from app.services.steering_models import SteeringModels
from app.settings import Settings
from graph.builder import build_graph
from graph.caches import LoopCaches
from graph.config import AgentMode
from graph.context import LoopDeps
from graph.deps import make_deps
from postgres.checkpoints import PooledPostgresSaver
from postgres.urls import libpq_url
from recmodels.artifacts import load_latest_scorer
from recmodels.dataset import Dataset
from recmodels.scan import set_scan_threads
from recmodels.scorer import Scorer


@dataclass(frozen=True, eq=False)
class Worker:
    """What the lifespan opens and closes; routes and services take only the parts they use
    (app/api/deps.py)."""

    settings: Settings
    database: Database
    catalog: Dataset
    runner: ServiceRunner
    steering: SteeringModels
    verified_keys: VerifiedKeys
    """API keys this worker verified recently (``Settings.api_key_cache_s``)."""
    protocol_runs: ProtocolRuns = field(default_factory=dict)


def load_scorers(settings: Settings, catalog: Dataset) -> tuple[Scorer, Scorer]:
    """The trained rec and reward models (one object when they are the same model)."""
    # Intra-op threads spin at barriers: beside other busy processes (workers, PostgreSQL) two
    # threads on two cores turned 5 ms scorings into 200-300 ms stalls.
    torch.set_num_threads(settings.torch_threads)
    set_scan_threads(settings.scan_threads)
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


def compile_graph(saver: BaseCheckpointSaver) -> CompiledStateGraph:
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


@asynccontextmanager
async def open_worker(
    settings: Settings,
    *,
    database_url: str | None = None,
    catalog: Dataset | None = None,
    loop_deps: dict[AgentMode, LoopDeps] | None = None,
) -> AsyncIterator[Worker]:
    """Open pools and load models; close everything on exit."""
    url = libpq_url(database_url) if database_url else resolve_database_url(settings)
    catalog = catalog or Dataset.open(settings.datasets_dir, settings.dataset)
    caches = LoopCaches()
    loop_deps = loop_deps if loop_deps is not None else await load_loop_deps(settings, catalog, caches)
    async with AsyncExitStack() as stack:
        database = await open_database(stack, url, settings)
        saver: BaseCheckpointSaver
        if settings.checkpointer == "memory":
            saver = InMemorySaver()
        elif settings.checkpointer == "postgres_stock":
            saver = AsyncPostgresSaver(conn=await open_pool(stack, checkpoint_pool(url, settings)))
        else:
            pool = await open_pool(stack, checkpoint_pool(url, settings, database.outage.on_connect()))
            database.outage.watch_pool(pool)
            saver = service_saver(pool, settings)
        graph = compile_graph(saver) if loop_deps else None
        offline = loop_deps.get("offline")
        yield Worker(
            settings=settings,
            database=database,
            catalog=catalog,
            runner=ServiceRunner(settings, saver, loop_deps, graph, loop_caches=caches),
            steering=SteeringModels(settings, catalog, offline.rec_scorer if offline is not None else None),
            verified_keys=VerifiedKeys(settings.api_key_cache_s),
        )
