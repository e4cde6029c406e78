"""LangGraph's server protocol: runs, each one loop of a thread's session (see app/services/protocol.py).

A run's id is the thread id with the loop number xor-ed into its low bits (:func:`run_id_for`), so
a run id needs no table of its own. Resuming a human-judged loop with ``command={"resume": ...}``
continues the same loop, so the same run. Every run goes through :mod:`app.services.loops`, as
``/v1``'s loops do: the same lock (a second run on a busy thread gets 409), the same history and
the same checkpoint commit.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.db import loops as loops_repo
from app.db.database import Database
from app.db.models import Loop, Session
from app.services import loop_cancel, loops
from app.services.errors import Conflict, InvalidInput, NotAwaitingFeedback, NotFound
from app.services.keys import Caller
from app.services.protocol import ASSISTANTS, RUN_STATUS, AssistantSpec, get_thread, in_thread_terms
from app.services.run_events import ProtocolRuns, RunEvents, TrackedRun
from app.services.service_runner import ServiceRunner
from app.services.steering_models import SteeringModels

LOOP_BITS = 32
MAX_REASON_CHARS = 2000
"""The longest judgement reason a resume takes (as /v1's feedback)."""


def run_id_for(session_id: uuid.UUID, loop_index: int) -> str:
    """The run id of a session's loop: the session's id with the loop number xor-ed into its low bits."""
    return str(uuid.UUID(int=session_id.int ^ loop_index))


def _loop_index(session_id: uuid.UUID, run_id: str) -> int:
    try:
        index = uuid.UUID(run_id).int ^ session_id.int
    except ValueError:
        index = 0
    if not 0 < index < 2**LOOP_BITS:
        raise NotFound(f"no run {run_id} on this thread", field="run_id")
    return index


@dataclass(frozen=True)
class RunRequest:
    assistant: AssistantSpec
    input: dict[str, Any] | None
    resume: Any = None
    """``command["resume"]``: a person's judgement of the proposal a human-judged loop waits on."""


def open_run(
    database: Database,
    runner: ServiceRunner,
    steering_models: SteeringModels,
    caller: Caller,
    thread_id: str,
    session_id: uuid.UUID,
    request: RunRequest,
) -> AbstractAsyncContextManager[loops.LoopRun]:
    """A new loop (``input``) or the resumption of a paused one (``command.resume``), under the lock;
    its errors in the protocol's words (app/services/protocol.py ``thread_terms``)."""
    if request.resume is not None:
        answer = request.resume
        if not (isinstance(answer, dict) and answer.get("decision") in ("accept", "reject")):
            raise InvalidInput(
                'command.resume: give {"decision": "accept" | "reject", "reason": "..."}',
                field="command.resume",
            )
        reason = answer.get("reason")
        if not isinstance(reason, str) or not reason.strip() or len(reason) > MAX_REASON_CHARS:
            raise InvalidInput(
                f"command.resume.reason: why, in the person's words (1 to {MAX_REASON_CHARS} characters)",
                field="command.resume.reason",
            )
        opening = loops.open_feedback(
            database, runner, steering_models, caller, session_id, decision=answer["decision"], reason=reason
        )
        return _in_thread_terms(opening, thread_id)
    values = request.input or {}
    # Other keys are ignored, as a LangGraph graph ignores input keys outside its input schema (a
    # parent graph hands RemoteGraph its whole state); the history would be a misunderstanding.
    if "history" in values:
        raise InvalidInput(
            "input.history: a run's history is its thread's (metadata.history when the thread was "
            "created, grown by what the user consumed since); a run's input takes candidates and max_rounds",
            field="input.history",
        )
    candidates, max_rounds = values.get("candidates"), values.get("max_rounds")
    if candidates is not None and not (
        isinstance(candidates, list)
        and all(isinstance(i, int) and not isinstance(i, bool) for i in candidates)
    ):
        raise InvalidInput("input.candidates: a list of item ids", field="input.candidates")
    if max_rounds is not None and not (
        isinstance(max_rounds, int) and not isinstance(max_rounds, bool) and 1 <= max_rounds <= 20
    ):
        raise InvalidInput("input.max_rounds: an integer from 1 to 20", field="input.max_rounds")
    loop_request = loops.LoopRequest(
        candidates=candidates,
        max_rounds=max_rounds,
        agents=request.assistant.agents,
        judge_mode=request.assistant.judge_mode,
    )
    opening = loops.open_loop(database, runner, steering_models, caller, session_id, loop_request)
    return _in_thread_terms(opening, thread_id)


@asynccontextmanager
async def _in_thread_terms(
    opening: AbstractAsyncContextManager[loops.LoopRun], thread_id: str
) -> AsyncIterator[loops.LoopRun]:
    async with in_thread_terms(thread_id), opening as run:
        yield run


def run_status(loop: Loop) -> str:
    """A loop's status as its run's: one cancelled (by runs.cancel, or abandoned at its judge) is
    ``interrupted``, as LangGraph's server calls a cancelled run."""
    if loop.status == "failed" and loop.cancelled:
        return "interrupted"
    return RUN_STATUS[loop.status]


def run_public(session: Session, loop: Loop) -> dict[str, Any]:
    params = loop.params or {}
    assistant = next(
        (
            a
            for a in ASSISTANTS
            if (a.agents, a.judge_mode) == (params.get("agents"), params.get("judge_mode"))
        ),
        ASSISTANTS[0],
    )
    return {
        "run_id": run_id_for(session.id, loop.loop_index),
        "thread_id": session.thread_id,
        "assistant_id": assistant.assistant_id,
        "created_at": loop.started_at.isoformat(),
        "updated_at": (loop.finished_at or loop.started_at).isoformat(),
        "status": run_status(loop),
        "metadata": {"loop_index": loop.loop_index, "error": loop.error},
        "multitask_strategy": "reject",
        "kwargs": _run_kwargs(params),
    }


def _run_kwargs(params: dict[str, Any]) -> dict[str, Any]:
    """A run's ``kwargs`` (what it was asked): its loop's input, as in LangGraph's runs."""
    return {"input": {k: params.get(k) for k in ("candidates", "max_rounds")}}


def started_run_public(session: Session, run: loops.LoopRun, assistant: AssistantSpec) -> dict[str, Any]:
    """A run that has just started (:func:`app.services.loops.start_run` returned)."""
    now = datetime.now().astimezone().isoformat()
    return {
        "run_id": run_id_for(session.id, run.loop_index),
        "thread_id": session.thread_id,
        "assistant_id": assistant.assistant_id,
        "created_at": now,
        "updated_at": now,
        "status": "running",
        "metadata": {"loop_index": run.loop_index, "error": None},
        "multitask_strategy": "reject",
        "kwargs": _run_kwargs(run.params),
    }


async def _owned_loop(
    database: Database, caller: Caller, thread_id: str, run_id: str
) -> tuple[Session, Loop]:
    session = await get_thread(database, caller, thread_id)
    index = _loop_index(session.id, run_id)
    async with database.sessionmaker() as db:
        loop = await loops_repo.get_loop(db, session_id=session.id, loop_index=index)
    if loop is None:
        raise NotFound(f"no run {run_id} on this thread", field="run_id")
    return session, loop


async def get_run(database: Database, caller: Caller, thread_id: str, run_id: str) -> dict[str, Any]:
    session, loop = await _owned_loop(database, caller, thread_id, run_id)
    return run_public(session, loop)


RUN_FILTERS: dict[str, dict[str, Any]] = {
    "running": {"statuses": ("running",)},
    "success": {"statuses": ("completed", "awaiting_feedback")},
    "interrupted": {"statuses": ("failed",), "cancelled": True},
    "error": {"statuses": ("failed",), "cancelled": False},
}
"""Each run status (:func:`run_status`) as a filter of the loop history; no loop is pending or timed out."""


async def list_runs(
    database: Database, caller: Caller, thread_id: str, *, limit: int, offset: int, status: str | None
) -> list[dict[str, Any]]:
    session = await get_thread(database, caller, thread_id)
    if status is not None and status not in RUN_FILTERS:
        return []
    async with database.sessionmaker() as db:
        rows, _ = await loops_repo.list_loops(
            db, session_id=session.id, limit=limit, offset=offset, **RUN_FILTERS.get(status or "", {})
        )
    return [run_public(session, loop) for loop in rows]


def _local_task(runs: ProtocolRuns, run_id: str) -> asyncio.Task | None:
    tracked = runs.get(run_id)
    return None if tracked is None else tracked.task


def track(runs: ProtocolRuns, run_id: str, task: asyncio.Task, events: RunEvents) -> None:
    """Remember a run of this worker while it runs, so it can be joined, streamed and cancelled."""
    runs[run_id] = TrackedRun(task, events)

    def ended(_: asyncio.Task) -> None:
        events.close_after(task)
        runs.pop(run_id, None)

    task.add_done_callback(ended)


async def joined_events(
    database: Database,
    runs: ProtocolRuns,
    caller: Caller,
    thread_id: str,
    run_id: str,
    *,
    poll_s: float = 0.1,
) -> RunEvents | None:
    """The events of the run to join: None if it is not this worker's (it then has ended, here or
    in the worker that ran it: this waits for that)."""
    session, loop = await _owned_loop(database, caller, thread_id, run_id)
    tracked = runs.get(run_id)
    if tracked is not None:
        return tracked.events
    await _until_ended(database, session, loop, poll_s)
    return None


def cancel_local(runs: ProtocolRuns, run_id: str, reason: str | None = None) -> asyncio.Task | None:
    """Cancel this worker's run (recorded as the client's cancel); the task, None if it was not running."""
    task = _local_task(runs, run_id)
    if task is None or task.done():
        return None
    task.cancel(loop_cancel.ClientCancel(reason))
    return task


async def join_run(
    database: Database,
    runs: ProtocolRuns,
    caller: Caller,
    thread_id: str,
    run_id: str,
    *,
    poll_s: float = 0.1,
) -> Session:
    """Wait until the run is no longer running (in this worker or another one)."""
    session, loop = await _owned_loop(database, caller, thread_id, run_id)
    task = _local_task(runs, run_id)
    if task is not None:
        await asyncio.wait([task])
    await _until_ended(database, session, loop, poll_s)
    return session


async def _until_ended(database: Database, session: Session, loop: Loop, poll_s: float) -> None:
    """Wait until the loop, as read before, is no longer ``running`` in the history (any worker's)."""
    while loop.status == "running" and await _still_running(database, session, loop.loop_index):
        await asyncio.sleep(poll_s)


async def _still_running(database: Database, session: Session, loop_index: int) -> bool:
    async with database.sessionmaker() as db:
        loop = await loops_repo.get_loop(db, session_id=session.id, loop_index=loop_index)
    return loop is not None and loop.status == "running"


async def cancel_run(
    database: Database,
    runner: ServiceRunner,
    runs: ProtocolRuns,
    caller: Caller,
    thread_id: str,
    run_id: str,
    *,
    reason: str | None = None,
) -> None:
    """runs.cancel: the run ends, recorded as cancelled (its status ``interrupted``), and its thread is
    free for the next run, whether it was running in this worker or paused at its human judge.

    A running run is cancelled and waited for (it stops at its next step): if it paused meanwhile (the
    cancel came as it reached the judge), the paused loop is abandoned too, so a cancel never leaves
    an interrupt pending that nobody asked for."""
    session = await get_thread(database, caller, thread_id)
    loop_index = _loop_index(session.id, run_id)
    task = cancel_local(runs, run_id, reason)  # before reading the loop: a run ending now is read ended
    if task is not None:
        await asyncio.wait([task])
    async with database.sessionmaker() as db:
        loop = await loops_repo.get_loop(db, session_id=session.id, loop_index=loop_index)
    if loop is None:
        raise NotFound(f"no run {run_id} on this thread", field="run_id")
    if task is None and loop.status == "running":
        raise Conflict(
            f"run {run_id} runs in another worker of the service, and runs.cancel reaches only the "
            "worker's own runs: retry, or wait for it with runs.join",
            field="run_id",
        )
    if task is None and loop.status != "awaiting_feedback":
        raise Conflict(
            f"run {run_id} has ended ({run_status(loop)}): there is nothing to cancel", field="run_id"
        )
    if loop.status == "awaiting_feedback":
        async with in_thread_terms(thread_id):
            try:
                await loop_cancel.abandon_paused(
                    database, runner, caller, session.id, loop.loop_index, reason=reason
                )
            except NotAwaitingFeedback:  # resumed (or abandoned) by another request meanwhile
                raise Conflict(
                    f"run {run_id} no longer waits for a judgement: another call answered or ended it",
                    field="run_id",
                ) from None
