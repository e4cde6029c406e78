"""Running the feedback loop for a session: locking, the graph run, and the loop history.

A request runs under the session's advisory lock: validate → run the compiled graph on the
session's thread (checkpointed per step), with the agent mode's deps as its runtime context →
write the loop and its rounds in one transaction.
Human judge mode pauses at the judge's interrupt; :func:`open_feedback` resumes it.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import checkpoints
from app.db import loops as loops_repo
from app.db import sessions as sessions_repo
from app.db.models import Loop, Session, usage_columns
from app.services import idempotency, limits, loop_cancel, metrics, recovery, resume, steering
from app.services.errors import (
    DATABASE_DOWN,
    AwaitingFeedback,
    InvalidInput,
    LoopFailed,
    LoopSuperseded,
    NotAwaitingFeedback,
    NotFound,
    ServiceError,
    Unavailable,
)
from app.services.keys import Caller
from app.services.loop_cancel import ERROR_CHARS
from app.services.runtime import ServiceResources
from app.services.sessions import get_session, locked_session, locked_session_with_memory, thread_state
from app.services.validation import check_candidates
from graph.config import AgentMode
from graph.context import LoopDeps
from graph.nodes import HumanFeedbackError, LoopInputError
from graph.runner import (
    EventSink,
    StreamedLoop,
    default_candidates,
    graph_fingerprint,
    is_resume,
    loop_config,
    loop_input,
    resume_input,
    resume_point,
    run_marks,
    stream_loop,
)
from graph.state import JudgeMode
from llm.usage import total_usage

ABANDONED = recovery.ABANDONED
DISCARDED = "; its worker had lost the database and finished the loop later: that result was discarded"
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoopRequest:
    candidates: list[int] | None = None
    max_rounds: int | None = None
    agents: AgentMode = "offline"
    judge_mode: JudgeMode = "agent"


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


def _config(res: ServiceResources, session: Session, max_rounds: int, loop_index: int) -> dict[str, Any]:
    return dict(loop_config(session.thread_id, max_rounds, marks=run_marks(res.graph, loop_index)))


_NextStep = Literal["stream", "record", "recorded"]
"""What a run does after a lost database: run (on) the graph, record its loop, or nothing more."""


async def _database_back(res: ServiceResources, wait_until: float) -> bool:
    """Whether the database answers before ``wait_until`` (asked every half second)."""
    while time.monotonic() < wait_until:
        try:
            async with res.one_statement() as db:
                await db.execute(text("SELECT 1"))
            return True
        except DATABASE_DOWN:
            await asyncio.sleep(0.5)
    return False


def _fallbacks(rounds: list[dict[str, Any]]) -> int:
    return sum(bool(r.get("rec_fallback")) + bool(r.get("user_fallback")) for r in rounds)


class LoopRun:
    """One locked run on a session (a new loop, or the resumption of a paused one)."""

    def __init__(
        self,
        res: ServiceResources,
        session: Session,
        deps: LoopDeps,
        graph_input: Any,
        params: dict,
        *,
        loop_index: int,
        continued_from: dict[str, Any] | None = None,
    ):
        self.res, self.session, self.deps = res, session, deps
        """``deps``: the run's agent mode's dependencies, the graph's runtime context."""
        self.graph_input, self.params = graph_input, params
        self._input = graph_input
        """What the run was started with (``graph_input`` becomes None once it goes on from a checkpoint)."""
        self.resumed = is_resume(graph_input) or continued_from is not None
        """The loop ran before (paused, or its worker stopped): its stored rounds are kept."""
        self.loop_index = loop_index
        """The loop's number in the session's history: the next one, or the paused loop's."""
        self.started = asyncio.Event()
        """Set once the loop is in the history as ``running`` (before the graph starts)."""
        self._streamed = StreamedLoop()
        """The graph's state as far as the run got (a failed loop keeps the rounds it finished)."""
        self._ended: LoopOutcome | None = None
        """The run's outcome once its graph ended (recorded or not yet)."""
        if continued_from is not None:
            # A run continuing a checkpoint starts from its state: one that had ended runs no step.
            self._streamed.values = continued_from

    async def run(
        self, on_event: EventSink | None = None, *, event_modes: frozenset[str] = frozenset()
    ) -> LoopOutcome:
        """Run the graph; the loop is ``running`` meanwhile, and ``failed`` (with why) if this raises.

        ``on_event`` receives each step as plain JSON (and the chunks of ``event_modes``, e.g. the
        whole state after each step: graph.runner.EVENT_MODES).
        A run cancelled by its client (``task.cancel(cancel_message(...))``) is recorded as failed
        with that message before the cancellation goes on.
        """
        started = time.perf_counter()
        await self._start()
        try:
            outcome = await self._run_to_record(on_event, event_modes, started)
            duration_ms = outcome.duration_ms
        except LoopSuperseded:
            raise  # recorded as failed by another worker already, the late result's fate noted there
        except asyncio.CancelledError as exc:
            if loop_cancel.is_client_cancel(exc):  # the client's cancel (LangGraph's runs.cancel)
                duration_ms = (time.perf_counter() - started) * 1000
                await asyncio.shield(self._record_failure(exc, duration_ms))
                await asyncio.shield(loop_cancel.drop_left_interrupt(self.res, self.session, self.loop_index))
            # Any other cancellation is the worker stopping: the loop stays ``running`` and is
            # resumed from its last checkpoint (app/services/resume.py), not cancelled.
            raise
        except Exception as exc:
            if self.resumed and isinstance(exc, DATABASE_DOWN):
                # A loop that ran before (acknowledged paused, or taken over) is not failed for an
                # outage: it stays ``running`` and goes on from its last committed checkpoint once
                # the database is back (app/services/resume.py). A judgement that never committed
                # waits again for its request's retry, which this 503 asks for.
                raise
            recorded = await self._record_failure(exc, (time.perf_counter() - started) * 1000)
            if recorded and self._ended is not None:
                # The record committed and only its answer was lost (the connection died during
                # COMMIT): the loop is done, and answering an error would make the client redo it.
                return self._ended
            if isinstance(exc, (ServiceError, *DATABASE_DOWN)):
                raise
            raise LoopFailed(
                f"loop {self.loop_index} failed ({type(exc).__name__}); it is in the session's loop "
                "history as failed, with the error"
            ) from exc
        finally:
            # Not run here any more: a loop still ``running`` now is resumed (app/services/recovery.py).
            self.res.inflight.discard((self.session.id, self.loop_index))
        metrics.LOOP_LATENCY.observe(duration_ms / 1000)
        return outcome

    async def _run_to_record(
        self, on_event: EventSink | None, event_modes: frozenset[str], started: float
    ) -> LoopOutcome:
        """Run the graph and record the loop, waiting out a short loss of the database.

        A database restart or failover cuts the run's connections. Rather than answer 503 for a
        loop that a resume finishes moments later (or whose record did land), the run waits for
        the database (``Settings.run_outage_wait_s``) and goes on in this request: from its
        thread's last checkpoint, where the saver's rows that could not be committed are committed
        first, so no step runs twice; or, if the graph had ended, by recording the loop again.
        Past the wait, the error goes on (503): the loop is resumed later (app/services/resume.py).
        """
        wait_until = time.monotonic() + self.res.settings.run_outage_wait_s
        step: _NextStep = "stream"
        while True:
            try:
                if step == "stream":
                    pending = await self._stream(on_event, event_modes)
                    duration_ms = (time.perf_counter() - started) * 1000
                    self._ended = self._outcome(self._streamed.values, pending, duration_ms)
                if step != "recorded":
                    assert self._ended is not None
                    await self._record(self._ended)
                return self._ended  # type: ignore[return-value]
            except DATABASE_DOWN as exc:
                step = await self._after_outage(exc, wait_until)

    async def _after_outage(self, cut: BaseException, wait_until: float) -> _NextStep:
        """How the run goes on once the database answers again; raises ``cut`` if it does not
        within the wait, or if the run cannot go on here."""
        self.res.outage.saw(cut)
        while await _database_back(self.res, wait_until):
            try:
                step = await self._next_step()
            except DATABASE_DOWN:
                continue  # gone again: wait once more
            if step is None:
                break
            _log.warning(
                "loop %s of session %s lost the database (%s); it goes on: %s",
                self.loop_index,
                self.session.id,
                type(cut).__name__,
                step,
            )
            return step
        raise cut

    async def _next_step(self) -> _NextStep | None:
        """What is left to do, from what the database holds (None: nothing this run can do)."""
        if self._ended is not None:
            async with self.res.sessionmaker() as db:
                loop = await loops_repo.get_loop(db, session_id=self.session.id, loop_index=self.loop_index)
            status = loop.status if loop is not None else None
            if status == "running":
                return "record"
            # Recorded: the COMMIT landed, only its answer was lost. Failed: resolved by another.
            return "recorded" if status in ("completed", "awaiting_feedback") else None
        point = await resume_point(self.res.graph, self.session.thread_id)
        chosen = resume.plan(
            point,
            loop_index=self.loop_index,
            graph_id=graph_fingerprint(self.res.graph),
            agents_served=True,
            agents=str(self.params.get("agents", "offline")),
            paused_before=is_resume(self._input),
        )
        if chosen.action == "continue":
            if chosen.unanswered_judgement and not is_resume(self._input):
                return None
            # A judgement that never committed is this run's own input: applied now, once.
            graph_input = self._input if chosen.unanswered_judgement else None
            values = point.values
        elif chosen.action == "restart" and self._input is not None and not is_resume(self._input):
            graph_input, values = self._input, {}  # none of its steps committed: from its input again
        else:
            return None
        async with self.res.sessionmaker.begin() as db:
            mine = await loops_repo.take_over(  # still this worker's, and the resumption noted
                db,
                session_id=self.session.id,
                loop_index=self.loop_index,
                from_worker=self.res.worker_id,
                worker_id=self.res.worker_id,
                resumed_from=chosen.resumed_from(point),
            )
        if mine is None:
            return None
        self.graph_input = graph_input
        self._streamed = StreamedLoop(values=dict(values))
        return "stream"

    @property
    def streamed(self) -> StreamedLoop:
        """The graph's state and interrupt as far as the run got."""
        return self._streamed

    async def _stream(self, on_event: EventSink | None, event_modes: frozenset[str]) -> dict[str, Any] | None:
        """Run the graph to its end or its interrupt; returns the interrupt's value, if any."""
        try:
            await stream_loop(
                self.res.graph,
                self.graph_input,
                _config(
                    self.res,
                    self.session,
                    int(self.params.get("max_rounds") or self.res.settings.max_rounds),
                    self.loop_index,
                ),
                context=self.deps,
                durability=self.res.settings.checkpoint_durability,
                into=self._streamed,
                on_event=on_event,
                event_modes=event_modes,
            )
        except LoopInputError as exc:  # a backstop: requests are validated before the lock
            raise InvalidInput(exc.reason, field=exc.field) from exc
        except HumanFeedbackError as exc:
            raise InvalidInput(str(exc), field="reason") from exc
        finally:
            if not self._streamed.finished:
                # What the failed run wrote is kept (a finished run commits it with its history).
                await asyncio.shield(checkpoints.flush(self.res.saver, self.session.thread_id))
        return self._streamed.pending

    async def _start(self) -> None:
        """Show the loop as ``running`` (and keep its number) before the graph starts.

        Not waited for on disk (synchronous_commit off): losing it in a crash loses nothing the
        run would have kept, and the run's own record commits synchronously after it.
        """
        # In flight before the row is visible: the recovery watch never takes it for abandoned.
        key = (self.session.id, self.loop_index)
        self.res.inflight.add(key)
        self.res.unrecorded.pop(key, None)  # an earlier start's, moot now (settled, or never landed)
        try:
            await self._write_start()
        except BaseException as exc:
            if isinstance(exc, DATABASE_DOWN):
                # The connection died at COMMIT: the row may be in, ``running``, with nothing to run
                # it. If so, the watch resolves it with this cause (not "worker stopped") once the
                # database is back, or forgets it if it never landed.
                self.res.unrecorded[key] = recovery.database_error(exc)
            self.res.inflight.discard(key)
            raise

    async def _write_start(self) -> None:
        """The loop ``running`` and its session with it: one statement, one round trip (a keyed
        request's key is linked in the same transaction)."""
        start = {
            "session_id": self.session.id,
            "loop_index": self.loop_index,
            "worker_id": self.res.worker_id,
            "params": None if self.resumed else self.params,
        }
        if not idempotency.keyed():
            async with self.res.one_statement() as db:
                await loops_repo.start_loop(db, **start)
        else:
            async with self.res.sessionmaker.begin() as db:
                await loops_repo.start_loop(db, **start)
                # The key stands for this loop from now on: its retry replays the loop once it is
                # recorded, waits (409) while it runs, and runs again only if it failed.
                await idempotency.link(db, session_id=self.session.id, loop_index=self.loop_index)
        self.started.set()

    async def _record_failure(self, exc: BaseException, duration_ms: float) -> bool:
        """The loop keeps its number, the rounds it finished and why it failed; the session is free.

        True when the loop was found recorded by this run already (its record committed, the error
        came after)."""
        database_down = isinstance(exc, DATABASE_DOWN)
        if isinstance(exc, asyncio.CancelledError):
            error = loop_cancel.recorded_error(exc)
        else:
            if not isinstance(exc, ServiceError) and not database_down:
                _log.error("loop %s of session %s failed", self.loop_index, self.session.id, exc_info=exc)
            error = (recovery.database_error(exc) if database_down else f"{type(exc).__name__}: {exc}")[
                :ERROR_CHARS
            ]
        outcome = self._outcome(self._streamed.values, None, duration_ms)
        try:
            async with self.res.sessionmaker.begin() as db:
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
            self.res.unrecorded[(self.session.id, self.loop_index)] = error
            _log.warning(
                "could not record the failure of loop %s of session %s yet: %s",
                self.loop_index,
                self.session.id,
                again,
            )
        metrics.LOOPS.labels(stop_reason="failed").inc()
        return False

    def _outcome(self, values: dict[str, Any], pending: dict | None, duration_ms: float) -> LoopOutcome:
        graph_loop = int(values.get("loop_index") or 0)
        rounds = [r for r in values.get("rounds") or [] if r.get("loop_index", graph_loop) == graph_loop]
        return LoopOutcome(
            session_id=self.session.id,
            loop_index=self.loop_index,
            status="awaiting_feedback" if pending is not None else "completed",
            final_item=None if pending is not None else values.get("final_item"),
            final_reason=None if pending is not None else values.get("final_reason"),
            stop_reason=None if pending is not None else values.get("stop_reason"),
            rounds=rounds,
            pending=pending,
            duration_ms=duration_ms,
            usage=dict(total_usage(rounds, "llm_usage")),
        )

    async def _record(self, outcome: LoopOutcome) -> None:
        """The loop's history and the session's status, in one (synchronously committed) transaction.

        The loop's row (inserted ``running`` by :meth:`_start`) gets its outcome and its rounds; a
        resumed one (human judge) only the rounds that are not stored yet. (loop, round) is unique,
        so a fork could not be written anyway.
        """
        # A write-behind saver's last writes (the final round, a pending interrupt) are committed
        # in the history's transaction: one durable commit, and both or neither.
        handover = checkpoints.commit_with(self.res.saver, self.session.thread_id)
        async with handover as checkpoint_statements, self.res.sessionmaker.begin() as db:
            new_rounds = await self._stage_record(db, outcome, checkpoint_statements)
            if new_rounds is None:
                # Resolved meanwhile: another worker found this one's lock free for stale_grace_s
                # (cut off from the database) and a retry may already have run the loop again, so
                # this result must not land. Its checkpoint rows are dropped, never committed.
                await loops_repo.note_discarded_result(
                    db,
                    session_id=self.session.id,
                    loop_index=self.loop_index,
                    worker_id=self.res.worker_id,
                    note=DISCARDED,
                )
        if new_rounds is None:
            await checkpoints.discard(self.res.saver, self.session.thread_id)
            raise LoopSuperseded(
                f"loop {self.loop_index} was taken over by another worker while this one could not reach "
                "the database; its result was discarded: retry (the same Idempotency-Key answers with "
                "the loop as recorded, or runs it again if it failed)",
                field=None,
            )
        metrics.observe_rounds(new_rounds)
        if outcome.status == "completed":
            metrics.LOOPS.labels(stop_reason=outcome.stop_reason or "unknown").inc()

    async def _stage_record(
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
            worker_id=self.res.worker_id,
            values=_finished_values(outcome, status=outcome.status),
            duration_ms=outcome.duration_ms,
            rounds=loops_repo.round_values(new_rounds),
            session_status="awaiting_feedback" if outcome.pending is not None else "idle",
        )
        if not recorded:
            return None
        await loops_repo.add_key_usage(
            db,
            owner_key_id=self.session.owner_key_id,
            usage=dict(total_usage(new_rounds, "llm_usage")),
            fallbacks=_fallbacks(new_rounds),
        )
        await checkpoints.write_in(db, checkpoint_statements, self.res.settings.checkpoint_schema)
        return new_rounds


