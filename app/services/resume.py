"""Resume, don't abandon: a loop whose worker stopped mid-run goes on from its last committed checkpoint.

A loop is ``running`` under its worker (``loops.worker_id``). When that worker is gone (its lock
free for ``Settings.stale_grace_s``, app/services/recovery.py) or no longer runs the loop (its
request was cancelled by a shutdown), a worker takes the loop over and continues its graph run
on the session's thread with no input (LangGraph's ``invoke(None)``), from the thread's last
committed checkpoint. What was committed stays done, and is done once:

- rounds whose checkpoint committed are not run again, and a human judgement that committed
  (a reject's round in the agents' memories, or its pending resume write) is applied once;
- a judgement whose run stopped before it committed was never applied: the loop waits for it
  again (``awaiting_feedback``), and the keys of the requests that carried it stand for nothing
  any more, so their retry applies it (never "no loop waiting for feedback");
- a loop none of whose checkpoints committed starts again from its input (its stored parameters).

One taker per loop, across workers and replicas: the taker holds the session's advisory lock
(as every run does) and takes the loop's row with ``SELECT ... FOR UPDATE SKIP LOCKED`` while it
is still ``running`` under the stopped worker, writing itself as the worker (compare-and-set):
a second taker finds it taken. While the resumed run goes on, the session answers 409 with
Retry-After, and a keyed retry of the request that started it waits (409) and then replays the
recorded loop (app/services/idempotency.py).

Where a loop cannot go on, it is failed with that cause (:data:`NOT_RESUMABLE`) and its session is
free: the checkpoint was written by another graph (the code changed), its agents are not served
any more, or the checkpoint belongs to another loop of the thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from app.db import idempotency as idempotency_repo
from app.db import loops as loops_repo
from app.db import sessions as sessions_repo
from app.db.database import Database
from app.db.models import Session
from app.services import steering
from app.services.service_runner import LoopKey, ServiceRunner
from app.settings import Settings
from graph.context import LoopDeps
from graph.runner import GRAPH_MARK, LOOP_MARK, ResumePoint, graph_fingerprint, loop_input, resume_point

NOT_RESUMABLE = "not resumable:"
"""How the error of a loop that could not be continued after its worker stopped starts."""
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Plan:
    """How a stopped loop goes on."""

    action: Literal["continue", "restart", "fail"]
    """continue: from the checkpoint (``invoke(None)``); restart: from the loop's input again."""
    cause: str | None = None
    """Why it cannot go on (``fail``)."""
    unanswered_judgement: bool = False
    """The stopped run carried a judgement that never committed: the loop waits for it again."""

    def resumed_from(self, point: ResumePoint) -> dict[str, Any] | None:
        """The loop history's note of this resumption (None for a failed one)."""
        if self.action == "fail":
            return None
        continued = self.action == "continue"
        return {
            "step": point.step if continued else None,
            "next": list(point.next) if continued else ["recommend"],
            "checkpoint_id": point.checkpoint_id if continued else None,
            "at": datetime.now(UTC).isoformat(),
        }


def plan(
    point: ResumePoint,
    *,
    loop_index: int,
    graph_id: str,
    agents_served: bool,
    agents: str,
    paused_before: bool = False,
) -> Plan:
    """How loop ``loop_index`` goes on from ``point``, its thread's last committed checkpoint, for a
    graph whose fingerprint is ``graph_id`` (pure: tested without a database). ``paused_before``:
    the loop was recorded paused at its human judge before this run (a judgement's run)."""
    if not agents_served:
        return Plan("fail", f"{NOT_RESUMABLE} its agents {agents!r} are not served here any more")
    marked = point.metadata.get(LOOP_MARK)
    if marked is None or marked != loop_index:
        if isinstance(marked, int) and marked > loop_index:
            return Plan("fail", f"{NOT_RESUMABLE} the thread's last checkpoint is of a later loop ({marked})")
        # Nothing of this loop was committed (its first round never closed): it starts again, and
        # a judgement its run carried (a thread from before the marks) is asked for again.
        return Plan("restart", unanswered_judgement=paused_before)
    written_by = point.metadata.get(GRAPH_MARK)
    if written_by != graph_id:
        return Plan(
            "fail",
            f"{NOT_RESUMABLE} its checkpoint was written by another graph ({written_by}, this one is "
            f"{graph_id}): the code changed incompatibly while it ran",
        )
    return Plan("continue", unanswered_judgement=point.waiting)


@dataclass(frozen=True)
class Takeover:
    """A stopped loop this worker has taken over: what its run needs to go on."""

    session: Session
    deps: LoopDeps
    """The loop's agent mode's dependencies."""
    graph_input: Any
    """None (continue from the checkpoint) or the loop's input again (restart)."""
    params: dict[str, Any]
    loop_index: int
    continued_from: dict[str, Any]
    """The graph's state at the checkpoint it goes on from (empty for a restart)."""


