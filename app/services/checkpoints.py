"""LangGraph's PostgreSQL saver, made to scale with a pool and to commit cheaply but durably.

Two changes to the stock ``AsyncPostgresSaver`` (measured in bench/README.md):

1. No instance-wide lock. The stock saver serialises every query of every thread behind one
   ``asyncio.Lock`` (langgraph issue 7259), which is needed for a single shared connection but
   not for a pool: here each query checks out its own pooled connection.
2. Group commit. Connections run with ``synchronous_commit=off``, so a mid-round checkpoint
   commit does not wait for its WAL flush (about 4 ms each here). A checkpoint that records a
   finished round (it updates one of ``durable_channels``) is committed with
   ``synchronous_commit=on``; PostgreSQL flushes WAL in order, so that commit makes every
   earlier checkpoint of the round durable as well. A crash (even of the OS) therefore loses
   at most the round in progress, never a completed one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any

from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg import AsyncCursor
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool

# The graph appends one record to ``rounds`` per finished round (and resets it when a loop opens).
ROUND_CHANNELS = frozenset({"rounds"})

_durable_commit: ContextVar[bool] = ContextVar("recloop_durable_commit", default=False)


class _NoLock:
    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


class PooledPostgresSaver(AsyncPostgresSaver):
    """``AsyncPostgresSaver`` over a connection pool: concurrent queries, durable rounds."""

    def __init__(
        self,
        pool: AsyncConnectionPool,
        *,
        group_commit: bool = True,
        durable_channels: frozenset[str] = ROUND_CHANNELS,
    ):
        super().__init__(conn=pool)
        self.lock = _NoLock()  # type: ignore[assignment]  # see the module docstring, point 1
        self.group_commit = group_commit
        self.durable_channels = durable_channels

    async def aput(
        self,
        config: Any,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> Any:
        closes_round = self.group_commit and not self.durable_channels.isdisjoint(new_versions)
        token = _durable_commit.set(closes_round)
        try:
            return await super().aput(config, checkpoint, metadata, new_versions)
        finally:
            _durable_commit.reset(token)

    @asynccontextmanager
    async def _cursor(self, *, pipeline: bool = False) -> AsyncIterator[AsyncCursor[DictRow]]:
        assert isinstance(self.conn, AsyncConnectionPool), "PooledPostgresSaver needs a pool"
        async with self.conn.connection() as conn:
            durable = _durable_commit.get()
            if durable:
                await conn.execute("SET synchronous_commit TO on")
            try:
                if pipeline:
                    async with conn.pipeline(), conn.cursor(binary=True, row_factory=dict_row) as cur:
                        yield cur
                else:
                    async with conn.cursor(binary=True, row_factory=dict_row) as cur:
                        yield cur
            finally:
                if durable:
                    await conn.execute("SET synchronous_commit TO off")
