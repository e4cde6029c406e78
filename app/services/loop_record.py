"""What a loop's run writes to the loop history: its start, its record, or its failure.

A run shows its loop ``running`` before the graph starts (:meth:`LoopLedger.start`), then writes
the outcome and the new rounds with the session's status and the run's last checkpoint rows in
one synchronously committed transaction (:meth:`LoopLedger.record`), or the failure with why
(:meth:`LoopLedger.record_failure`). Only the worker that runs the loop writes its record: a loop
resolved meanwhile by another worker is never overwritten.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic_core import to_jsonable_python
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import loops as loops_repo
from app.db import sessions as sessions_repo
from app.db.database import Database
from app.db.models import Loop, Session, usage_columns
from app.services import idempotency, loop_cancel, metrics, recovery
from app.services.claim import Claim
from app.services.errors import DATABASE_DOWN, LoopSuperseded, ServiceError
from app.services.loop_cancel import ERROR_CHARS
from app.services.service_runner import ServiceRunner
from app.services.sessions import thread_state
from llm.usage import total_usage
from postgres import checkpoints

DISCARDED = "; its worker had lost the database and finished the loop later: that result was discarded"
_log = logging.getLogger(__name__)


@dataclass
class LoopOutcome:
    session_id: uuid.UUID
    loop_index: int
    status: Literal["completed", "awaiting_feedback"]
    final_item: int | None
    final_reason: str | None
    stop_reason: str | None
    rounds: list[dict[str, Any]]
    pending: dict[str, Any] | None
    duration_ms: float
    usage: dict[str, Any] = field(default_factory=dict)


def outcome_of(
    session_id: uuid.UUID, loop_index: int, values: dict[str, Any], pending: dict | None, duration_ms: float
) -> LoopOutcome:
    """The loop's outcome from the graph's state as far as its run got (``pending``: its question)."""
    graph_loop = int(values.get("loop_index") or 0)
    rounds = [r for r in values.get("rounds") or [] if r.get("loop_index", graph_loop) == graph_loop]
    return LoopOutcome(
        session_id=session_id,
        loop_index=loop_index,
        status="awaiting_feedback" if pending is not None else "completed",
        final_item=None if pending is not None else values.get("final_item"),
        final_reason=None if pending is not None else values.get("final_reason"),
        stop_reason=None if pending is not None else values.get("stop_reason"),
        rounds=rounds,
        pending=pending,
        duration_ms=duration_ms,
        usage=dict(total_usage(rounds, "llm_usage")),
    )


def outcome_json(outcome: LoopOutcome) -> dict[str, Any]:
    """The outcome as plain JSON, without its loop's address (stored with a keyed request)."""
    fields = {
        name: value for name, value in asdict(outcome).items() if name not in ("session_id", "loop_index")
    }
    return to_jsonable_python(fields)


def outcome_from_json(session_id: uuid.UUID, loop_index: int, stored: dict[str, Any]) -> LoopOutcome:
    """The outcome :func:`outcome_json` stored."""
    return LoopOutcome(session_id=session_id, loop_index=loop_index, **stored)