Runner = Callable[[Database, ServiceRunner, Takeover], Awaitable[object]]
"""Runs a taken-over loop to its record (app/services/loops.py ``run_takeover``)."""


def start(
    database: Database, runner: ServiceRunner, loop: LoopKey, *, from_worker: str | None, run: Runner
) -> bool:
    """Resume ``loop`` (``running`` under ``from_worker``, which stopped) in a task of its own;
    False if this worker resumes or runs it already."""
    if loop in runner.inflight:
        return False
    runner.inflight.add(loop)  # from now on, the watch and the session's requests see it run here
    # A fresh context: a keyed request that noticed the loop must not lend its key to the run.
    task = asyncio.create_task(
        _resume(database, runner, loop, from_worker, run), context=contextvars.Context()
    )
    runner.tasks.add(task)
    task.add_done_callback(runner.tasks.discard)
    return True


class _SessionHeld(Exception):
    pass


async def _resume(
    database: Database,
    runner: ServiceRunner,
    loop: LoopKey,
    from_worker: str | None,
    run: Runner,
    tries: int = 50,
) -> None:
    session_id, loop_index = loop
    try:
        for _ in range(tries):  # a request that noticed the loop holds the session for a moment
            try:
                async with database.locks.hold(str(session_id), busy=_SessionHeld()):
                    taken = await take_over(database, runner, loop, from_worker=from_worker)
                    if isinstance(taken, Takeover):
                        await run(database, runner, taken)
                return
            except _SessionHeld:
                await asyncio.sleep(0.2)
    except Exception:  # the watch tries again on its next sweep
        _log.exception("resuming loop %s of session %s failed", loop_index, session_id)
    finally:
        runner.inflight.discard(loop)


async def take_over(
    database: Database, runner: ServiceRunner, loop: LoopKey, *, from_worker: str | None
) -> Takeover | str:
    """Under the session's lock: take the loop over, to continue it, or fail it with the cause. Else
    what became of it: ``failed``, ``taken`` (another worker has it, or it was recorded meanwhile)
    or ``later`` (no models loaded yet: the watch's next sweep tries again)."""
    session_id, loop_index = loop
    if runner.graph is None:
        return "later"
    async with database.sessionmaker() as db:
        session = await db.get(Session, session_id)
        stored = await loops_repo.get_loop(db, session_id=session_id, loop_index=loop_index)
    if session is None or stored is None or stored.status != "running":
        return "taken"
    agents = str(stored.params.get("agents", "offline"))
    deps = runner.loop_deps.get(agents)
    point = await resume_point(runner.graph, session.thread_id)
    chosen = plan(
        point,
        loop_index=loop_index,
        graph_id=graph_fingerprint(runner.graph),
        agents_served=deps is not None,
        agents=agents,
        paused_before=stored.duration_ms is not None,
    )
    async with database.sessionmaker.begin() as db:
        taken = await loops_repo.take_over(
            db,
            session_id=session_id,
            loop_index=loop_index,
            from_worker=from_worker,
            worker_id=runner.worker_id,
            resumed_from=chosen.resumed_from(point),
        )
        if taken is None:
            return "taken"
        if chosen.action == "fail":
            await loops_repo.resolve_running(
                db, session_id=session_id, loop_index=loop_index, error=chosen.cause or NOT_RESUMABLE
            )
        elif chosen.unanswered_judgement:
            await idempotency_repo.unlink_unanswered(
                db, owner_key_id=session.owner_key_id, session_id=session_id, loop_index=loop_index
            )
    if chosen.action == "fail":
        _log.warning("loop %s of session %s failed: %s", loop_index, session_id, chosen.cause)
        return "failed"
    _log.warning(
        "resuming loop %s of session %s (its worker %s stopped): %s from step %s",
        loop_index,
        session_id,
        from_worker,
        chosen.action,
        point.step,
    )
    assert deps is not None  # else the plan fails it
    if chosen.action == "continue":
        return Takeover(session, deps, None, stored.params, loop_index, point.values)
    graph_input = await _input_again(database, runner.settings, session, deps, stored.params)
    return Takeover(session, deps, graph_input, stored.params, loop_index, {})


async def _input_again(
    database: Database, settings: Settings, session: Session, deps: LoopDeps, params: dict[str, Any]
) -> Any:
    """The loop's input as its first run had it: its stored candidates and settings, the session's
    history as it was then, and the session's steering memory."""
    async with database.sessionmaker() as db:
        found = await sessions_repo.get_owned_session_with_memory(
            db, session_id=session.id, owner_key_id=session.owner_key_id
        )
    memory = found[1] if found is not None else None
    preferences = steering.loop_preferences(memory)
    history = list(session.history)[: int(params.get("history_length", len(session.history)))]
    return loop_input(
        deps,
        history,
        params.get("candidates"),
        int(params.get("max_rounds") or settings.max_rounds),
        preferences.model_dump(mode="json") if preferences else None,
        params.get("judge_mode", "agent"),
    )
