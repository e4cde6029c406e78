"""Repository of loops and rounds (keyword-only; the caller owns the transaction)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import selectinload

from app.db.models import Loop, Round

ROUND_FIELDS = (
    "round",
    "item",
    "item_title",
    "rec_reason",
    "reward_score",
    "reward_rank",
    "decision",
    "user_reason",
    "rec_fallback",
    "user_fallback",
)


def new_loop(*, session_id: uuid.UUID, loop_index: int, status: str, params: dict[str, Any]) -> Loop:
    """A loop row to fill in and stage with :func:`stage_loop` (one INSERT with its rounds)."""
    return Loop(
        session_id=session_id,
        loop_index=loop_index,
        status=status,
        params=params,
        llm_calls=0,
        prompt_tokens=0,
        completion_tokens=0,
    )


def round_rows(rounds: Iterable[dict[str, Any]]) -> list[Round]:
    """Round rows from graph RoundRecord dicts."""
    rows = []
    for record in rounds:
        usage = record.get("llm_usage") or {}
        rows.append(
            Round(
                **{name: record.get(name) for name in ROUND_FIELDS},
                llm_calls=int(usage.get("calls", 0)),
                prompt_tokens=int(usage.get("prompt_tokens", 0)),
                completion_tokens=int(usage.get("completion_tokens", 0)),
            )
        )
    return rows


def stage_loop(db: AsyncSession, *, loop: Loop, rounds: list[Round]) -> None:
    """Stage the loop (new or loaded) and append ``rounds``; written when the caller's transaction flushes."""
    loop.rounds.extend(rounds)
    db.add(loop)


async def get_loop(db: AsyncSession, *, session_id: uuid.UUID, loop_index: int) -> Loop | None:
    stmt = (
        select(Loop)
        .where(Loop.session_id == session_id, Loop.loop_index == loop_index)
        .options(selectinload(Loop.rounds))
    )
    return (await db.execute(stmt)).scalar_one_or_none()


async def list_loops(
    db: AsyncSession, *, session_id: uuid.UUID, limit: int, offset: int
) -> tuple[list[Loop], int]:
    """Loops of a session, newest first, rounds included."""
    page = (
        select(Loop)
        .where(Loop.session_id == session_id)
        .order_by(Loop.loop_index.desc())
        .limit(limit)
        .offset(offset)
        .options(selectinload(Loop.rounds))
    )
    count = select(func.count()).select_from(Loop).where(Loop.session_id == session_id)
    rows = list((await db.execute(page)).scalars())
    return rows, int((await db.execute(count)).scalar_one())
