"""What the web UI shows of the graph itself: its drawing, a session's checkpoints, a loop's scores.

The session's id is its LangGraph thread id; reading goes through :mod:`graph.introspect`, so
this layer sees plain data only.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from langgraph.graph.state import CompiledStateGraph

from app.db.database import Database
from app.services.errors import NotFound, Unavailable
from app.services.keys import Caller
from app.services.service_runner import ServiceRunner
from app.services.sessions import get_session
from graph.introspect import (
    CheckpointView,
    GraphDrawing,
    checkpoint_history,
    graph_drawing,
    loop_scores,
    ranks,
)
from recmodels.dataset import Dataset


def _graph(runner: ServiceRunner) -> CompiledStateGraph:
    if runner.graph is None:
        raise Unavailable("models are not loaded yet", field=None)
    return runner.graph


def drawing(runner: ServiceRunner) -> GraphDrawing:
    return graph_drawing(_graph(runner))


async def checkpoints(
    database: Database, runner: ServiceRunner, caller: Caller, session_id: uuid.UUID, *, limit: int
) -> list[CheckpointView]:
    session = await get_session(database, caller, session_id)
    return await checkpoint_history(_graph(runner), session.thread_id, limit=limit)


@dataclass(frozen=True)
class CandidateScore:
    item: int
    title: str
    position: int
    """1-based place in the candidate list the agents saw."""
    rec_score: float
    rec_rank: int
    reward_score: float
    reward_rank: int
    proposed_in: list[int]
    """The rounds (1-based) that proposed this item."""
    final: bool
    consumed_later: bool
    """The user consumed it after the loop (recorded through /consumed): the true item, where known."""


async def loop_candidates(
    database: Database,
    runner: ServiceRunner,
    catalog: Dataset,
    caller: Caller,
    session_id: uuid.UUID,
    loop_index: int,
) -> tuple[list[CandidateScore], list[int]]:
    """A loop's candidates with both models' scores and ranks, and the item of each round."""
    session = await get_session(database, caller, session_id)
    found = await loop_scores(_graph(runner), session.thread_id, loop_index)
    if found is None:
        raise NotFound(f"no checkpointed loop {loop_index} in session {session_id}", field="loop_index")
    known = len(found.history)
    later = set(session.history[known:]) if session.history[:known] == found.history else set()
    rec_ranks, reward_ranks = ranks(found.rec_scores), ranks(found.reward_scores)
    rows = [
        CandidateScore(
            item=item,
            title=catalog.title(item),
            position=index + 1,
            rec_score=found.rec_scores[index],
            rec_rank=rec_ranks[index],
            reward_score=found.reward_scores[index],
            reward_rank=reward_ranks[index],
            proposed_in=[r + 1 for r, p in enumerate(found.proposals) if p == item],
            final=item == found.final_item,
            consumed_later=item in later,
        )
        for index, item in enumerate(found.candidates)
    ]
    return rows, found.proposals
