"""LangGraph's server protocol over recloop's own sessions and loops (what ``langgraph-sdk`` calls).

- An *assistant* is a loop variant a user picks: offline agents, LLM agents, or a human judge.
- A *thread* is a session: one id space, one owner (the API key), 404 for another owner's.
  Its metadata seeds the session: ``user_id`` (default ``"langgraph"``) and ``history`` (the
  item ids the user consumed before; required, as for ``POST /v1/sessions``).
- A *run* is one loop of the session's history: its id is the thread id with the loop number
  in its low bits (:func:`run_id_for`), so a run id needs no table of its own. Resuming a
  human-judged loop with ``command={"resume": ...}`` continues the same loop, so the same run.

Every run goes through the same :mod:`app.services.loops` as ``/v1``: the same lock (a second
run on a busy thread gets 409, ``multitask_strategy="reject"``), the same history and the same
checkpoint commit.
"""

from __future__ import annotations

import asyncio
import uuid
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy.exc import IntegrityError

from app.db import loops as loops_repo
from app.db import sessions as sessions_repo
from app.db.models import Loop, Session
from app.db.sessions import SessionFilter
from app.services import idempotency, loops, sessions
from app.services.errors import Conflict, InvalidInput, NotFound
from app.services.keys import Caller
from app.services.run_events import RunEvents
from app.services.runtime import ServiceResources
from app.services.validation import check_history
from graph.config import AgentMode
from graph.runner import ThreadSnapshot, drawable_graph, graph_schemas, read_thread, thread_history
from graph.state import JudgeMode

GRAPH_ID = "recloop"
ASSISTANT_NAMESPACE = uuid.UUID("5d1c3d1e-64f3-4c41-9b2a-0e5b5a2f7c10")
CREATED_AT = datetime.fromisoformat("2026-12-01T00:00:00+00:00")
"""Assistants are fixed by the code, not created: they carry one creation time."""
DEFAULT_USER = "langgraph"
THREAD_STATUS = {"idle": "idle", "running": "busy", "awaiting_feedback": "interrupted"}
"""A session's status as a thread's (a failed loop leaves the session idle, so no ``error``)."""
RUN_STATUS = {
    "running": "running",
    "awaiting_feedback": "interrupted",
    "completed": "success",
    "failed": "error",
}
"""A loop's status as a run's; a cancelled loop (failed with ``loops.CANCELLED``) is ``interrupted``."""
LOOP_BITS = 32


@dataclass(frozen=True)
class AssistantSpec:
    name: str
    agents: AgentMode
    judge_mode: JudgeMode
    description: str

    @property
    def assistant_id(self) -> str:
        return str(uuid.uuid5(ASSISTANT_NAMESPACE, self.name))

    def public(self) -> dict[str, Any]:
        return {
            "assistant_id": self.assistant_id,
            "graph_id": GRAPH_ID,
            "name": self.name,
            "description": self.description,
            "config": {},
            "context": {"agents": self.agents, "judge_mode": self.judge_mode},
            # "created_by": "system" as on LangGraph's server, whose graphs' own assistants carry it.
            "metadata": {"created_by": "system", "agents": self.agents, "judge_mode": self.judge_mode},
            "version": 1,
            "created_at": CREATED_AT.isoformat(),
            "updated_at": CREATED_AT.isoformat(),
        }


ASSISTANTS = (
    AssistantSpec("recloop", "offline", "agent", "The loop with offline agents (the trained models judge)."),
    AssistantSpec("recloop-llm", "llm", "agent", "The loop with LLM agents (needs RECLOOP_LLM_BASE_URL)."),
    AssistantSpec(
        "recloop-human",
        "offline",
        "human",
        "A person judges each proposal: the run pauses at an interrupt; resume it with "
        'command={"resume": {"decision": "accept" | "reject", "reason": "..."}}.',
    ),
)
"""``recloop`` is also the graph id, so ``assistant_id="recloop"`` works as on LangGraph's server."""


