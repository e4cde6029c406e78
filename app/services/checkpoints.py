"""LangGraph's PostgreSQL saver, made to scale with a pool and to commit once per round.

Three changes to the stock ``AsyncPostgresSaver`` (measured in bench/README.md):

1. No instance-wide lock. The stock saver serialises every query of every thread behind one
   ``asyncio.Lock`` (langgraph issue 7259), which a single shared connection needs but a pool
   does not: here each query checks out its own pooled connection.
2. Write-behind per round. A loop round is four graph steps, and the stock saver writes each
   step's checkpoint and task writes in their own autocommit statements: about ten commits per
   round, each waiting for a WAL fsync. This saver keeps a thread's writes in memory until a
   checkpoint records a finished round (it updates one of ``round_channels``), then commits
   them in one transaction: one durable commit per round. Only what the newest checkpoint needs
   is written — its row (its parent is the thread's last committed checkpoint), the blobs of the
   channel versions it references that are not stored yet, and its own pending task writes;
   the steps in between were superseded by it and are never resumed from. The service flushes
   the rest when a run ends (:meth:`aflush`), before it answers.
3. Group commit per thread. A round's commit runs in the background while the graph goes on;
   rounds that close while it is in flight are committed together right after it. ``aflush``
   waits for all of it, so nothing is acknowledged before it is durable; a crash loses at most
   the rounds of the run in progress whose commit had not landed, never a completed run's.
   A commit that fails keeps its writes and is retried by the next one; ``aflush`` raises if
   the last attempt fails, so the run fails instead of answering.

Reads of a thread flush its pending writes first, so nothing ever reads around the buffer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
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
from psycopg import AsyncConnection, AsyncCursor, sql
from psycopg.rows import DictRow, dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

_log = logging.getLogger(__name__)

# The graph appends one record to ``rounds`` per finished round (and resets it when a loop opens).
ROUND_CHANNELS = frozenset({"rounds"})

Statement = tuple[str, Any, bool]
"""(SQL, parameters, executemany?) as the stock saver would have executed it."""


@dataclass
class _Namespace:
    """What one checkpoint namespace of a thread has not committed yet.

    Values are kept as they are and dumped when committed: most buffered steps are superseded
    by a newer one before then, and their values are never serialised.
    """

    thread_id: str
    checkpoint_ns: str
    parent_id: str | None
    """The checkpoint the first buffered one follows: the last committed (or the run's start)."""
    checkpoint_id: str | None = None
    checkpoint_row: tuple | None = None
    blob_channels: frozenset[str] = frozenset()
    """Channels the newest checkpoint keeps in the blobs table (the others are inline)."""
    versions: dict[str, Any] = field(default_factory=dict)
    """The newest checkpoint's channel versions."""
    blobs: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    """Per channel, the newest (version, value) a buffered checkpoint stores as a blob."""
    writes: dict[str, list[tuple[str, str, str, Sequence[tuple[str, Any]]]]] = field(default_factory=dict)
    """Task writes by the checkpoint they belong to: [(SQL, task id, task path, writes)]."""

    def add_checkpoint(
        self, checkpoint_id: str, row: tuple, blob_values: dict, versions, new_versions
    ) -> None:
        self.checkpoint_id, self.checkpoint_row = checkpoint_id, row
        self.blob_channels, self.versions = frozenset(blob_values), dict(versions)
        for channel, value in blob_values.items():
            if channel in new_versions:
                self.blobs[channel] = (new_versions[channel], value)

    def _newest_id(self) -> str | None:
        # Task writes matter for the newest checkpoint only: a resumed run starts from it. When it
        # is committed already, the buffer started after it and holds its writes under parent_id.
        return self.checkpoint_id if self.checkpoint_row is not None else self.parent_id

    def _newest_writes(self) -> list[tuple[str, str, str, Sequence[tuple[str, Any]]]]:
        return self.writes.get(self._newest_id() or "", [])

    def is_empty(self) -> bool:
        return self.checkpoint_row is None and not self._newest_writes()

    def statements(self, saver: AsyncPostgresSaver) -> list[Statement]:
        """The newest checkpoint with what it needs; superseded steps are left out."""
        statements: list[Statement] = []
        if self.checkpoint_row is not None:
            stored = {
                channel: (version, value)
                for channel, (version, value) in self.blobs.items()
                if channel in self.blob_channels and self.versions.get(channel) == version
            }
            if stored:
                rows = saver._dump_blobs(
                    self.thread_id,
                    self.checkpoint_ns,
                    {channel: value for channel, (_, value) in stored.items()},
                    {channel: version for channel, (version, _) in stored.items()},
                )
                statements.append((saver.UPSERT_CHECKPOINT_BLOBS_SQL, rows, True))
            thread, ns, checkpoint_id, _, *rest = self.checkpoint_row
            statements.append(
                (saver.UPSERT_CHECKPOINTS_SQL, (thread, ns, checkpoint_id, self.parent_id, *rest), False)
            )
        newest = self._newest_id()
        for query, task_id, task_path, writes in self._newest_writes():
            rows = saver._dump_writes(self.thread_id, self.checkpoint_ns, newest, task_id, task_path, writes)
            statements.append((query, rows, True))
        return statements

    def absorb_older(self, older: _Namespace) -> None:
        """Take back a failed commit's content under what was buffered since (retried next time)."""
        self.parent_id = older.parent_id
        if self.checkpoint_row is None:
            self.checkpoint_id, self.checkpoint_row = older.checkpoint_id, older.checkpoint_row
            self.blob_channels, self.versions = older.blob_channels, older.versions
        self.blobs = {**older.blobs, **self.blobs}
        for checkpoint_id, writes in older.writes.items():
            self.writes.setdefault(checkpoint_id, [])[:0] = writes


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
        background_commits: bool = True,
        commit_delay_s: float = 0.0,
        round_channels: frozenset[str] = ROUND_CHANNELS,
    ):
        super().__init__(conn=pool)
        self.lock = _NoLock()  # type: ignore[assignment]  # see the module docstring, point 1
        self.write_behind = write_behind
        self.background_commits = background_commits
        self.commit_delay_s = commit_delay_s
        self.round_channels = round_channels
        self._pending: dict[str, dict[str, _Namespace]] = {}
        self._committing: dict[str, asyncio.Task[None]] = {}
        self._commit_again: set[str] = set()
        self._delaying: set[str] = set()

    def has_pending(self, thread_id: str) -> bool:
        """Whether the thread has writes that are not committed yet (buffered or in flight)."""
        thread_id = str(thread_id)
        return any(not ns.is_empty() for ns in self._pending.get(thread_id, {}).values()) or (
            thread_id in self._committing
        )

    # --- writes -----------------------------------------------------------------------------

    def _namespace(self, thread_id: str, checkpoint_ns: str, parent_id: str | None) -> _Namespace:
        namespaces = self._pending.setdefault(thread_id, {})
        if checkpoint_ns not in namespaces:
            namespaces[checkpoint_ns] = _Namespace(thread_id, checkpoint_ns, parent_id)
        return namespaces[checkpoint_ns]

    async def aput(
        self, config: Any, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions
    ) -> Any:
        if not self.write_behind:
            return await super().aput(config, checkpoint, metadata, new_versions)
        configurable = config["configurable"]
        thread_id, checkpoint_ns = str(configurable["thread_id"]), configurable["checkpoint_ns"]
        buffer = self._namespace(thread_id, checkpoint_ns, configurable.get("checkpoint_id"))
        row, blob_values = self._checkpoint_row(config, checkpoint, metadata)
        buffer.add_checkpoint(
            checkpoint["id"], row, blob_values, checkpoint["channel_versions"], new_versions
        )
        if self._closes_round(checkpoint, new_versions):
            if self.background_commits:
                self._start_commit(thread_id)
            else:
                await self.aflush(thread_id)
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": checkpoint_ns,
                "checkpoint_id": checkpoint["id"],
            }
        }

    async def aput_writes(
        self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        if not self.write_behind:
            return await super().aput_writes(config, writes, task_id, task_path)
        configurable = config["configurable"]
        thread_id, checkpoint_ns = str(configurable["thread_id"]), configurable["checkpoint_ns"]
        query = (
            self.UPSERT_CHECKPOINT_WRITES_SQL
            if all(w[0] in WRITES_IDX_MAP for w in writes)
            else self.INSERT_CHECKPOINT_WRITES_SQL
        )
        buffer = self._namespace(thread_id, checkpoint_ns, configurable["checkpoint_id"])
        buffer.writes.setdefault(configurable["checkpoint_id"], []).append(
            (query, task_id, task_path, tuple(writes))
        )

    def _closes_round(self, checkpoint: Checkpoint, new_versions: ChannelVersions) -> bool:
        # A loop's opening resets ``rounds`` to []: no finished round to make durable yet.
        touched = not self.round_channels.isdisjoint(new_versions)
        return touched and any(checkpoint["channel_values"].get(name) for name in self.round_channels)

    def _checkpoint_row(
        self, config: Any, checkpoint: Checkpoint, metadata: CheckpointMetadata
    ) -> tuple[tuple, dict[str, Any]]:
        """The stock ``aput``'s checkpoint row, and the values it stores as blobs (same format)."""
        configurable = config["configurable"]
        copy = checkpoint.copy()
        copy["channel_values"] = copy["channel_values"].copy()
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
        row = (
            configurable["thread_id"],
            configurable["checkpoint_ns"],
            checkpoint["id"],
            configurable.get("checkpoint_id"),
            Jsonb(copy),
            Jsonb(get_serializable_checkpoint_metadata(config, metadata)),
        )
        return row, blob_values

    # --- commits ----------------------------------------------------------------------------

    def _start_commit(self, thread_id: str) -> None:
        if thread_id in self._committing:
            self._commit_again.add(thread_id)  # group commit: taken along right after the one in flight
            return
        self._committing[thread_id] = asyncio.create_task(self._commit_rounds(thread_id))

    async def _commit_rounds(self, thread_id: str) -> None:
        try:
            if self.commit_delay_s:
                # Like PostgreSQL's commit_delay: rounds that close within the delay share a commit,
                # and a run that ends within it commits everything once, with its loop history.
                self._delaying.add(thread_id)
                try:
                    await asyncio.sleep(self.commit_delay_s)
                except asyncio.CancelledError:
                    return  # the run ended first (see _settle): its final commit takes these writes
                finally:
                    self._delaying.discard(thread_id)
            while True:
                self._commit_again.discard(thread_id)
                try:
                    await self._commit(thread_id)
                except Exception as exc:  # the writes stay buffered: aflush retries them and raises
                    _log.warning("background checkpoint commit of thread %s failed: %s", thread_id, exc)
                    return
                if thread_id not in self._commit_again:
                    return
        finally:
            self._committing.pop(thread_id, None)

    async def _settle(self, thread_id: str) -> None:
        """Stop a commit that is still waiting out its delay; wait for one that is running."""
        task = self._committing.get(thread_id)
        if task is not None and thread_id in self._delaying:
            task.cancel()
        while (task := self._committing.get(thread_id)) is not None:
            await asyncio.shield(task)

    async def _commit(self, thread_id: str) -> None:
        """Commit what the thread has buffered, in one pipelined transaction (one durable commit)."""
        async with self.commit_with(thread_id, settle=False) as statements:
            if statements:
                await self._execute(statements)

    @asynccontextmanager
    async def commit_with(self, thread_id: str, *, settle: bool = True) -> AsyncIterator[list[Statement]]:
        """Hand the thread's uncommitted writes to the caller's transaction (one commit for both).

        The service commits a run's last writes together with its loop history. If the caller's
        block fails, the writes go back to the buffer, to be committed by the next flush.
        """
        thread_id = str(thread_id)
        if settle:
            await self._settle(thread_id)
        taken = self._pending.pop(thread_id, None) or {}
        try:
            yield [statement for ns in taken.values() for statement in ns.statements(self)]
        except BaseException:
            for checkpoint_ns, older in taken.items():
                self._namespace(thread_id, checkpoint_ns, older.parent_id).absorb_older(older)
            raise

    async def _execute(self, statements: list[Statement]) -> None:
        pool: AsyncConnectionPool = self.conn  # type: ignore[assignment]
        # Pipeline mode: every statement is sent at once, one network round trip and one commit.
        async with (
            pool.connection() as conn,
            conn.pipeline(),
            conn.transaction(),
            conn.cursor(binary=True) as cur,
        ):
            await _run(cur, statements)

    async def aflush(self, thread_id: str) -> None:
        """Make everything the thread wrote durable: wait for the commit in flight, commit the rest."""
        thread_id = str(thread_id)
        await self._settle(thread_id)
        await self._commit(thread_id)

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
        thread_id = str(thread_id)
        await self._settle(thread_id)
        self._pending.pop(thread_id, None)
        await super().adelete_thread(thread_id)

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


async def execute_in_transaction(conn: AsyncConnection, statements: list[Statement], schema: str) -> None:
    """Run a saver's statements inside another open transaction on ``conn`` (a psycopg connection)."""
    async with conn.cursor(binary=True) as cur:
        # The saver's SQL names its tables unqualified; they live in their own schema.
        await cur.execute(sql.SQL("SET LOCAL search_path TO {}, public").format(sql.Identifier(schema)))
        await _run(cur, statements)


async def _run(cur: AsyncCursor, statements: list[Statement]) -> None:
    for query, params, many in statements:
        if many:
            await cur.executemany(query, params)
        else:
            await cur.execute(query, params)