async def start_run(
    res: ServiceResources,
    opening: AbstractAsyncContextManager[LoopRun],
    *,
    on_event: EventSink | None = None,
    event_modes: frozenset[str] = frozenset(),
) -> tuple[LoopRun, asyncio.Task[LoopOutcome]]:
    """Validate and lock now (so 404/409/422 raise here), then run the loop in a task of its own;
    returns once the loop is in the history as ``running``.

    The task releases the session's lock when the loop is recorded. A client that goes away
    (a stream's reader, a background run's creator) does not cut the loop short, which would
    leave a loop number without history; only cancelling the task does (recorded as cancelled).
    """
    stack = AsyncExitStack()
    run = await stack.enter_async_context(opening)

    async def run_then_release() -> LoopOutcome:
        async with stack:
            return await run.run(on_event, event_modes=event_modes)

    task = asyncio.create_task(run_then_release())
    res.streams.add(task)  # referenced until done, so it is not collected
    task.add_done_callback(res.streams.discard)
    started = asyncio.ensure_future(run.started.wait())
    await asyncio.wait([task, started], return_when=asyncio.FIRST_COMPLETED)
    started.cancel()
    if task.done() and not run.started.is_set():
        task.result()  # it failed before it started (the database, say): raise it here
    return run, task


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


