"""What `recloop serve` does before any worker starts: database, schema, data, models, first key.

Idempotent: a second start finds everything in place and takes seconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from app.db.engine import create_engine, create_sessionmaker, resolve_database_url
from app.db.migrate import migrate_all
from app.db.urls import redact
from app.services.keys import NewKey, create_first_key, create_key, list_keys, revoke_key
from app.settings import Settings
from recmodels.dataset import Dataset, DatasetNotFound

Echo = Callable[[str], None]


def prepare_database(settings: Settings, echo: Echo, *, migrate: bool = True) -> str:
    """Resolve (or start the embedded) PostgreSQL and, unless told not to, migrate it; return its URL."""
    if not settings.database_url:
        echo(f"starting the embedded PostgreSQL in {settings.data_dir / 'pg'} ...")
    url = resolve_database_url(settings)
    echo(f"database: {redact(url)}")
    if migrate:
        echo("applying migrations (service tables, then LangGraph's checkpoint schema) ...")
        migrate_all(url, settings.checkpoint_schema)
    return url


def ensure_dataset(settings: Settings, echo: Echo) -> Dataset:
    try:
        return Dataset.open(settings.datasets_dir, settings.dataset)
    except DatasetNotFound:
        if settings.dataset != "movielens":
            raise
    from app.data.fetch import fetch_movielens

    echo("MovieLens-100k is not here yet: fetching and building it ...")
    return fetch_movielens(settings, settings.dataset)


def ensure_models(settings: Settings, dataset: Dataset, echo: Echo) -> None:
    """Train the default rec and reward models unless their artifacts exist (with progress bars)."""
    import torch

    from recmodels.artifacts import artifact_path
    from recmodels.training import train

    # As `recloop train` does: two spinning intra-op threads made the first start's training ~50x
    # slower next to one other busy process (1.5 s per step instead of 0.03 s).
    torch.set_num_threads(settings.torch_threads)
    for model_name in dict.fromkeys((settings.rec_model, settings.reward_model)):
        path = artifact_path(settings.models_dir, dataset.name, model_name)
        if path.is_file():
            continue
        echo(f"training {model_name} on {dataset.name} (first start only) ...")
        result = train(dataset, model_name, models_dir=settings.models_dir, progress=True)
        echo(f"  saved {result.artifact_path}")


async def _with_sessionmaker(url: str, settings: Settings, work):
    engine = create_engine(url, settings)
    try:
        return await work(create_sessionmaker(engine))
    finally:
        await engine.dispose()


def first_key(url: str, settings: Settings, owner: str = "admin") -> NewKey | None:
    return asyncio.run(_with_sessionmaker(url, settings, lambda sm: create_first_key(sm, owner=owner)))


def new_key(url: str, settings: Settings, owner: str) -> NewKey:
    return asyncio.run(_with_sessionmaker(url, settings, lambda sm: create_key(sm, owner=owner)))


def all_keys(url: str, settings: Settings) -> list:
    return asyncio.run(_with_sessionmaker(url, settings, list_keys))


def revoke(url: str, settings: Settings, key_id: int) -> bool:
    return asyncio.run(_with_sessionmaker(url, settings, lambda sm: revoke_key(sm, key_id=key_id)))
