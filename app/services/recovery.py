"""Nothing is left ``running``: a loop whose run ended unrecorded is resolved as failed, with why.

A loop is ``running`` from its start until its run records it. A run can end without that
record: its worker lost the database (the failure could not be written either), its request was
cancelled (a shutdown), or its worker died (SIGKILL, out of memory). Every worker watches
(:func:`watch`, every ``Settings.stale_check_s``) and resolves

- its own loops that it no longer runs, once the database answers: failed with the cause it
  knows, "database unavailable: ..." (its record, or the commit of its start, failed with the
  database gone), else resumed from their last committed checkpoint (app/services/resume.py).
  Only the worker itself knows that it no longer runs a loop, so while it lives no other worker
  decides that;
- the loops of workers that are gone: resumed (app/services/resume.py). Each worker holds an advisory lock
  named after itself for its whole life, taken again about a second after the database is
  back. A worker whose lock stays free for ``Settings.stale_grace_s`` while the same database
  server stays up (``pg_postmaster_start_time``) is gone: right after a restart every worker's
  lock is free for a moment, so one look is never enough. Its loop is resolved only if its
  session's lock (held by the run on another connection) is free as well.

A worker cut off from the database for longer than the grace (a network partition that
PostgreSQL noticed) cannot be told from a dead one, and its loop may be resolved while it still
runs. Its late record then finds the loop no longer ``running`` under its row lock and lands
nothing (app/services/loop_record.py ``LoopLedger.record``): the loop stays failed, its error notes that
the result came later and was discarded, the request answers 503 with Retry-After, and a keyed
retry runs the loop again, once.

A request on a session shown ``running`` (:func:`settle`) resumes this worker's stopped loop at
once, and answers 409 with Retry-After while a loop runs there (resumed, or another worker's
still undecided). Only a loop of a worker from before revision 0005 (no worker recorded) is
resolved as :data:`ABANDONED`.
Resolving a loop frees its session (``running`` -> ``idle``) in the same transaction, so a
session's status always matches its loops.
"""

from __future__ import annotations

import asyncio
import logging
import time

from sqlalchemy import func, select

from app.db import loops as loops_repo
from app.db.database import Database
from app.db.models import Session
from app.services import resume
from app.services.errors import DATABASE_DOWN, SessionBusy
from app.services.service_runner import LoopKey, ServiceRunner

ABANDONED = "abandoned: the worker running the loop stopped before it finished"
DATABASE_UNAVAILABLE = "database unavailable"
"""The start of the error of a loop that failed because its worker lost the database."""
_log = logging.getLogger(__name__)


def worker_lock(worker_id: str) -> str:
    return f"recloop-worker:{worker_id}"


def database_error(exc: BaseException) -> str:
    return f"{DATABASE_UNAVAILABLE}: the loop could not be recorded ({type(exc).__name__}: {exc})".strip()


async def _resolve(database: Database, runner: ServiceRunner, loop: LoopKey, error: str) -> None:
    async with database.sessionmaker.begin() as db:
        if await loops_repo.resolve_running(db, session_id=loop[0], loop_index=loop[1], error=error):
            _log.warning("loop %s of session %s resolved as failed: %s", loop[1], loop[0], error)
    runner.unrecorded.pop(loop, None)


async def settle(
    database: Database, runner: ServiceRunner, session: Session, *, run: resume.Runner | None = None
) -> None:
    """Under the session's lock, before a run on a session shown ``running``: 409 (Retry-After)
    while a loop runs there; a loop this worker stopped running goes on with ``run`` once this
    request lets go (without ``run``, the watch resumes it within two sweeps)."""
    if session.status != "running":
        return
    async with database.sessionmaker() as db:
        running = await loops_repo.running_loops(db, session_id=session.id)
    for session_id, loop_index, worker in running:
        key = (session_id, loop_index)
        busy = SessionBusy(
            f"loop {loop_index} of the session is still running (or its worker lost the database "
            "and is being checked); retry shortly",
            retry_after_s=runner.settings.db_retry_after_s,
        )
        if key in runner.inflight or (worker is not None and worker != runner.worker_id):
            raise busy
        if worker is None or key in runner.unrecorded:  # a worker before 0005, or a known failure
            await _resolve(database, runner, key, runner.unrecorded.get(key, ABANDONED))
            continue
        if run is not None:  # this worker's own loop that it no longer runs: it goes on
            resume.start(database, runner, key, from_worker=worker, run=run)
        raise busy


