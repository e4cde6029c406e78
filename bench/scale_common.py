"""What bench.retention, bench.scale and bench.replicas share: a data dir with MovieLens and tiny
models, a private database, and the service in-process behind an httpx client."""

from __future__ import annotations

import asyncio
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TypeVar

import httpx
import psycopg
from psycopg import sql

from app.db.migrate import migrate_all
from app.settings import Settings
from postgres.urls import with_database

DEFAULT_SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"
HISTORY = [49, 180, 257, 293, 0, 171]
"""The history of the sessions the benchmarks open (MovieLens item ids)."""
T = TypeVar("T")


def echo(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def bench_data_dir(settings: Settings) -> Path:
    """``settings.data_dir`` when it holds the dataset and its models; else a temp data dir with
    MovieLens fetched as `recloop data fetch movielens` does and a tiny SASRec (1 epoch, 3,000 rows:
    latency and storage do not depend on its quality)."""
    from lab.data.fetch import fetch_movielens
    from recmodels.artifacts import artifact_path
    from recmodels.dataset import Dataset, DatasetNotFound
    from recmodels.training import train

    models = dict.fromkeys((settings.rec_model, settings.reward_model))
    try:
        dataset = Dataset.open(settings.datasets_dir, settings.dataset)
        if all(artifact_path(settings.models_dir, dataset.name, m).is_file() for m in models):
            return settings.data_dir
    except DatasetNotFound:
        pass
    root = Path(tempfile.gettempdir()) / "recloop-bench-scale-data"
    dataset = fetch_movielens(Settings(data_dir=root, _env_file=None), echo=echo)  # opened if already there
    for name in models:
        if not artifact_path(root / "models", dataset.name, name).is_file():
            echo(f"no trained {name}: training a tiny one (quality is irrelevant here)")
            train(dataset, name, models_dir=root / "models", epochs=1, max_train_rows=3000, progress=False)
    return root


def on_private_database(
    server_url: str, run: Callable[[str, Settings], Awaitable[T]], *, keep: bool = False
) -> T:
    """``run(url, settings)`` on a new migrated database of ``server_url``, dropped afterwards
    (``keep``: kept, and its URL printed); the settings read no .env, use :func:`bench_data_dir` and
    no rate limit."""
    settings = Settings(_env_file=None)
    settings = settings.model_copy(update={"data_dir": bench_data_dir(settings), "rate_limit_per_minute": 0})
    url = create_database(server_url)
    try:
        return asyncio.run(run(url, settings))
    finally:
        if keep:
            echo(f"kept {url}")
        else:
            drop_database(server_url, url)


def create_database(server_url: str, *, migrate: bool = True) -> str:
    name = f"recloop_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = with_database(server_url, name)
    if migrate:
        migrate_all(url, "langgraph")
    return url


def drop_database(server_url: str, url: str) -> None:
    name = url.rsplit("/", 1)[1].split("?")[0]
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@asynccontextmanager
async def service_client(settings: Settings, url: str) -> AsyncIterator[tuple[httpx.AsyncClient, object]]:
    """The app in-process on ``url`` (real pools, saver and models) and a client with a new key."""
    from app.main import create_app
    from app.services.keys import create_key
    from app.services.runtime import open_worker

    async with open_worker(settings, database_url=url) as worker:
        key = await create_key(worker.database.sessionmaker, owner="bench")
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_app(settings, worker=worker)),
            base_url="http://recloop.bench",
            headers={"Authorization": f"Bearer {key.secret}"},
            timeout=60,
        ) as client:
            yield client, worker