class LoopLedger:
    """Loop ``loop_index`` of ``session`` in the history, as one run writes it."""

    def __init__(
        self,
        database: Database,
        runner: ServiceRunner,
        session: Session,
        loop_index: int,
        *,
        resumed: bool,
        params: dict,
        claim: Claim | None = None,
    ):
        self.database, self.runner, self.session, self.loop_index = database, runner, session, loop_index
        self.claim = claim
        """The Idempotency-Key of the request that runs the loop: linked to it with its start, and
        its record noted on it (None: no key, or a run no request waits for, a resumed one)."""
        self.resumed = resumed
        """The loop ran before (paused, or its worker stopped): its stored rounds are kept."""
        self.params = params

    @property
    def key(self) -> tuple[uuid.UUID, int]:
        return (self.session.id, self.loop_index)

    async def start(self) -> None:
        """Show the loop as ``running`` (and keep its number) before the graph starts.

        Not waited for on disk (synchronous_commit off): losing it in a crash loses nothing the
        run would have kept, and the run's own record commits synchronously after it.
        """
        # In flight before the row is visible: the recovery watch never takes it for abandoned.
        self.runner.inflight.add(self.key)
        self.runner.unrecorded.pop(self.key, None)  # an earlier start's, moot now (settled, or never landed)
        try:
            await self.write_start()
        except BaseException as exc:
            if isinstance(exc, DATABASE_DOWN):
                # The connection died at COMMIT: the row may be in, ``running``, with nothing to run
                # it. If so, the watch resolves it with this cause (not "worker stopped") once the
                # database is back, or forgets it if it never landed.
                self.runner.unrecorded[self.key] = recovery.database_error(exc)
            self.runner.inflight.discard(self.key)
            raise

    async def write_start(self) -> None:
        """The loop ``running`` and its session with it: one statement, one round trip (a keyed
        request's key is linked in the same transaction)."""
        start = {
            "session_id": self.session.id,
            "loop_index": self.loop_index,
            "worker_id": self.runner.worker_id,
            "params": None if self.resumed else self.params,
        }
        if self.claim is None:
            async with self.database.one_statement() as db:
                await loops_repo.start_loop(db, **start)
        else:
            async with self.database.sessionmaker.begin() as db:
                await loops_repo.start_loop(db, **start)
                # The key stands for this loop from now on: its retry replays the loop once it is
                # recorded, waits (409) while it runs, and runs again only if it failed.
                await idempotency.link(db, self.claim, session_id=self.session.id, loop_index=self.loop_index)

    async def status(self) -> str | None:
        """The loop's status in the history now (None: no such loop)."""
        async with self.database.sessionmaker() as db:
            loop = await loops_repo.get_loop(db, session_id=self.session.id, loop_index=self.loop_index)
        return loop.status if loop is not None else None

    async def record(self, outcome: LoopOutcome) -> None:
        """The loop's history and the session's status, in one (synchronously committed) transaction.

        The loop's row (inserted ``running`` by :meth:`start`) gets its outcome and its rounds; a
        resumed one (human judge) only the rounds that are not stored yet. (loop, round) is unique,
        so a fork could not be written anyway.
        """
        # A write-behind saver's last writes (the final round, a pending interrupt) are committed
        # in the history's transaction: one durable commit, and both or neither.
        handover = checkpoints.commit_with(self.runner.saver, self.session.thread_id)
        async with handover as checkpoint_statements, self.database.sessionmaker.begin() as db:
            new_rounds = await self._stage(db, outcome, checkpoint_statements)
            if new_rounds is None:
                # Resolved meanwhile: another worker found this one's lock free for stale_grace_s
                # (cut off from the database) and a retry may already have run the loop again, so
                # this result must not land. Its checkpoint rows are dropped, never committed.
                await loops_repo.note_discarded_result(
                    db,
                    session_id=self.session.id,
                    loop_index=self.loop_index,
                    worker_id=self.runner.worker_id,
                    note=DISCARDED,
                )
        if new_rounds is None:
            await checkpoints.discard(self.runner.saver, self.session.thread_id)
            raise LoopSuperseded(
                f"loop {self.loop_index} was taken over by another worker while this one could not reach "
                "the database; its result was discarded: retry (the same Idempotency-Key answers with "
                "the loop as recorded, or runs it again if it failed)",
                field=None,
            )
        metrics.observe_rounds(new_rounds)
        if outcome.status == "completed":
            metrics.LOOPS.labels(stop_reason=outcome.stop_reason or "unknown").inc()

    async def _stage(
        self, db: AsyncSession, outcome: LoopOutcome, checkpoint_statements: list
    ) -> list[dict[str, Any]] | None:
        """Write the loop, its new rounds, the session's status and the key's usage, then the
        run's checkpoint rows; the new rounds, or None (nothing written) when the loop is not this
        worker's ``running`` loop any more.

        One statement for the history (Core, not the ORM's unit of work: a round trip and its
        CPU per row), one pipelined round trip for the checkpoint rows.
        """
        stored = (
            await loops_repo.stored_rounds(db, session_id=self.session.id, loop_index=self.loop_index)
            if self.resumed
            else set()
        )
        new_rounds = [r for r in outcome.rounds if r["round"] not in stored]
        recorded = await loops_repo.record_loop(
            db,
            session_id=self.session.id,
            loop_index=self.loop_index,
            worker_id=self.runner.worker_id,
            values=_finished_values(outcome, status=outcome.status),
            duration_ms=outcome.duration_ms,
            rounds=loops_repo.round_values(new_rounds),
            session_status="awaiting_feedback" if outcome.pending is not None else "idle",
        )
        if not recorded:
            return None
        await idempotency.note_loop_outcome(db, self.claim, outcome_json(outcome))
        await loops_repo.add_key_usage(
            db,
            owner_key_id=self.session.owner_key_id,
            usage=dict(total_usage(new_rounds, "llm_usage")),
            fallbacks=_fallbacks(new_rounds),
        )
        await checkpoints.write_in(db, checkpoint_statements, self.runner.settings.checkpoint_schema)
        return new_rounds

    async def record_failure(self, exc: BaseException, outcome: LoopOutcome) -> bool:
        """The loop keeps its number, the rounds it finished (``outcome``'s) and why it failed; the
        session is free.

        True when the loop was found recorded by this run already (its record committed, the error
        came after)."""
        database_down = isinstance(exc, DATABASE_DOWN)
        cancelled = isinstance(exc, asyncio.CancelledError)  # only a client's cancel comes here (run())
        if cancelled:
            cancel = loop_cancel.client_cancel(exc)
            error = cancel.error if cancel is not None else loop_cancel.CANCELLED
        else:
            if not isinstance(exc, ServiceError) and not database_down:
                _log.error("loop %s of session %s failed", self.loop_index, self.session.id, exc_info=exc)
            error = (recovery.database_error(exc) if database_down else f"{type(exc).__name__}: {exc}")[
                :ERROR_CHARS
            ]
        try:
            async with self.database.sessionmaker.begin() as db:
                loop = await loops_repo.get_loop(db, session_id=self.session.id, loop_index=self.loop_index)
                if loop is not None and loop.status != "running":
                    # Recorded (or resolved) already: never overwritten. Only this run's own record
                    # makes it completed or paused; failed means another worker resolved it.
                    return loop.status in ("completed", "awaiting_feedback")
                if loop is not None:
                    stored = {r.round for r in loop.rounds}
                    new_rounds = [r for r in outcome.rounds if r["round"] not in stored]
                    _finish_loop(loop, outcome, status="failed")
                    loop.error, loop.finished_at = error, datetime.now(UTC)
                    loop.cancelled = cancelled
                    loops_repo.stage_loop(db, loop=loop, rounds=loops_repo.round_rows(new_rounds))
                    await loops_repo.add_key_usage(  # what its finished rounds used is spent all the same
                        db,
                        owner_key_id=self.session.owner_key_id,
                        usage=dict(total_usage(new_rounds, "llm_usage")),
                        fallbacks=_fallbacks(new_rounds),
                    )
                await sessions_repo.set_loop_status(
                    db, session_id=self.session.id, status="idle", n_loops=self.loop_index
                )
        except Exception as again:  # the database is gone too: recorded once it is back (recovery)
            self.runner.unrecorded[self.key] = error
            _log.warning(
                "could not record the failure of loop %s of session %s yet: %s",
                self.loop_index,
                self.session.id,
                again,
            )
        metrics.LOOPS.labels(stop_reason="failed").inc()
        return False