class _Watch:
    """What one worker's watch has seen of the others (between its sweeps)."""

    def __init__(self, run: resume.Runner) -> None:
        self.run = run
        """Runs a loop taken over (app/services/loops.py ``run_takeover``)."""
        self.free_since: dict[str, float] = {}
        self.server_started: object = None
        self.idle_own: set[LoopKey] = set()
        self.unrecorded_gone: set[LoopKey] = set()

    async def sweep(self, database: Database, runner: ServiceRunner) -> None:
        async with database.sessionmaker() as db:
            started = (await db.execute(select(func.pg_postmaster_start_time()))).scalar_one()
            running = await loops_repo.running_loops(db)
        if started != self.server_started:  # a restart: every lock was free for a moment
            self.server_started, self.free_since = started, {}
        # Own loops not run any more, seen so on two sweeps in a row (a run that is just recording
        # its loop leaves the in-flight set a moment before its commit is visible).
        idle_own = {(s, k) for s, k, w in running if w == runner.worker_id and (s, k) not in runner.inflight}
        decided = [
            (key, runner.unrecorded[key]) for key in idle_own & self.idle_own if key in runner.unrecorded
        ]
        resumable = [
            (key, runner.worker_id) for key in idle_own & self.idle_own if key not in runner.unrecorded
        ]
        self.idle_own = idle_own
        # A failure noted for a loop not running (a start whose commit never landed, a loop another
        # worker resolved), on two sweeps in a row: nothing left to resolve.
        shown = {(s, k) for s, k, _ in running}
        gone_by = {key for key in runner.unrecorded if key not in shown and key not in runner.inflight}
        for key in gone_by & self.unrecorded_gone:
            runner.unrecorded.pop(key, None)
        self.unrecorded_gone = gone_by
        now = time.monotonic()
        others = {w for _, _, w in running if w is not None and w != runner.worker_id}
        for worker in others:
            if await database.locks.is_free(worker_lock(worker)):
                self.free_since.setdefault(worker, now)
            else:
                self.free_since.pop(worker, None)
        self.free_since = {w: t for w, t in self.free_since.items() if w in others}
        gone = {w for w, t in self.free_since.items() if now - t >= runner.settings.stale_grace_s}
        for session_id, loop_index, worker in running:
            # The run holds its session's lock on a connection of its own: while PostgreSQL still
            # sees that one, the worker is alive whatever became of its worker lock.
            if worker in gone and await database.locks.is_free(str(session_id)):
                resumable.append(((session_id, loop_index), worker))
        for key, error in decided:
            await _resolve(database, runner, key, error)
        for key, worker in resumable:
            resume.start(database, runner, key, from_worker=worker, run=self.run)


async def watch(database: Database, runner: ServiceRunner, *, run: resume.Runner) -> None:
    """For the worker's lifetime: hold its own lock, and resume (with ``run``) or resolve what is
    left ``running``."""
    keeper = asyncio.create_task(database.locks.keep(worker_lock(runner.worker_id), retry_s=1.0))
    seen = _Watch(run)
    try:
        while True:
            await asyncio.sleep(runner.settings.stale_check_s)
            try:
                await seen.sweep(database, runner)
            except DATABASE_DOWN as exc:
                database.outage.saw(exc)  # requests fail fast from now on (postgres/outage.py)
                seen.free_since = {}  # nothing can be observed while the database is away
            except Exception:
                _log.exception("the sweep for loops left running failed")
    finally:
        keeper.cancel()
