"""Engines and pools: one SQLAlchemy async engine for the service tables, one psycopg pool for LangGraph."""

from __future__ import annotations

import select
from collections.abc import Callable

import psycopg
from psycopg import AsyncConnection
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool
from sqlalchemy import event
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from app.settings import Settings
from postgres.embedded import start_embedded_postgres
from postgres.urls import libpq_url, sqlalchemy_url


def resolve_database_url(settings: Settings) -> str:
    """DATABASE_URL when set, else the embedded PostgreSQL under ``data_dir/pg`` (started if needed)."""
    if settings.database_url:
        return libpq_url(settings.database_url)
    return start_embedded_postgres(settings.data_dir / "pg")


def create_engine(url: str, settings: Settings) -> AsyncEngine:
    engine = create_async_engine(
        sqlalchemy_url(url),
        pool_size=settings.db_pool_size,
        max_overflow=settings.db_pool_size,
        pool_timeout=settings.db_pool_timeout_s,
        connect_args={"connect_timeout": max(1, int(settings.db_connect_timeout_s))},
    )
    # A connection that died with the server is replaced, not handed out: checked on its socket,
    # not with pool_pre_ping's query (a round trip per checkout, four or five per recommendation).
    event.listen(engine.sync_engine, "checkout", _refuse_closed_connection)
    return engine


def _refuse_closed_connection(dbapi_connection, _record, _proxy) -> None:
    """SQLAlchemy's checkout hook: a connection the server closed is discarded (the pool retries)."""
    if _closed_by_server(dbapi_connection.driver_connection):
        raise DisconnectionError("the server closed the connection")


def create_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


def create_read_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    """Sessions for one-statement reads on the request path, on autocommit connections of the
    same pool: the read is one round trip, not three (BEGIN, the query, ROLLBACK at close)."""
    return async_sessionmaker(engine.execution_options(isolation_level="AUTOCOMMIT"), expire_on_commit=False)


async def check_alive(conn: AsyncConnection) -> None:
    """Pool check without a round trip: refuse a connection the server has closed.

    An idle connection has nothing to read; if its socket is readable, the server closed it
    (restart, outage, idle timeout) or sent something unasked — either way it is not handed out
    and the pool replaces it. psycopg_pool's stock check sends a query on every checkout, which
    cost ~4 % of the CPU of a recommendation under load.
    """
    if not _closed_by_server(conn):
        return
    if not conn.closed:
        await conn.close()  # so that the pool discards it instead of taking it back
    raise psycopg.OperationalError("the server closed the connection")


def _closed_by_server(conn: AsyncConnection) -> bool:
    """Whether an idle connection is closed or broken, or its socket is readable (the server hung up)."""
    if conn.closed or conn.broken:
        return True
    readable, _, _ = select.select([conn.fileno()], [], [], 0)
    return bool(readable)


def _set_on_connect(parameters: dict[str, str], on_connect: Callable[[], None] | None = None):
    """A pool ``configure`` callback setting session parameters on each new connection (one round trip).

    Not libpq's ``options`` startup parameter: PgBouncer (1.18, Debian 12) refuses a connection
    that sends one ("unsupported startup parameter: options"), and its ``ignore_startup_parameters``
    would drop the settings silently; a SET after connecting works directly and through PgBouncer's
    session pooling alike (docs/deploy.md, "PgBouncer")."""
    names = list(parameters)
    query = "SELECT " + ", ".join("set_config(%s, %s, false)" for _ in names)
    values = [item for name in names for item in (name, parameters[name])]

    async def configure(conn: AsyncConnection) -> None:
        await conn.execute(query, values)
        if on_connect is not None:
            on_connect()

    return configure


def _autocommit_pool(
    url: str,
    settings: Settings,
    max_size: int,
    session: dict[str, str],
    on_connect: Callable[[], None] | None = None,
    **kwargs: object,
) -> AsyncConnectionPool:
    """A psycopg pool of autocommit connections with ``session`` parameters set, opened by the
    caller, checked before each use; ``on_connect`` is called after each new connection."""
    return AsyncConnectionPool(
        libpq_url(url),
        min_size=1,
        max_size=max_size,
        open=False,
        timeout=settings.db_pool_timeout_s,
        kwargs={"autocommit": True, "connect_timeout": max(1, int(settings.db_connect_timeout_s)), **kwargs},
        configure=_set_on_connect(session, on_connect),
        check=check_alive,
    )


def lock_pool(
    url: str, settings: Settings, on_connect: Callable[[], None] | None = None
) -> AsyncConnectionPool:
    """A pool for advisory locks (one connection per held lock) and request counters
    (app/services/limits.py): nothing whose commit must wait for the disk."""
    return _autocommit_pool(url, settings, settings.lock_pool_size, {"synchronous_commit": "off"}, on_connect)


def checkpoint_pool(
    url: str, settings: Settings, on_connect: Callable[[], None] | None = None
) -> AsyncConnectionPool:
    """A pool for LangGraph's saver, its connections pinned to the checkpoint schema."""
    return _autocommit_pool(
        url,
        settings,
        settings.checkpoint_pool_size,
        {"search_path": settings.checkpoint_schema},
        on_connect,
        prepare_threshold=0,
        row_factory=dict_row,
    )
