"""A run that lost the database for a moment goes on in its own request, not in a resume later.

A database restart or failover cuts a running loop's connections. Answering 503 then would tell
the client its work failed, while a resume (app/services/resume.py) finishes it moments later, or
its record had in fact committed. So the run waits for the database (at most
``Settings.run_outage_wait_s``) and asks what is left to do (:func:`next_step`):

- its graph had ended: record the loop again, unless the record is found committed (the
  connection died at COMMIT: only the answer was lost) or another worker resolved the loop;
- else go on from the thread's last committed checkpoint, as a resume would (``invoke(None)``).
  The saver kept the checkpoint rows it could not commit and commits them first, so no step runs
  twice; a human judgement that never committed is this run's own input, applied now, once; a
  loop none of whose checkpoints committed starts again from its input. The loop's history notes
  the resumption (``resumed_from``), and the loop must still be this worker's.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlalchemy import text

from app.db import loops as loops_repo
from app.db.database import Database
from app.services import resume
from app.services.errors import DATABASE_DOWN
from app.services.loop_record import LoopLedger
from graph.runner import graph_fingerprint, is_resume, resume_point


@dataclass(frozen=True)
class NextStep:
    """What a run does once the database is back."""

    action: Literal["stream", "record", "recorded"]
    """stream: run the graph (on) with ``graph_input`` from ``values``; record: write its ended
    loop again; recorded: nothing, the record had committed."""
    graph_input: Any = None
    values: dict[str, Any] = field(default_factory=dict)


async def database_back(database: Database, wait_until: float) -> bool:
    """Whether the database answers before ``wait_until`` (``time.monotonic()``; asked every half second)."""
    while time.monotonic() < wait_until:
        try:
            async with database.one_statement() as db:
                await db.execute(text("SELECT 1"))
            return True
        except DATABASE_DOWN:
            await asyncio.sleep(0.5)
    return False


async def next_step(ledger: LoopLedger, *, started_with: Any, ended: bool) -> NextStep | None:
    """What is left of the run from what the database holds (None: nothing this run can do; its
    error goes on). ``started_with``: the run's graph input; ``ended``: its graph had ended."""
    runner, session, loop_index = ledger.runner, ledger.session, ledger.loop_index
    if ended:
        status = await ledger.status()
        if status == "running":
            return NextStep("record")
        # Recorded: the COMMIT landed, only its answer was lost. Failed: resolved by another worker.
        return NextStep("recorded") if status in ("completed", "awaiting_feedback") else None
    point = await resume_point(runner.graph, session.thread_id)
    chosen = resume.plan(
        point,
        loop_index=loop_index,
        graph_id=graph_fingerprint(runner.graph),
        agents_served=True,
        agents=str(ledger.params.get("agents", "offline")),
        paused_before=is_resume(started_with),
    )
    fresh_input = started_with is not None and not is_resume(started_with)
    if chosen.action == "continue" and not (chosen.unanswered_judgement and not is_resume(started_with)):
        # A judgement that never committed is this run's own input: applied now, once.
        step = NextStep("stream", started_with if chosen.unanswered_judgement else None, dict(point.values))
    elif chosen.action == "restart" and fresh_input:
        step = NextStep("stream", started_with)  # none of its steps committed: from its input again
    else:
        return None
    async with ledger.database.sessionmaker.begin() as db:
        mine = await loops_repo.take_over(  # still this worker's loop, and the resumption noted
            db,
            session_id=session.id,
            loop_index=loop_index,
            from_worker=runner.worker_id,
            worker_id=runner.worker_id,
            resumed_from=chosen.resumed_from(point),
        )
    return step if mine is not None else None