def _deps_for(res: ServiceResources, agents: AgentMode) -> LoopDeps:
    """The agent mode's dependencies, the graph's context for the run (4xx/503 if there are none)."""
    deps = res.loop_deps.get(agents) if res.graph is not None else None
    if deps is not None:
        return deps
    if agents == "llm":
        raise InvalidInput(
            "agents 'llm' needs an LLM endpoint: set RECLOOP_LLM_BASE_URL (or use agents 'offline')",
            field="agents",
        )
    raise Unavailable("models are not loaded yet", field=None)


@asynccontextmanager
async def open_loop(
    res: ServiceResources, caller: Caller, session_id: uuid.UUID, request: LoopRequest
) -> AsyncIterator[LoopRun]:
    """Validate and lock; the caller runs the loop inside. Every 4xx is raised before anything runs."""
    deps = _deps_for(res, request.agents)
    if request.agents == "llm":
        await limits.check_llm_budget(res, caller)
    if request.candidates is not None:
        check_candidates(request.candidates, res.catalog, max_items=res.settings.max_candidates)
    async with locked_session_with_memory(res, caller, session_id) as (session, memory):
        await recovery.settle(res, session, run=run_takeover)  # a loop left running on it: 409 for now
        if session.status == "awaiting_feedback":
            raise AwaitingFeedback(
                "the session's loop awaits your judgement: POST .../feedback first", field="session_id"
            )
        # The session's steering memory shapes the candidates and is shown to both agents.
        preferences = steering.loop_preferences(memory)
        steered = await steering.loop_candidates(res, preferences, session.history, request.candidates)
        candidates = steered or default_candidates(deps, session.history, res.settings.n_candidates)
        max_rounds = request.max_rounds or res.settings.max_rounds
        graph_input = loop_input(
            deps,
            session.history,
            candidates,
            max_rounds,
            preferences.model_dump(mode="json") if preferences else None,
            request.judge_mode,
        )
        params = {
            "candidates": candidates,
            "max_rounds": max_rounds,
            "agents": request.agents,
            "judge_mode": request.judge_mode,
            "history_length": len(session.history),
        }
        yield LoopRun(res, session, deps, graph_input, params, loop_index=session.n_loops + 1)


