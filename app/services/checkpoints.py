"""LangGraph's PostgreSQL saver, made to scale with a pool and to commit once per round.

Two changes to the stock ``AsyncPostgresSaver`` (measured in bench/README.md):

1. No instance-wide lock. The stock saver serialises every query of every thread behind one
   ``asyncio.Lock`` (langgraph issue 7259), which a single shared connection needs but a pool
   does not: here each query checks out its own pooled connection.
2. Write-behind per round. A loop round is four graph steps, and the stock saver writes each
   step's checkpoint and task writes in their own autocommit statements: about ten commits,
   each waiting for a WAL fsync (~4 ms here). This saver keeps a thread's writes in memory
   until a checkpoint records a finished round (it updates one of ``round_channels``), then
   writes them all in one transaction: one durable commit per round. The service flushes the
   rest when a run ends (:meth:`aflush`), before it answers. A crash therefore loses at most
   the round in progress, never a completed one, which is what the loop history promises.

Reads of a thread flush its pending writes first, so nothing ever reads around the buffer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any

from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata, CheckpointTuple
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg import AsyncCursor
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool

# The graph appends one record to ``rounds`` per finished round (and resets it when a loop opens).
ROUND_CHANNELS = frozenset({"rounds"})

Statement = tuple[str, Any, bool]
"""(SQL, parameters, executemany?) as the stock saver would have executed it."""

_recording_thread: ContextVar[str | None] = ContextVar("recloop_recording_thread", default=None)


class _NoLock:
    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


class _RecordingCursor:
    """Stands in for a cursor while the stock aput/aput_writes build their statements."""

    def __init__(self, pending: dict[str, list[Statement]], thread_id: str):
        self.pending, self.thread_id = pending, thread_id

    async def execute(self, query: str, params: Any = None) -> None:
        self.pending.setdefault(self.thread_id, []).append((query, params, False))

    async def executemany(self, query: str, params_seq: Any) -> None:
        self.pending.setdefault(self.thread_id, []).append((query, list(params_seq), True))


class PooledPostgresSaver(AsyncPostgresSaver):
    """``AsyncPostgresSaver`` over a connection pool: concurrent threads, one commit per round."""

    def __init__(
        self,
        pool: AsyncConnectionPool,
        *,
        write_behind: bool = True,
        round_channels: frozenset[str] = ROUND_CHANNELS,
    ):
        super().__init__(conn=pool)
        self.lock = _NoLock()  # type: ignore[assignment]  # see the module docstring, point 1
        self.write_behind = write_behind
        self.round_channels = round_channels
        self._pending: dict[str, list[Statement]] = {}

    # --- writes -----------------------------------------------------------------------------

    async def aput(
        self, config: Any, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions
    ) -> Any:
        thread_id = str(config["configurable"]["thread_id"])
        token = _recording_thread.set(thread_id if self.write_behind else None)
        try:
            next_config = await super().aput(config, checkpoint, metadata, new_versions)
        finally:
            _recording_thread.reset(token)
        if self.write_behind and not self.round_channels.isdisjoint(new_versions):
            await self.aflush(thread_id)
        return next_config

    async def aput_writes(
        self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        token = _recording_thread.set(str(config["configurable"]["thread_id"]) if self.write_behind else None)
        try:
            await super().aput_writes(config, writes, task_id, task_path)
        finally:
            _recording_thread.reset(token)

    async def aflush(self, thread_id: str) -> None:
        """Write the thread's pending statements in one transaction (one durable commit)."""
        statements = self._pending.pop(str(thread_id), None)
        if not statements:
            return
        pool: AsyncConnectionPool = self.conn  # type: ignore[assignment]
        async with pool.connection() as conn, conn.transaction(), conn.cursor(binary=True) as cur:
            for query, params, many in statements:
                if many:
                    await cur.executemany(query, params)
                else:
                    await cur.execute(query, params)

    # --- reads see everything written ----------------------------------------------------------

    async def aget_tuple(self, config: Any) -> CheckpointTuple | None:
        await self.aflush(config["configurable"]["thread_id"])
        return await super().aget_tuple(config)

    async def alist(self, config: Any, **kwargs: Any) -> AsyncIterator[CheckpointTuple]:
        if config is not None:
            await self.aflush(config["configurable"]["thread_id"])
        async for item in super().alist(config, **kwargs):
            yield item

    async def adelete_thread(self, thread_id: str) -> None:
        self._pending.pop(str(thread_id), None)
        await super().adelete_thread(thread_id)

    # --- one pooled connection per query, or a recorder while buffering ---------------------------

    @asynccontextmanager
    async def _cursor(self, *, pipeline: bool = False) -> AsyncIterator[AsyncCursor[DictRow]]:
        recording = _recording_thread.get()
        if recording is not None:
            yield _RecordingCursor(self._pending, recording)  # type: ignore[misc]
            return
        assert isinstance(self.conn, AsyncConnectionPool), "PooledPostgresSaver needs a pool"
        async with self.conn.connection() as conn:
            if pipeline:
                async with conn.pipeline(), conn.cursor(binary=True, row_factory=dict_row) as cur:
                    yield cur
            else:
                async with conn.cursor(binary=True, row_factory=dict_row) as cur:
                    yield cur
