"""A client ending a loop early: cancelling a running one (LangGraph's ``runs.cancel``) or abandoning
one paused at its human judge (``runs.cancel`` on a paused run, ``/v1``'s
``POST /v1/sessions/{id}/loops/{n}/cancel``).

Either way the loop is recorded ``failed`` and ``cancelled`` (its run's status is ``interrupted``
in LangGraph's protocol), with an error that says which and why, the session is free for the next
loop, and the thread is left with no interrupt pending: a loop nobody is asked to judge any more
never shows a question. A running loop's task is cancelled with a :class:`ClientCancel` (the
worker stopping cancels it with nothing: that loop is resumed, not ended).
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass

from app.db import loops as loops_repo
from app.db.database import Database
from app.db.models import Session
from app.services import recovery
from app.services.errors import NotAwaitingFeedback
from app.services.keys import Caller
from app.services.service_runner import ServiceRunner
from app.services.sessions import locked_session
from graph.runner import clear_pending, read_thread
from postgres import checkpoints

ERROR_CHARS = 500
"""Longest error summary a failed loop keeps."""
CANCELLED = "cancelled: the client cancelled the run"
ABANDONED_AT_JUDGE = "cancelled: the client abandoned the loop while it waited for a judgement"


@dataclass(frozen=True)
class ClientCancel:
    """What a client's cancel of a running loop sends its task (``task.cancel(ClientCancel(...))``)."""

    reason: str | None = None

    @property
    def error(self) -> str:
        """The loop's recorded error."""
        return _with_reason(CANCELLED, self.reason)


def _with_reason(error: str, reason: str | None) -> str:
    return (error if not reason else f"{error} ({reason})")[:ERROR_CHARS]


def client_cancel(exc: BaseException) -> ClientCancel | None:
    """The client's cancel that ``exc`` carries; None for any other cancellation (the worker
    stopping: its loop is resumed, app/services/resume.py) or error."""
    if isinstance(exc, asyncio.CancelledError) and exc.args and isinstance(exc.args[0], ClientCancel):
        return exc.args[0]
    return None


async def drop_left_interrupt(
    database: Database, runner: ServiceRunner, session: Session, loop_index: int
) -> None:
    """After a running loop was cancelled and recorded so: if the cancel came as its judge paused
    (the interrupt's checkpoint written, the run's record not), the thread's interrupt is cleared."""
    if runner.graph is None:
        return
    async with database.sessionmaker() as db:
        status = await loops_repo.loop_status(db, session_id=session.id, loop_index=loop_index)
    if status != "failed" or not (await read_thread(runner.graph, session.thread_id)).interrupts:
        return  # paused (recorded before the cancel came: runs.cancel abandons it), or nothing left
    await clear_pending(runner.graph, session.thread_id)
    await checkpoints.flush(runner.saver, session.thread_id)


async def abandon_paused(
    database: Database,
    runner: ServiceRunner,
    caller: Caller,
    session_id: uuid.UUID,
    loop_index: int,
    *,
    reason: str | None = None,
) -> None:
    """End loop ``loop_index``, paused at its human judge, without a judgement: it is recorded failed
    (:data:`ABANDONED_AT_JUDGE`, with ``reason``), its interrupt is dropped from the thread, and the
    session is free for the next loop. The thread's new checkpoint and the history commit together."""
    async with locked_session(database, caller, session_id) as session:
        await recovery.settle(database, runner, session)
        if session.status != "awaiting_feedback" or session.n_loops != loop_index:
            raise NotAwaitingFeedback(
                f"loop {loop_index} of the session does not wait for feedback: only a paused loop can be "
                "abandoned",
                field="loop_index",
            )
        if runner.graph is not None:
            await clear_pending(runner.graph, session.thread_id)
        async with (
            checkpoints.commit_with(runner.saver, session.thread_id) as checkpoint_rows,
            database.sessionmaker.begin() as db,
        ):
            error = _with_reason(ABANDONED_AT_JUDGE, reason)
            await loops_repo.abandon_paused(db, session_id=session.id, loop_index=loop_index, error=error)
            await checkpoints.write_in(db, checkpoint_rows, runner.settings.checkpoint_schema)