def available_assistants(res: ServiceResources) -> list[AssistantSpec]:
    return [a for a in ASSISTANTS if a.agents != "llm" or "llm" in res.agent_modes]


def get_assistant(res: ServiceResources, assistant_id: str) -> AssistantSpec:
    """By id or by name (LangGraph's server accepts the graph id for its default assistant)."""
    for assistant in available_assistants(res):
        if assistant_id in (assistant.assistant_id, assistant.name):
            return assistant
    raise NotFound(f"no assistant {assistant_id!r}", field="assistant_id")


def search_assistants(
    res: ServiceResources,
    *,
    graph_id: str | None,
    name: str | None,
    metadata: dict[str, Any] | None,
    limit: int,
    offset: int,
) -> list[AssistantSpec]:
    found = [
        a
        for a in available_assistants(res)
        if (graph_id is None or graph_id == GRAPH_ID)
        and (name is None or name.lower() in a.name.lower())
        and all(a.public()["metadata"].get(k) == v for k, v in (metadata or {}).items())
    ]
    return found[offset : offset + limit]


def assistant_graph() -> dict[str, Any]:
    return drawable_graph()


class RunInput(BaseModel):
    """A run's input: the loop's history is the thread's, so only these two are given."""

    candidates: list[int] | None = Field(
        None, description="Items to choose from (default: the rec model's top)"
    )
    max_rounds: int | None = Field(None, ge=1, le=20, description="Proposals before the loop gives up")


def assistant_schemas() -> dict[str, Any]:
    return {**graph_schemas(), "graph_id": GRAPH_ID, "input_schema": RunInput.model_json_schema()}


# --- threads ------------------------------------------------------------------------------------


def _thread_uuid(thread_id: str) -> uuid.UUID:
    try:
        return uuid.UUID(thread_id)
    except ValueError:
        raise NotFound(f"no thread {thread_id}", field="thread_id") from None


async def create_thread(
    res: ServiceResources,
    caller: Caller,
    *,
    metadata: dict[str, Any],
    thread_id: str | None,
    if_exists: str | None,
) -> Session:
    user_id = metadata.get("user_id", DEFAULT_USER)
    if not isinstance(user_id, str) or not user_id.strip() or len(user_id) > 200:
        raise InvalidInput(
            "metadata.user_id: give a non-blank string of at most 200 characters", field="metadata.user_id"
        )
    history = metadata.get("history")
    if not isinstance(history, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in history
    ):
        raise InvalidInput(
            "metadata.history: give the item ids the user consumed (a list of integers), as for a session",
            field="metadata.history",
        )
    check_history(history, res.catalog, max_items=res.settings.max_history_items, field="metadata.history")
    session_id = None
    if thread_id is not None:
        try:
            session_id = uuid.UUID(thread_id)
        except ValueError:
            raise InvalidInput("thread_id: a thread id is a UUID", field="thread_id") from None
    try:
        async with res.sessionmaker.begin() as db:
            session = await sessions_repo.add_session(
                db,
                owner_key_id=caller.key_id,
                user_id=user_id,
                dataset=res.catalog.name,
                history=history,
                session_id=session_id,
                metadata=metadata,
            )
            await idempotency.link(db, session_id=session.id)  # a keyed retry finds this thread
            return session
    except IntegrityError:
        if if_exists == "do_nothing" and session_id is not None:
            return await sessions.get_session(res, caller, session_id)  # 404 if another owner's
        raise Conflict(f"thread {thread_id} exists", field="thread_id") from None


async def get_thread(res: ServiceResources, caller: Caller, thread_id: str) -> Session:
    return await sessions.get_session(res, caller, _thread_uuid(thread_id))