@asynccontextmanager
async def open_feedback(
    res: ServiceResources, caller: Caller, session_id: uuid.UUID, *, decision: str, reason: str
) -> AsyncIterator[LoopRun]:
    """Resume a loop paused at the judge with a person's decision (the real user judges)."""
    async with locked_session(res, caller, session_id) as session:
        await recovery.settle(res, session, run=run_takeover)
        if session.status != "awaiting_feedback":
            raise NotAwaitingFeedback(
                "the session has no loop waiting for feedback: request a recommendation with "
                "judge_mode 'human' first",
                field="session_id",
            )
        async with res.sessionmaker() as db:
            loops, _ = await loops_repo.list_loops(db, session_id=session.id, limit=1, offset=0)
        if not loops:
            raise NotAwaitingFeedback("the session has no loop waiting for feedback", field="session_id")
        params = loops[0].params
        deps = _deps_for(res, params.get("agents", "offline"))
        if params.get("agents") == "llm":
            await limits.check_llm_budget(res, caller)
        answer: dict[str, Any] = {"decision": decision, "reason": reason}
        if decision == "reject":
            answer["reading"] = await steering.read_reason(res, session, reason)
        command = resume_input(answer)
        yield LoopRun(res, session, deps, command, params, loop_index=loops[0].loop_index)


