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
from typing import Any

from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from psycopg import AsyncCursor
from psycopg.rows import DictRow, dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

# The graph appends one record to ``rounds`` per finished round (and resets it when a loop opens).
ROUND_CHANNELS = frozenset({"rounds"})

Statement = tuple[str, Any, bool]
"""(SQL, parameters, executemany?) as the stock saver would have executed it."""


class _NoLock:
    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


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
        if not self.write_behind:
            return await super().aput(config, checkpoint, metadata, new_versions)
        thread_id = str(config["configurable"]["thread_id"])
        statements, next_config = self._checkpoint_statements(config, checkpoint, metadata, new_versions)
        self._pending.setdefault(thread_id, []).extend(statements)
        if self._closes_round(checkpoint, new_versions):
            await self.aflush(thread_id)
        return next_config

    async def aput_writes(
        self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        if not self.write_behind:
            return await super().aput_writes(config, writes, task_id, task_path)
        configurable = config["configurable"]
        # As the stock saver; the payloads are small, so they are dumped inline instead of in a
        # worker thread (a thread hop per write cost more than the dump under load).
        query = (
            self.UPSERT_CHECKPOINT_WRITES_SQL
            if all(w[0] in WRITES_IDX_MAP for w in writes)
            else self.INSERT_CHECKPOINT_WRITES_SQL
        )
        params = self._dump_writes(
            configurable["thread_id"],
            configurable["checkpoint_ns"],
            configurable["checkpoint_id"],
            task_id,
            task_path,
            writes,
        )
        self._pending.setdefault(str(configurable["thread_id"]), []).append((query, params, True))

    def _closes_round(self, checkpoint: Checkpoint, new_versions: ChannelVersions) -> bool:
        # A loop's opening resets ``rounds`` to []: no finished round to make durable yet.
        touched = not self.round_channels.isdisjoint(new_versions)
        return touched and any(checkpoint["channel_values"].get(name) for name in self.round_channels)

    def _checkpoint_statements(
        self, config: Any, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions
    ) -> tuple[list[Statement], dict[str, Any]]:
        """The statements the stock ``aput`` executes (same SQL, same rows), and its return value."""
        configurable = config["configurable"].copy()
        thread_id = configurable.pop("thread_id")
        checkpoint_ns = configurable.pop("checkpoint_ns")
        parent_id = configurable.pop("checkpoint_id", None)
        copy = checkpoint.copy()
        copy["channel_values"] = copy["channel_values"].copy()
        next_config = {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": checkpoint_ns,
                "checkpoint_id": checkpoint["id"],
            }
        }
        # Primitive values stay inline in the checkpoint row; the others go to the blobs table.
        blob_values = {}
        for key, value in checkpoint["channel_values"].items():
            if isinstance(value, _DeltaSnapshot):
                blob_values[key] = copy["channel_values"].pop(key)
                copy["channel_values"][key] = True
            elif value is None or isinstance(value, (str, int, float, bool)):
                pass
            else:
                blob_values[key] = copy["channel_values"].pop(key)
        statements: list[Statement] = []
        if blob_versions := {k: v for k, v in new_versions.items() if k in blob_values}:
            rows = self._dump_blobs(thread_id, checkpoint_ns, blob_values, blob_versions)
            statements.append((self.UPSERT_CHECKPOINT_BLOBS_SQL, rows, True))
        row = (
            thread_id,
            checkpoint_ns,
            checkpoint["id"],
            parent_id,
            Jsonb(copy),
            Jsonb(get_serializable_checkpoint_metadata(config, metadata)),
        )
        statements.append((self.UPSERT_CHECKPOINTS_SQL, row, False))
        return statements, next_config

    async def aflush(self, thread_id: str) -> None:
        """Write the thread's pending statements in one transaction (one durable commit)."""
        statements = self._pending.pop(str(thread_id), None)
        if not statements:
            return
        pool: AsyncConnectionPool = self.conn  # type: ignore[assignment]
        # Pipeline mode: every statement is sent at once, one network round trip and one commit.
        async with (
            pool.connection() as conn,
            conn.pipeline(),
            conn.transaction(),
            conn.cursor(binary=True) as cur,
        ):
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

    # --- one pooled connection per query (the stock saver's reads and its non-buffered writes) ------

    @asynccontextmanager
    async def _cursor(self, *, pipeline: bool = False) -> AsyncIterator[AsyncCursor[DictRow]]:
        assert isinstance(self.conn, AsyncConnectionPool), "PooledPostgresSaver needs a pool"
        async with self.conn.connection() as conn:
            if pipeline:
                async with conn.pipeline(), conn.cursor(binary=True, row_factory=dict_row) as cur:
                    yield cur
            else:
                async with conn.cursor(binary=True, row_factory=dict_row) as cur:
                    yield cur