async def thread_state(
    res: ServiceResources, session: Session, checkpoint_id: str | None = None
) -> ThreadSnapshot:
    """The thread's latest state, or its state at ``checkpoint_id`` (404 for a checkpoint it has not)."""
    if res.graph is None:
        raise NotFound("models are not loaded: the thread's state cannot be read", field=None)
    snapshot = await read_thread(res.graph, session.thread_id, checkpoint_id)
    if checkpoint_id is not None and (snapshot.created_at is None or snapshot.checkpoint_id != checkpoint_id):
        raise NotFound(f"no checkpoint {checkpoint_id} on this thread", field="checkpoint_id")
    return snapshot


async def state_history(
    res: ServiceResources, caller: Caller, thread_id: str, *, limit: int, before: str | None
) -> tuple[Session, list[ThreadSnapshot]]:
    session = await get_thread(res, caller, thread_id)
    if res.graph is None:
        return session, []
    return session, await thread_history(res.graph, session.thread_id, limit=limit, before=before)


async def search_threads(
    res: ServiceResources,
    caller: Caller,
    *,
    metadata: dict[str, Any] | None,
    status: str | None,
    ids: list[str] | None,
    limit: int,
    offset: int,
) -> list[Session]:
    statuses = None
    if status is not None:
        statuses = tuple(s for s, thread_status in THREAD_STATUS.items() if thread_status == status)
    where = SessionFilter(
        metadata=metadata,
        statuses=statuses,
        ids=tuple(_thread_uuid(i) for i in ids) if ids else None,
    )
    rows, _ = await sessions.list_sessions(res, caller, where=where, limit=limit, offset=offset)
    return rows


async def delete_thread(res: ServiceResources, caller: Caller, thread_id: str) -> None:
    await sessions.delete_session(res, caller, _thread_uuid(thread_id))


