"""Running the feedback loop for a session: locking, and the run's lifecycle.

A request runs under the session's advisory lock: validate → run the compiled graph on the
session's thread (checkpointed per step), with the agent mode's deps as its runtime context →
write the loop and its rounds in one transaction.
Human judge mode pauses at the judge's interrupt; :func:`open_feedback` resumes it.

What a run writes to the loop history is app/services/loop_record.py; how it goes on after a
short loss of the database, app/services/loop_outage.py; how a loop whose worker stopped goes on,
app/services/resume.py.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

from app.db import loops as loops_repo
from app.db.database import Database
from app.db.models import Loop, Session
from app.services import limits, loop_cancel, loop_outage, metrics, recovery, resume, steering
from app.services.claim import Claim
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
from app.services.loop_record import LoopLedger, LoopOutcome, outcome_of
from app.services.service_runner import ServiceRunner
from app.services.sessions import get_session, locked_session, locked_session_with_memory
from app.services.steering_models import SteeringModels
from app.services.validation import check_candidates
from graph.config import AgentMode
from graph.context import LoopDeps
from graph.nodes import HumanFeedbackError, LoopInputError
from graph.runner import (
    EventSink,
    StreamedLoop,
    default_candidates,
    is_resume,
    loop_config,
    loop_input,
    resume_input,
    run_marks,
    stream_loop,
)
from graph.state import JudgeMode
from postgres import checkpoints

ABANDONED = recovery.ABANDONED
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoopRequest:
    candidates: list[int] | None = None
    max_rounds: int | None = None
    agents: AgentMode = "offline"
    judge_mode: JudgeMode = "agent"


def _config(runner: ServiceRunner, session: Session, max_rounds: int, loop_index: int) -> dict[str, Any]:
    return dict(loop_config(session.thread_id, max_rounds, marks=run_marks(runner.graph, loop_index)))


class LoopRun:
    """One locked run on a session (a new loop, or the resumption of a paused one)."""

    def __init__(
        self,
        database: Database,
        runner: ServiceRunner,
        session: Session,
        deps: LoopDeps,
        graph_input: Any,
        params: dict,
        *,
        loop_index: int,
        continued_from: dict[str, Any] | None = None,
        claim: Claim | None = None,
    ):
        self.database, self.runner, self.session, self.deps = database, runner, session, deps
        """``deps``: the run's agent mode's dependencies, the graph's runtime context."""
        self.graph_input, self.params = graph_input, params
        self._input = graph_input
        """What the run was started with (``graph_input`` becomes None once it goes on from a checkpoint)."""
        self.resumed = is_resume(graph_input) or continued_from is not None
        """The loop ran before (paused, or its worker stopped): its stored rounds are kept."""
        self.loop_index = loop_index
        """The loop's number in the session's history: the next one, or the paused loop's."""
        self.ledger = LoopLedger(
            database, runner, session, loop_index, resumed=self.resumed, params=params, claim=claim
        )
        """What the run writes to the loop history (app/services/loop_record.py)."""
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
        A run cancelled by its client (``task.cancel(ClientCancel(...))``) is recorded as failed
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
            if loop_cancel.client_cancel(exc) is not None:  # the client's cancel (LangGraph's runs.cancel)
                duration_ms = (time.perf_counter() - started) * 1000
                await asyncio.shield(self._record_failure(exc, duration_ms))
                await asyncio.shield(
                    loop_cancel.drop_left_interrupt(self.database, self.runner, self.session, self.loop_index)
                )
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
            self.runner.inflight.discard((self.session.id, self.loop_index))
        metrics.LOOP_LATENCY.observe(duration_ms / 1000)
        return outcome

    async def _run_to_record(
        self, on_event: EventSink | None, event_modes: frozenset[str], started: float
    ) -> LoopOutcome:
        """Run the graph and record the loop, waiting out a short loss of the database
        (app/services/loop_outage.py): past ``Settings.run_outage_wait_s`` its error goes on."""
        wait_until = time.monotonic() + self.runner.settings.run_outage_wait_s
        action = "stream"
        while True:
            try:
                if action == "stream":
                    pending = await self._stream(on_event, event_modes)
                    duration_ms = (time.perf_counter() - started) * 1000
                    self._ended = self._outcome(self._streamed.values, pending, duration_ms)
                assert self._ended is not None
                if action != "recorded":
                    await self.ledger.record(self._ended)
                return self._ended
            except DATABASE_DOWN as exc:
                action = await self._after_outage(exc, wait_until)

    async def _after_outage(self, cut: BaseException, wait_until: float) -> str:
        """How the run goes on once the database answers again (its state set for it); raises
        ``cut`` if the database does not answer within the wait, or the run cannot go on here."""
        self.database.outage.saw(cut)
        while await loop_outage.database_back(self.database, wait_until):
            try:
                ended = self._ended is not None
                step = await loop_outage.next_step(self.ledger, started_with=self._input, ended=ended)
            except DATABASE_DOWN:
                continue  # gone again: wait once more
            if step is None:
                break
            _log.warning(
                "loop %s of session %s lost the database (%s); it goes on: %s",
                self.loop_index,
                self.session.id,
                type(cut).__name__,
                step.action,
            )
            if step.action == "stream":
                self.graph_input, self._streamed = step.graph_input, StreamedLoop(values=step.values)
            return step.action
        raise cut

    @property
    def streamed(self) -> StreamedLoop:
        """The graph's state and interrupt as far as the run got."""
        return self._streamed

    async def _stream(self, on_event: EventSink | None, event_modes: frozenset[str]) -> dict[str, Any] | None:
        """Run the graph to its end or its interrupt; returns the interrupt's value, if any."""
        try:
            await stream_loop(
                self.runner.graph,
                self.graph_input,
                _config(
                    self.runner,
                    self.session,
                    int(self.params.get("max_rounds") or self.runner.settings.max_rounds),
                    self.loop_index,
                ),
                context=self.deps,
                durability=self.runner.settings.checkpoint_durability,
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
                await asyncio.shield(checkpoints.flush(self.runner.saver, self.session.thread_id))
        return self._streamed.pending

    async def _start(self) -> None:
        await self.ledger.start()
        self.started.set()

    async def _record_failure(self, exc: BaseException, duration_ms: float) -> bool:
        """The loop failed with ``exc``, keeping the rounds it finished; True when it was found
        recorded by this run already (its record committed, the error came after)."""
        return await self.ledger.record_failure(exc, self._outcome(self._streamed.values, None, duration_ms))

    def _outcome(self, values: dict[str, Any], pending: dict | None, duration_ms: float) -> LoopOutcome:
        return outcome_of(self.session.id, self.loop_index, values, pending, duration_ms)


async def start_run(
    runner: ServiceRunner,
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
    runner.tasks.add(task)  # referenced until done, so it is not collected
    task.add_done_callback(runner.tasks.discard)
    started = asyncio.ensure_future(run.started.wait())
    await asyncio.wait([task, started], return_when=asyncio.FIRST_COMPLETED)
    started.cancel()
    if task.done() and not run.started.is_set():
        task.result()  # it failed before it started (the database, say): raise it here
    return run, task


def _deps_for(runner: ServiceRunner, agents: AgentMode) -> LoopDeps:
    """The agent mode's dependencies, the graph's context for the run (4xx/503 if there are none)."""
    deps = runner.loop_deps.get(agents) if runner.graph is not None else None
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
    database: Database,
    runner: ServiceRunner,
    steering_models: SteeringModels,
    caller: Caller,
    session_id: uuid.UUID,
    request: LoopRequest,
) -> AsyncIterator[LoopRun]:
    """Validate and lock; the caller runs the loop inside. Every 4xx is raised before anything runs."""
    settings = runner.settings
    deps = _deps_for(runner, request.agents)
    if request.agents == "llm":
        await limits.check_llm_budget(database, settings, caller)
    if request.candidates is not None:
        check_candidates(request.candidates, deps.catalog, max_items=settings.max_candidates)
    async with locked_session_with_memory(database, caller, session_id) as (session, memory):
        await recovery.settle(database, runner, session, run=run_takeover)  # a loop left running: 409 for now
        if session.status == "awaiting_feedback":
            raise AwaitingFeedback(
                "the session's loop awaits your judgement: POST .../feedback first", field="session_id"
            )
        # The session's steering memory shapes the candidates and is shown to both agents.
        preferences = steering.loop_preferences(memory)
        steered = await steering.loop_candidates(
            steering_models, preferences, session.history, request.candidates
        )
        # The catalog's top k: ~15 ms at 10^6 items, in a thread so the event loop serves others meanwhile.
        candidates = steered or await asyncio.to_thread(
            default_candidates, deps, list(session.history), settings.n_candidates
        )
        max_rounds = request.max_rounds or settings.max_rounds
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
        yield LoopRun(
            database,
            runner,
            session,
            deps,
            graph_input,
            params,
            loop_index=session.n_loops + 1,
            claim=caller.claim,
        )


@asynccontextmanager
async def open_feedback(
    database: Database,
    runner: ServiceRunner,
    steering_models: SteeringModels,
    caller: Caller,
    session_id: uuid.UUID,
    *,
    decision: str,
    reason: str,
) -> AsyncIterator[LoopRun]:
    """Resume a loop paused at the judge with a person's decision (the real user judges)."""
    async with locked_session(database, caller, session_id) as session:
        await recovery.settle(database, runner, session, run=run_takeover)
        if session.status != "awaiting_feedback":
            raise NotAwaitingFeedback(
                "the session has no loop waiting for feedback: request a recommendation with "
                "judge_mode 'human' first",
                field="session_id",
            )
        async with database.sessionmaker() as db:
            loops, _ = await loops_repo.list_loops(db, session_id=session.id, limit=1, offset=0)
        if not loops:
            raise NotAwaitingFeedback("the session has no loop waiting for feedback", field="session_id")
        params = loops[0].params
        deps = _deps_for(runner, params.get("agents", "offline"))
        if params.get("agents") == "llm":
            await limits.check_llm_budget(database, runner.settings, caller)
        answer: dict[str, Any] = {"decision": decision, "reason": reason}
        if decision == "reject":
            answer["reading"] = await steering.read_reason(database, steering_models, session, reason)
        command = resume_input(answer)
        loop_index = loops[0].loop_index
        yield LoopRun(
            database, runner, session, deps, command, params, loop_index=loop_index, claim=caller.claim
        )


async def run_takeover(database: Database, runner: ServiceRunner, takeover: resume.Takeover) -> None:
    """Run a loop taken over from a worker that stopped (app/services/resume.py) to its record; a
    failure is recorded on the loop, with its cause, by the run."""
    run = LoopRun(
        database,
        runner,
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
    database: Database,
    caller: Caller,
    session_id: uuid.UUID,
    *,
    limit: int,
    offset: int,
    status: str | None = None,
) -> tuple[list[Loop], int]:
    session = await get_session(database, caller, session_id)
    async with database.sessionmaker() as db:
        return await loops_repo.list_loops(
            db, session_id=session.id, limit=limit, offset=offset, status=status
        )


async def get_loop(database: Database, caller: Caller, session_id: uuid.UUID, loop_index: int) -> Loop:
    session = await get_session(database, caller, session_id)
    async with database.sessionmaker() as db:
        loop = await loops_repo.get_loop(db, session_id=session.id, loop_index=loop_index)
    if loop is None:
        raise NotFound(f"no loop {loop_index} in session {session_id}", field="loop_index")
    return loop
