"""The one place that knows LangGraph internals: the stock PostgreSQL saver's storage format.

The service's saver (postgres/checkpoints.py) writes rows that LangGraph's stock
``AsyncPostgresSaver`` reads back (and migrates, prunes and deletes). How a checkpoint becomes
rows is not a public LangGraph API: which channel values stay inline in the checkpoint's JSON
and which go to the blobs table (with a ``True`` marker for a ``DeltaChannel`` snapshot, a
private type), how blob and write rows are laid out, and the SQL that stores them. This module
mirrors that format for the versions in :data:`TESTED_VERSIONS`, and :func:`check_versions`
refuses any other: an upgrade must come with a run of the conformance suite
(tests/test_db_checkpoint_conformance.py) and a new entry here.

Reads, pruning, deletion and ``setup()`` use the stock saver through its public methods
(:func:`stock_saver`), one instance per pooled connection.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any

from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_serializable_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.postgres.base import BasePostgresSaver
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from psycopg import AsyncConnection, AsyncCursor
from psycopg.types.json import Jsonb

TESTED_VERSIONS: Mapping[str, tuple[str, ...]] = {
    # distribution -> versions whose storage format this module was checked against
    "langgraph-checkpoint": ("4.3.2",),
    "langgraph-checkpoint-postgres": ("3.2.0",),
}

# The stock saver's statements (public class attributes of its base class, which the service's
# saver extends for them and for its channel versions).
UPSERT_BLOBS_SQL = BasePostgresSaver.UPSERT_CHECKPOINT_BLOBS_SQL
UPSERT_CHECKPOINTS_SQL = BasePostgresSaver.UPSERT_CHECKPOINTS_SQL
UPSERT_WRITES_SQL = BasePostgresSaver.UPSERT_CHECKPOINT_WRITES_SQL
INSERT_WRITES_SQL = BasePostgresSaver.INSERT_CHECKPOINT_WRITES_SQL
TABLE_ORDER = {UPSERT_BLOBS_SQL: 0, UPSERT_CHECKPOINTS_SQL: 1, UPSERT_WRITES_SQL: 2, INSERT_WRITES_SQL: 2}
"""Statements of one table stay in call order; blobs go first, as the stock ``aput`` writes them."""


class UntestedLangGraph(RuntimeError):
    """The installed LangGraph checkpoint packages are not the ones this format was checked against."""


def check_versions(installed: Mapping[str, str] | None = None) -> None:
    """Raise :class:`UntestedLangGraph` unless every pinned package is at a tested version."""
    wrong = []
    for distribution, tested in TESTED_VERSIONS.items():
        found = (installed or {}).get(distribution) or version(distribution)
        if found not in tested:
            wrong.append(f"{distribution} {found} (tested: {', '.join(tested)})")
    if wrong:
        raise UntestedLangGraph(
            "the checkpoint saver writes LangGraph's PostgreSQL format, which is not a public API, and "
            f"was not checked against {'; '.join(wrong)}. Install the tested versions, or run "
            "tests/test_db_checkpoint_conformance.py on these and add them to "
            "postgres/checkpoint_format.TESTED_VERSIONS."
        )


def checkpoint_rows(
    serde: SerializerProtocol,
    config: Mapping[str, Any],
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
) -> list[tuple[str, tuple]]:
    """What the stock ``aput`` executes for one checkpoint: its new blobs, then its row."""
    configurable = config["configurable"]
    thread_id, checkpoint_ns = configurable["thread_id"], configurable["checkpoint_ns"]
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
    rows: list[tuple[str, tuple]] = [
        (UPSERT_BLOBS_SQL, (thread_id, checkpoint_ns, key, str(ver), *serde.dumps_typed(blob_values[key])))
        for key, ver in new_versions.items()
        if key in blob_values
    ]
    rows.append(
        (
            UPSERT_CHECKPOINTS_SQL,
            (
                thread_id,
                checkpoint_ns,
                checkpoint["id"],
                configurable.get("checkpoint_id"),
                Jsonb(copy),
                Jsonb(get_serializable_checkpoint_metadata(config, metadata)),  # type: ignore[arg-type]
            ),
        )
    )
    return rows


def write_rows(
    serde: SerializerProtocol,
    config: Mapping[str, Any],
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
) -> list[tuple[str, tuple]]:
    """What the stock ``aput_writes`` executes: one row per write, special channels upserted."""
    configurable = config["configurable"]
    query = UPSERT_WRITES_SQL if all(w[0] in WRITES_IDX_MAP for w in writes) else INSERT_WRITES_SQL
    return [
        (
            query,
            (
                configurable["thread_id"],
                configurable["checkpoint_ns"],
                configurable["checkpoint_id"],
                task_id,
                task_path,
                WRITES_IDX_MAP.get(channel, idx),
                channel,
                *serde.dumps_typed(value),
            ),
        )
        for idx, (channel, value) in enumerate(writes)
    ]


def stock_saver(conn: AsyncConnection, serde: SerializerProtocol) -> AsyncPostgresSaver:
    """LangGraph's saver on one connection (autocommit, dict rows), for its public read/delete methods."""
    return AsyncPostgresSaver(conn=conn, serde=serde)