async def recorded_outcome(
    database: Database, runner: ServiceRunner, session_id: uuid.UUID, loop_index: int
) -> LoopOutcome:
    """A recorded (completed or paused) loop as its run answered it, from the loop history: the
    answer to a keyed request whose own answer was lost (app/services/idempotency.py)."""
    async with database.sessionmaker() as db:
        loop = await loops_repo.get_loop(db, session_id=session_id, loop_index=loop_index)
    if loop is None or loop.status not in ("completed", "awaiting_feedback"):
        raise RuntimeError(f"loop {loop_index} of session {session_id} is not recorded")
    pending = (await thread_state(runner, str(session_id)))[1] if loop.status == "awaiting_feedback" else None
    return LoopOutcome(
        session_id=session_id,
        loop_index=loop_index,
        status=loop.status,  # type: ignore[arg-type]  (checked above)
        final_item=loop.final_item,
        final_reason=loop.final_reason,
        stop_reason=loop.stop_reason,
        rounds=[loops_repo.round_record(r) for r in loop.rounds],
        pending=pending,
        duration_ms=loop.duration_ms or 0.0,
        usage=loop.usage,
    )


def _fallbacks(rounds: list[dict[str, Any]]) -> int:
    return sum(bool(r.get("rec_fallback")) + bool(r.get("user_fallback")) for r in rounds)


def _finish_loop(loop: Loop, outcome: LoopOutcome, *, status: str) -> None:
    for column, value in _finished_values(outcome, status=status).items():
        setattr(loop, column, value)
    loop.duration_ms = (loop.duration_ms or 0.0) + outcome.duration_ms


def _finished_values(outcome: LoopOutcome, *, status: str) -> dict[str, Any]:
    """A loop's columns after a run (its duration aside, which adds up over a paused loop's runs)."""
    values: dict[str, Any] = {"status": status}
    if outcome.status == "completed":
        values.update(
            final_item=outcome.final_item,
            final_reason=outcome.final_reason,
            stop_reason=outcome.stop_reason,
            finished_at=datetime.now(UTC),
        )
    # Usage is recomputed from all rounds of the loop, so a resumed loop is not double counted.
    values.update(usage_columns(dict(total_usage(outcome.rounds, "llm_usage"))))
    return values
