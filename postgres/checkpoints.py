"""LangGraph's PostgreSQL checkpoints over a connection pool, made durable once per loop round.

The saver keeps every checkpoint and every task write, in the stock ``AsyncPostgresSaver``'s
tables and format, so everything LangGraph offers on a thread works: ``get_state_history``,
replaying or forking from any past checkpoint, ``update_state(..., as_node=...)``. It passes
LangGraph's checkpointer conformance suite (tests/test_db_checkpoint_conformance.py). What
differs from the stock saver is *when* rows are written:

1. Write-behind per round. A loop round is four graph steps, and the stock saver commits each
   step's checkpoint and each task's writes on their own: about ten commits per round, each
   waiting for a WAL flush. This saver serialises a thread's rows when LangGraph hands them
   over and keeps them in memory until a checkpoint records a finished round (it updates one
   of ``round_channels``); then all of them are committed in one transaction: one durable
   commit per round, however many rows. Rows are cheap; fsyncs are not.
2. Group commit per thread. A round's commit runs in the background while the graph goes on;
   rounds that close while it is in flight (or within ``commit_delay_s``) share the next one.
   The service hands a run's last rows to the transaction that records its loop history
   (:meth:`commit_with`): both or neither, and one commit per request. :meth:`aflush` waits for
   all of it, so nothing is acknowledged before it is durable; a crash loses at most the rounds
   of the run in progress not committed yet, never a completed run's. A commit that fails keeps
   its rows for the next one; ``aflush`` raises if the last attempt fails.
3. No instance-wide lock. The stock saver serialises every query of every thread behind one
   ``asyncio.Lock`` (langgraph issue 7259), which one shared connection needs but a pool does
   not: each read here takes its own pooled connection.

Reads flush the thread's pending rows first (all threads' for a listing across threads), so
nothing ever reads around the buffer. Reads, pruning and deletion are the stock saver's own
code, called through its public methods; the row format is LangGraph's, mirrored in
postgres/checkpoint_format.py, which is pinned to the LangGraph versions it was checked
against.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from itertools import groupby
from typing import Any

from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.checkpoint.postgres.base import BasePostgresSaver
from langgraph.checkpoint.serde.base import SerializerProtocol
from psycopg import AsyncConnection, AsyncCursor, sql
from psycopg_pool import AsyncConnectionPool
from sqlalchemy.ext.asyncio import AsyncSession

from postgres.checkpoint_format import (
    TABLE_ORDER,
    ThreadTip,
    check_versions,
    checkpoint_rows,
    stock_saver,
    write_rows,
)

_log = logging.getLogger(__name__)

# The graph appends one record to ``rounds`` per finished round (and resets it when a loop opens).
ROUND_CHANNELS = frozenset({"rounds"})

Row = tuple[str, tuple]
"""(SQL, parameters): one statement as the stock saver would have executed it."""


class PooledPostgresSaver(BasePostgresSaver):
    """LangGraph's PostgreSQL checkpoints over a pool: concurrent threads, one commit per round."""

    def __init__(
        self,
        pool: AsyncConnectionPool,
        *,
        write_behind: bool = True,
        background_commits: bool = True,
        commit_delay_s: float = 0.0,
        round_channels: frozenset[str] = ROUND_CHANNELS,
        cached_threads: int = 256,
        serde: SerializerProtocol | None = None,
    ):
        check_versions()
        super().__init__(serde=serde)
        self.pool = pool
        self.write_behind = write_behind
        self.background_commits = background_commits
        self.commit_delay_s = commit_delay_s
        self.round_channels = round_channels
        # Shared by the shallow copies LangGraph makes (``with_allowlist``): never rebound.
        self._pending: dict[str, list[Row]] = {}
        self._committing: dict[str, asyncio.Task[None]] = {}
        self._commit_again: set[str] = set()
        self._delaying: set[str] = set()
        self.cached_threads = cached_threads
        self._tips: OrderedDict[tuple[str, str], ThreadTip] = OrderedDict()

    # --- writes -------------------------------------------------------------------------------

    async def aput(
        self,
        config: Any,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> Any:
        thread_id, config = _thread_of(config)
        # Serialised now: a value the graph changes in place later must not change this checkpoint.
        rows = checkpoint_rows(self.serde, config, checkpoint, metadata, new_versions)
        self._pending.setdefault(thread_id, []).extend(rows)
        self._tip(thread_id, config["configurable"]["checkpoint_ns"]).record(rows, new_versions)
        if not self.write_behind:
            await self.aflush(thread_id)
        elif self._closes_round(checkpoint, new_versions):
            if self.background_commits:
                self._start_commit(thread_id)
            else:
                await self.aflush(thread_id)
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": config["configurable"]["checkpoint_ns"],
                "checkpoint_id": checkpoint["id"],
            }
        }

    async def aput_writes(
        self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        thread_id, config = _thread_of(config)
        rows = write_rows(self.serde, config, writes, task_id, task_path)
        self._pending.setdefault(thread_id, []).extend(rows)
        if (tip := self._tips.get((thread_id, config["configurable"]["checkpoint_ns"]))) is not None:
            tip.record(rows)
        if not self.write_behind:
            await self.aflush(thread_id)

    def _closes_round(self, checkpoint: Checkpoint, new_versions: ChannelVersions) -> bool:
        # A loop's opening resets ``rounds`` to []: no finished round to make durable yet.
        touched = not self.round_channels.isdisjoint(new_versions)
        return touched and any(checkpoint["channel_values"].get(name) for name in self.round_channels)

    # --- commits ------------------------------------------------------------------------------

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
                    return  # the run ended first (see _settle): its final commit takes these rows
                finally:
                    self._delaying.discard(thread_id)
            while True:
                self._commit_again.discard(thread_id)
                try:
                    await self._commit(thread_id)
                except Exception as exc:  # the rows stay buffered: aflush retries them and raises
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
        async with self.commit_with(thread_id, settle=False) as rows:
            if rows:
                await self._execute(rows)

    async def _execute(self, rows: list[Row]) -> None:
        # Pipeline mode: every statement is sent at once, one network round trip and one commit.
        async with (
            self.pool.connection() as conn,
            conn.pipeline(),
            conn.transaction(),
            conn.cursor(binary=True) as cur,
        ):
            await _run(cur, rows)

    @asynccontextmanager
    async def commit_with(self, thread_id: str, *, settle: bool = True) -> AsyncIterator[list[Row]]:
        """Hand the thread's uncommitted rows to the caller's transaction (one commit for both).

        The service commits a run's last rows together with its loop history
        (:func:`execute_in_transaction`). If the caller's block fails, the rows go back to the
        buffer, ahead of anything written since, to be committed by the next flush.
        """
        thread_id = str(thread_id)
        if settle:
            await self._settle(thread_id)
        taken = self._pending.pop(thread_id, None) or []
        try:
            yield taken
        except BaseException:
            if taken:
                self._pending[thread_id] = taken + self._pending.get(thread_id, [])
            raise

    async def aflush(self, thread_id: str) -> None:
        """Make everything the thread wrote durable: wait for the commit in flight, commit the rest."""
        thread_id = str(thread_id)
        await self._settle(thread_id)
        await self._commit(thread_id)

    async def _flush_for(self, config: Mapping[str, Any] | None) -> None:
        thread_id = ((config or {}).get("configurable") or {}).get("thread_id")
        threads = [thread_id] if thread_id is not None else [*self._pending, *self._committing]
        for thread in dict.fromkeys(str(t) for t in threads):
            await self.aflush(thread)

    # --- reads, pruning and deletion: the stock saver's code, after a flush ----------------------

    async def aget_tuple(self, config: Any) -> CheckpointTuple | None:
        await self._flush_for(config)
        async with self.pool.connection() as conn:
            if (found := await self._tip_tuple(conn, config)) is not None:
                return found
            return await stock_saver(conn, self.serde).aget_tuple(config)

    # --- the newest checkpoint this worker wrote, to open the thread's next run without reading it --

    def _tip(self, thread_id: str, checkpoint_ns: str) -> ThreadTip:
        """The thread's cached tip (created if new, least recently written ones evicted)."""
        key = (thread_id, checkpoint_ns)
        if (tip := self._tips.get(key)) is not None:
            self._tips.move_to_end(key)
            return tip
        tip = ThreadTip()
        if self.cached_threads > 0:
            self._tips[key] = tip
            while len(self._tips) > self.cached_threads:
                self._tips.popitem(last=False)
        return tip

    async def _tip_tuple(self, conn: AsyncConnection, config: Any) -> CheckpointTuple | None:
        """A thread's latest checkpoint from what this worker wrote, if nothing newer is stored.

        A run opens with a read of the thread's latest checkpoint, which with the stock query
        fetches every channel's blob (a session's memories make it hundreds of KB). If this worker
        wrote that checkpoint, one index lookup confirms it is still the newest (no other worker
        ran the session since) with the same task writes, and the tuple is rebuilt from the rows
        kept when it was written. Anything else reads the database.
        """
        configurable = config["configurable"]
        if configurable.get("checkpoint_id"):
            return None
        key = (str(configurable["thread_id"]), configurable.get("checkpoint_ns", ""))
        tip = self._tips.get(key)
        if tip is None or tip.checkpoint is None:
            return None
        async with conn.cursor() as cur:
            if not await tip.current(cur, *key):
                self._tips.pop(key, None)
                return None
        return tip.to_tuple(self.serde)

    async def alist(
        self,
        config: Any,
        *,
        filter: dict[str, Any] | None = None,
        before: Any = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        await self._flush_for(config)
        async with self.pool.connection() as conn:
            # Read whole before yielding: a caller that stops early must not keep the connection.
            found = [
                item
                async for item in stock_saver(conn, self.serde).alist(
                    config, filter=filter, before=before, limit=limit
                )
            ]
        for item in found:
            yield item

    async def aget_delta_channel_history(
        self, *, config: Any, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        await self._flush_for(config)
        async with self.pool.connection() as conn:
            return await stock_saver(conn, self.serde).aget_delta_channel_history(
                config=config, channels=channels
            )

    async def adelete_thread(self, thread_id: str) -> None:
        await self._forget(str(thread_id))
        async with self.pool.connection() as conn:
            await stock_saver(conn, self.serde).adelete_thread(str(thread_id))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        if not isinstance(thread_ids, str):  # a str is refused by the stock saver below
            for thread_id in thread_ids:
                if strategy == "delete":
                    await self._forget(str(thread_id))
                else:
                    await self.aflush(thread_id)
                    self._drop_tips(str(thread_id))
        async with self.pool.connection() as conn:
            await stock_saver(conn, self.serde).aprune(thread_ids, strategy=strategy)

    async def _forget(self, thread_id: str) -> None:
        """Drop the thread's uncommitted rows and its cached tip (it is being deleted)."""
        await self._settle(thread_id)
        self._pending.pop(thread_id, None)
        self._drop_tips(thread_id)

    def _drop_tips(self, thread_id: str) -> None:
        for key in [key for key in self._tips if key[0] == thread_id]:
            del self._tips[key]


def _thread_of(config: Any) -> tuple[str, Any]:
    """The config's thread id as text (the buffer's key and the rows' value), and the config with it."""
    thread_id = str(config["configurable"]["thread_id"])
    return thread_id, {**config, "configurable": {**config["configurable"], "thread_id": thread_id}}


async def execute_in_transaction(conn: AsyncConnection, rows: list[Row], schema: str) -> None:
    """Run a saver's rows inside another open transaction on ``conn`` (a psycopg connection)."""
    # Pipelined, as the saver's own commits: the statements go out together, one round trip.
    async with conn.pipeline(), conn.cursor(binary=True) as cur:
        # The saver's SQL names its tables unqualified; they live in their own schema.
        await cur.execute(sql.SQL("SET LOCAL search_path TO {}, public").format(sql.Identifier(schema)))
        await _run(cur, rows)


async def _run(cur: AsyncCursor, rows: list[Row]) -> None:
    """One ``executemany`` per run of equal statements, tables in the stock ``aput``'s order."""
    ordered = sorted(rows, key=lambda row: TABLE_ORDER[row[0]])  # stable: call order within a table
    for query, group in groupby(ordered, key=lambda row: row[0]):
        await cur.executemany(query, [params for _, params in group])


# --- what the service's commit needs, whichever saver is configured ----------------------------


async def write_in(db: AsyncSession, rows: list[Row], schema: str) -> None:
    """Rows handed over by :func:`commit_with`, written in ``db``'s transaction (SQLAlchemy's session)."""
    if rows:
        raw = await (await db.connection()).get_raw_connection()
        await execute_in_transaction(raw.driver_connection, rows, schema)


def commit_with(saver: BaseCheckpointSaver, thread_id: str) -> AbstractAsyncContextManager[list[Row]]:
    """The thread's uncommitted checkpoint rows, to commit in the caller's transaction.

    Only the write-behind saver holds any (:meth:`PooledPostgresSaver.commit_with`); the stock and
    in-memory savers have written everything already, so they hand over nothing.
    """
    if isinstance(saver, PooledPostgresSaver):
        return saver.commit_with(thread_id)
    return nullcontext([])


async def discard(saver: BaseCheckpointSaver, thread_id: str) -> None:
    """Drop what the thread wrote and has not committed (a run whose result is discarded)."""
    if isinstance(saver, PooledPostgresSaver):
        await saver._forget(str(thread_id))


async def flush(saver: BaseCheckpointSaver, thread_id: str) -> None:
    """Make what the thread wrote durable now (a run that failed keeps its finished rounds)."""
    if isinstance(saver, PooledPostgresSaver):
        await saver.aflush(thread_id)