async def run_takeover(res: ServiceResources, takeover: resume.Takeover) -> None:
    """Run a loop taken over from a worker that stopped (app/services/resume.py) to its record; a
    failure is recorded on the loop, with its cause, by the run."""
    run = LoopRun(
        res,
        takeover.session,
        takeover.deps,
        takeover.graph_input,
        takeover.params,
        loop_index=takeover.loop_index,
        continued_from=takeover.continued_from,
    )
    try:
        await run.run()
    except Exception as exc:
        _log.warning("the resumed loop %s of session %s failed: %s", run.loop_index, run.session.id, exc)


async def loop_history(
    res: ServiceResources,
    caller: Caller,
    session_id: uuid.UUID,
    *,
    limit: int,
    offset: int,
    status: str | None = None,
) -> tuple[list[Loop], int]:
    session = await get_session(res, caller, session_id)
    async with res.sessionmaker() as db:
        return await loops_repo.list_loops(
            db, session_id=session.id, limit=limit, offset=offset, status=status
        )


async def get_loop(res: ServiceResources, caller: Caller, session_id: uuid.UUID, loop_index: int) -> Loop:
    session = await get_session(res, caller, session_id)
    async with res.sessionmaker() as db:
        loop = await loops_repo.get_loop(db, session_id=session.id, loop_index=loop_index)
    if loop is None:
        raise NotFound(f"no loop {loop_index} in session {session_id}", field="loop_index")
    return loop


async def recorded_outcome(res: ServiceResources, session_id: uuid.UUID, loop_index: int) -> LoopOutcome:
    """A recorded (completed or paused) loop as its run answered it, from the loop history: the
    answer to a keyed request whose own answer was lost (app/services/idempotency.py)."""
    async with res.sessionmaker() as db:
        loop = await loops_repo.get_loop(db, session_id=session_id, loop_index=loop_index)
    if loop is None or loop.status not in ("completed", "awaiting_feedback"):
        raise RuntimeError(f"loop {loop_index} of session {session_id} is not recorded")
    pending = (await thread_state(res, str(session_id)))[1] if loop.status == "awaiting_feedback" else None
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
