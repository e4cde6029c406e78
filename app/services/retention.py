"""Retention: prune finished sessions' checkpoint histories to their newest checkpoint, expire
idle sessions and old Idempotency-Keys (docs/deploy.md, "Retention"). Run by `recloop db prune`,
from any machine, while the service serves: each session is pruned under its own advisory lock,
so a loop that starts on it meanwhile gets 409 for that moment instead of racing the deletes, and
a busy session is skipped (the next prune takes it)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db import idempotency as idempotency_repo
from app.db import retention as retention_repo
from app.db.engine import checkpoint_pool, create_engine, create_sessionmaker, lock_pool
from app.settings import Settings
from postgres.checkpoints import PooledPostgresSaver
from postgres.locks import AdvisoryLocks


class _Busy(Exception):
    pass


@dataclass
class PruneReport:
    """What one pass did; ``*_before``/``*_after`` are the checkpoint tables' rows and bytes."""

    policy: dict[str, object]
    sessions_pruned: int = 0
    sessions_expired: int = 0
    sessions_skipped_busy: int = 0
    idempotency_keys_expired: int = 0
    storage_before: dict[str, dict[str, int]] = field(default_factory=dict)
    storage_after: dict[str, dict[str, int]] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class RetentionStore:
    """What pruning needs, without models: the service tables, the saver, the session locks."""

    sessionmaker: async_sessionmaker[AsyncSession]
    saver: PooledPostgresSaver
    locks: AdvisoryLocks
    schema: str


@asynccontextmanager
async def open_store(url: str, settings: Settings) -> AsyncIterator[RetentionStore]:
    async with AsyncExitStack() as stack:
        engine = create_engine(url, settings)
        stack.push_async_callback(engine.dispose)
        pools = [lock_pool(url, settings), checkpoint_pool(url, settings)]
        for pool in pools:
            await pool.open(wait=True)
            stack.push_async_callback(pool.close)
        yield RetentionStore(
            sessionmaker=create_sessionmaker(engine),
            saver=PooledPostgresSaver(pools[1], write_behind=False),
            locks=AdvisoryLocks(pools[0]),
            schema=settings.checkpoint_schema,
        )


def policy_of(settings: Settings) -> dict[str, object]:
    return {
        "checkpoint_retention": settings.checkpoint_retention,
        "checkpoint_history_days": settings.checkpoint_history_days,
        "session_idle_ttl_days": settings.session_idle_ttl_days,
        "idempotency_ttl_s": settings.idempotency_ttl_s,
    }


async def prune(
    store: RetentionStore,
    settings: Settings,
    *,
    now: datetime | None = None,
    progress: Callable[[str, int], None] | None = None,
) -> PruneReport:
    """One pass of the policy in ``settings``: expire idle sessions past their TTL, then prune the
    checkpoint histories of sessions idle past ``checkpoint_history_days``."""
    now = now or datetime.now(UTC)
    report = PruneReport(policy=policy_of(settings))
    async with store.sessionmaker() as db:
        report.storage_before = await retention_repo.checkpoint_storage(db, schema=store.schema)
    if settings.session_idle_ttl_days > 0:
        expire_before = now - timedelta(days=settings.session_idle_ttl_days)
        await _each_candidate(
            store,
            settings,
            lambda db, after: retention_repo.expired_sessions(
                db, idle_before=expire_before, limit=settings.prune_batch_size, after=after
            ),
            lambda candidate: _expire(store, candidate, expire_before),
            report,
            "sessions_expired",
            progress,
        )
    if settings.checkpoint_retention == "keep_latest":
        prune_before = now - timedelta(days=settings.checkpoint_history_days)
        await _each_candidate(
            store,
            settings,
            lambda db, after: retention_repo.sessions_with_old_checkpoints(
                db,
                schema=store.schema,
                idle_before=prune_before,
                limit=settings.prune_batch_size,
                after=after,
            ),
            lambda candidate: store.saver.aprune([candidate.thread_id], strategy="keep_latest"),
            report,
            "sessions_pruned",
            progress,
        )
    report.idempotency_keys_expired = await _expire_keys(store, settings, now, progress)
    async with store.sessionmaker() as db:
        report.storage_after = await retention_repo.checkpoint_storage(db, schema=store.schema)
    return report


async def _expire_keys(store: RetentionStore, settings: Settings, now: datetime, progress) -> int:
    """Delete the Idempotency-Keys past ``idempotency_ttl_s`` (no retry replays them any more; a
    key's owner drops its own expired keys when it stores a new one, an idle owner never does)."""
    total = 0
    while True:
        async with store.sessionmaker.begin() as db:
            deleted = await idempotency_repo.delete_expired(db, before=now, limit=settings.prune_batch_size)
        total += deleted
        if progress is not None and deleted:
            progress("idempotency_keys_expired", total)
        if deleted < settings.prune_batch_size:
            return total


async def _expire(store: RetentionStore, candidate: retention_repo.Candidate, idle_before: datetime) -> bool:
    # The row first: once it is gone the API answers 404, so nothing reads a half-deleted thread.
    async with store.sessionmaker.begin() as db:
        deleted = await retention_repo.delete_expired_session(
            db, session_id=candidate.session_id, idle_before=idle_before
        )
    if deleted:
        await store.saver.adelete_thread(candidate.thread_id)
    return deleted


async def _each_candidate(store, settings, find, act, report: PruneReport, counter: str, progress) -> None:
    after = None
    while True:
        async with store.sessionmaker() as db:
            batch = await find(db, after)
        if not batch:
            return
        for candidate in batch:
            try:
                async with store.locks.hold(str(candidate.session_id), busy=_Busy()):
                    if await act(candidate) is not False:
                        setattr(report, counter, getattr(report, counter) + 1)
            except _Busy:
                report.sessions_skipped_busy += 1
        after = batch[-1]
        if progress is not None:
            progress(counter, getattr(report, counter))