# --- the newest checkpoint of a thread, kept as the rows that stored it --------------------------

LATEST_SQL = """
select c.checkpoint_id,
    (select count(*) from checkpoint_writes w
        where w.thread_id = c.thread_id and w.checkpoint_ns = c.checkpoint_ns
            and w.checkpoint_id = c.checkpoint_id) as writes
from checkpoints c
where c.thread_id = %s and c.checkpoint_ns = %s
order by c.checkpoint_id desc limit 1"""
"""Which checkpoint is a thread's newest, and how many task writes it has: one index lookup."""


@dataclass
class ThreadTip:
    """A thread's newest checkpoint as this process wrote it: enough to answer a "latest" read.

    Built from the rows the saver stores, in the order it stores them, so it holds what the
    stock ``aget_tuple`` would read back (its SQL joins the checkpoint's channel versions with
    the blob rows and collects the checkpoint's writes) without fetching the blobs again.
    """

    channels: dict[str, tuple[str, tuple[str, bytes] | None]] = field(default_factory=dict)
    """channel -> (newest version written here, its serialised blob, or None: inline or empty)."""
    checkpoint: tuple | None = None
    """The newest checkpoint row's parameters (see :func:`checkpoint_rows`)."""
    writes: dict[tuple[str, int], tuple] = field(default_factory=dict)
    """(task id, idx) -> write row parameters, for the newest checkpoint only (the table's key)."""

    @property
    def checkpoint_id(self) -> str | None:
        return self.checkpoint[2] if self.checkpoint else None

    def record(self, rows: Sequence[tuple[str, tuple]], new_versions: ChannelVersions | None = None) -> None:
        """Take the rows of one ``aput`` (with its new versions) or one ``aput_writes``."""
        blobs = {p[2]: (p[3], (p[4], p[5])) for query, p in rows if query == UPSERT_BLOBS_SQL}
        for channel, version_ in (new_versions or {}).items():
            self.channels[channel] = blobs.get(channel, (str(version_), None))
        for query, params in rows:
            if query == UPSERT_CHECKPOINTS_SQL:
                self.checkpoint, self.writes = params, {}
            elif query in (UPSERT_WRITES_SQL, INSERT_WRITES_SQL) and params[2] == self.checkpoint_id:
                key = (params[3], params[5])
                if query == UPSERT_WRITES_SQL or key not in self.writes:  # insert: on conflict do nothing
                    self.writes[key] = params

    async def current(self, cur: AsyncCursor, thread_id: str, checkpoint_ns: str) -> bool:
        """Whether the database's newest checkpoint of the thread is this one, with the same writes."""
        if self.checkpoint is None:
            return False
        await cur.execute(LATEST_SQL, (thread_id, checkpoint_ns))
        row = await cur.fetchone()
        if row is None:
            return False
        found_id, found_writes = (row["checkpoint_id"], row["writes"]) if isinstance(row, Mapping) else row
        return found_id == self.checkpoint_id and found_writes == len(self.writes)

    def to_tuple(self, serde: SerializerProtocol) -> CheckpointTuple | None:
        """The stock ``aget_tuple``'s answer, or None if a channel's blob was written elsewhere."""
        if self.checkpoint is None:
            return None
        thread_id, checkpoint_ns, checkpoint_id, parent_id, checkpoint_json, metadata_json = self.checkpoint
        # Through JSON, as the JSONB columns give them back (tuples become lists, and so on).
        checkpoint = json.loads(json.dumps(checkpoint_json.obj))
        values = dict(checkpoint.get("channel_values") or {})
        for channel, version_ in checkpoint["channel_versions"].items():
            known = self.channels.get(channel)
            if known is None or known[0] != str(version_):
                return None
            if known[1] is not None:
                values[channel] = serde.loads_typed(known[1])
        writes = sorted(self.writes.values(), key=lambda w: writes_sort_key(w[4], w[3], w[5]))

        def config_of(an_id: str) -> dict[str, Any]:
            configurable = {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": an_id}
            return {"configurable": configurable}

        return CheckpointTuple(
            config_of(checkpoint_id),
            {**checkpoint, "channel_values": values},
            json.loads(json.dumps(metadata_json.obj)),
            config_of(parent_id) if parent_id else None,
            [(w[3], w[6], serde.loads_typed((w[7], w[8]))) for w in writes],
        )