# --- runs -------------------------------------------------------------------------------------


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
    res: ServiceResources, caller: Caller, session_id: uuid.UUID, request: RunRequest
) -> AbstractAsyncContextManager[loops.LoopRun]:
    """A new loop (``input``) or the resumption of a paused one (``command.resume``), under the lock."""
    if request.resume is not None:
        answer = request.resume
        if not (
            isinstance(answer, dict)
            and answer.get("decision") in ("accept", "reject")
            and isinstance(answer.get("reason", ""), str)
        ):
            raise InvalidInput(
                'command.resume: give {"decision": "accept" | "reject", "reason": "..."}',
                field="command.resume",
            )
        return loops.open_feedback(
            res, caller, session_id, decision=answer["decision"], reason=answer.get("reason") or ""
        )
    values = request.input or {}
    # Other keys are ignored, as a LangGraph graph ignores input keys outside its input schema (a
    # parent graph hands RemoteGraph its whole state); the history would be a misunderstanding.
    if "history" in values:
        raise InvalidInput(
            "input.history: the history is the thread's (metadata.history when it was created, "
            "then what /v1/sessions/{id}/consumed records); a run's input takes candidates and max_rounds",
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
    return loops.open_loop(res, caller, session_id, loop_request)


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
    status = RUN_STATUS[loop.status]
    if loop.status == "failed" and (loop.error or "").startswith(loops.CANCELLED):
        status = "interrupted"
    return {
        "run_id": run_id_for(session.id, loop.loop_index),
        "thread_id": session.thread_id,
        "assistant_id": assistant.assistant_id,
        "created_at": loop.started_at.isoformat(),
        "updated_at": (loop.finished_at or loop.started_at).isoformat(),
        "status": status,
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
    res: ServiceResources, caller: Caller, thread_id: str, run_id: str
) -> tuple[Session, Loop]:
    session = await get_thread(res, caller, thread_id)
    index = _loop_index(session.id, run_id)
    async with res.sessionmaker() as db:
        loop = await loops_repo.get_loop(db, session_id=session.id, loop_index=index)
    if loop is None:
        raise NotFound(f"no run {run_id} on this thread", field="run_id")
    return session, loop


async def get_run(res: ServiceResources, caller: Caller, thread_id: str, run_id: str) -> dict[str, Any]:
    session, loop = await _owned_loop(res, caller, thread_id, run_id)
    return run_public(session, loop)


async def list_runs(
    res: ServiceResources, caller: Caller, thread_id: str, *, limit: int, offset: int, status: str | None
) -> list[dict[str, Any]]:
    session = await get_thread(res, caller, thread_id)
    loop_status = next((s for s, r in RUN_STATUS.items() if r == status), None) if status else None
    if status is not None and loop_status is None:
        return []
    async with res.sessionmaker() as db:
        rows, _ = await loops_repo.list_loops(
            db, session_id=session.id, limit=limit, offset=offset, status=loop_status
        )
    return [run_public(session, loop) for loop in rows]


@dataclass(frozen=True)
class TrackedRun:
    task: asyncio.Task
    events: RunEvents


def _local_run(res: ServiceResources, run_id: str) -> TrackedRun | None:
    return res.protocol_runs.get(run_id)


def _local_task(res: ServiceResources, run_id: str) -> asyncio.Task | None:
    tracked = _local_run(res, run_id)
    return None if tracked is None else tracked.task


def track(res: ServiceResources, run_id: str, task: asyncio.Task, events: RunEvents) -> None:
    """Remember a run of this worker while it runs, so it can be joined, streamed and cancelled."""
    res.protocol_runs[run_id] = TrackedRun(task, events)

    def ended(_: asyncio.Task) -> None:
        events.close_after(task)
        res.protocol_runs.pop(run_id, None)

    task.add_done_callback(ended)


async def joined_events(
    res: ServiceResources, caller: Caller, thread_id: str, run_id: str, *, poll_s: float = 0.1
) -> RunEvents | None:
    """The events of the run to join: None if it is not this worker's (it then has ended, here or
    in the worker that ran it: this waits for that)."""
    session, loop = await _owned_loop(res, caller, thread_id, run_id)
    tracked = _local_run(res, run_id)
    if tracked is not None:
        return tracked.events
    await _until_ended(res, session, loop, poll_s)
    return None


def cancel_local(res: ServiceResources, run_id: str) -> None:
    """Cancel this worker's run (recorded as the client's cancel); nothing if it has ended."""
    task = _local_task(res, run_id)
    if task is not None and not task.done():
        task.cancel(loops.CANCELLED)


async def join_run(
    res: ServiceResources, caller: Caller, thread_id: str, run_id: str, *, poll_s: float = 0.1
) -> Session:
    """Wait until the run is no longer running (in this worker or another one)."""
    session, loop = await _owned_loop(res, caller, thread_id, run_id)
    task = _local_task(res, run_id)
    if task is not None:
        await asyncio.wait([task])
    await _until_ended(res, session, loop, poll_s)
    return session


async def _until_ended(res: ServiceResources, session: Session, loop: Loop, poll_s: float) -> None:
    """Wait until the loop, as read before, is no longer ``running`` in the history (any worker's)."""
    while loop.status == "running" and await _still_running(res, session, loop.loop_index):
        await asyncio.sleep(poll_s)


async def _still_running(res: ServiceResources, session: Session, loop_index: int) -> bool:
    async with res.sessionmaker() as db:
        loop = await loops_repo.get_loop(db, session_id=session.id, loop_index=loop_index)
    return loop is not None and loop.status == "running"


async def cancel_run(
    res: ServiceResources, caller: Caller, thread_id: str, run_id: str, *, wait: bool
) -> None:
    _, loop = await _owned_loop(res, caller, thread_id, run_id)
    task = _local_task(res, run_id)
    if task is None:
        if loop.status == "running":
            raise Conflict("the run runs in another worker of the service; cancel it there", field="run_id")
        raise Conflict(f"the run is not running (it is {RUN_STATUS[loop.status]})", field="run_id")
    task.cancel(loops.CANCELLED)  # recorded as the client's cancel, not as a stopped worker
    if wait:
        await asyncio.wait([task])
