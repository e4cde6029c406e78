"""A client ending a loop early: cancelling a running one (LangGraph's ``runs.cancel``) or abandoning
one paused at its human judge (``runs.cancel`` on a paused run, ``/v1``'s
``POST /v1/sessions/{id}/loops/{n}/cancel``).

Either way the loop is recorded ``failed`` with an error that starts with :data:`CANCELLED_PREFIX`
and says which (its run's status is ``interrupted`` in LangGraph's protocol), the session is free
for the next loop, and the thread is left with no interrupt pending: a loop nobody is asked to
judge any more never shows a question.
"""

from __future__ import annotations

import asyncio
import uuid

from app.db import checkpoints
from app.db import loops as loops_repo
from app.db.models import Session
from app.services import recovery
from app.services.errors import NotAwaitingFeedback
from app.services.keys import Caller
from app.services.runtime import ServiceResources
from app.services.sessions import locked_session
from graph.runner import clear_pending, read_thread

ERROR_CHARS = 500
"""Longest error summary a failed loop keeps."""
CANCELLED_PREFIX = "cancelled:"
"""How the error of every loop its client ended starts (a run cancelled, a paused loop abandoned)."""
CANCELLED = f"{CANCELLED_PREFIX} the client cancelled the run"
ABANDONED_AT_JUDGE = f"{CANCELLED_PREFIX} the client abandoned the loop while it waited for a judgement"


def _with_reason(error: str, reason: str | None) -> str:
    return (error if not reason else f"{error} ({reason})")[:ERROR_CHARS]


def cancel_message(reason: str | None = None) -> str:
    """What a client's cancel of a running loop is sent as (``task.cancel(message)``) and recorded with."""
    return _with_reason(CANCELLED, reason)


def is_client_cancel(exc: asyncio.CancelledError) -> bool:
    """A client's cancel (:func:`cancel_message`), not the worker stopping (that leaves it to recovery)."""
    return bool(exc.args) and isinstance(exc.args[0], str) and exc.args[0].startswith(CANCELLED_PREFIX)


def recorded_error(exc: asyncio.CancelledError) -> str:
    return exc.args[0][:ERROR_CHARS] if is_client_cancel(exc) else CANCELLED


async def drop_left_interrupt(res: ServiceResources, session: Session, loop_index: int) -> None:
    """After a running loop was cancelled and recorded so: if the cancel came as its judge paused
    (the interrupt's checkpoint written, the run's record not), the thread's interrupt is cleared."""
    if res.graph is None:
        return
    async with res.sessionmaker() as db:
        status = await loops_repo.loop_status(db, session_id=session.id, loop_index=loop_index)
    if status != "failed" or not (await read_thread(res.graph, session.thread_id)).interrupts:
        return  # paused (recorded before the cancel came: runs.cancel abandons it), or nothing left
    await clear_pending(res.graph, session.thread_id)
    await checkpoints.flush(res.saver, session.thread_id)


async def abandon_paused(
    res: ServiceResources,
    caller: Caller,
    session_id: uuid.UUID,
    loop_index: int,
    *,
    reason: str | None = None,
) -> None:
    """End loop ``loop_index``, paused at its human judge, without a judgement: it is recorded failed
    (:data:`ABANDONED_AT_JUDGE`, with ``reason``), its interrupt is dropped from the thread, and the
    session is free for the next loop. The thread's new checkpoint and the history commit together."""
    async with locked_session(res, caller, session_id) as session:
        await recovery.settle(res, session)
        if session.status != "awaiting_feedback" or session.n_loops != loop_index:
            raise NotAwaitingFeedback(
                f"loop {loop_index} of the session does not wait for feedback: only a paused loop can be "
                "abandoned",
                field="loop_index",
            )
        if res.graph is not None:
            await clear_pending(res.graph, session.thread_id)
        async with (
            checkpoints.commit_with(res.saver, session.thread_id) as checkpoint_rows,
            res.sessionmaker.begin() as db,
        ):
            error = _with_reason(ABANDONED_AT_JUDGE, reason)
            await loops_repo.abandon_paused(db, session_id=session.id, loop_index=loop_index, error=error)
            await checkpoints.write_in(db, checkpoint_rows, res.settings.checkpoint_schema)
