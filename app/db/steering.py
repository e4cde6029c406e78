"""Steering commands: every command (and reset) of a session, with what it did.

The session's preference memory is the ``preferences`` of its newest row, so the memory and
its history can never disagree. Rows go with their session (ON DELETE CASCADE).
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import SteeringCommand


async def add_command(db: AsyncSession, *, session_id: uuid.UUID, **fields: Any) -> SteeringCommand:
    row = SteeringCommand(session_id=session_id, **fields)
    db.add(row)
    await db.flush()
    await db.refresh(row)
    return row


async def latest_command(db: AsyncSession, *, session_id: uuid.UUID) -> SteeringCommand | None:
    stmt = (
        select(SteeringCommand)
        .where(SteeringCommand.session_id == session_id)
        .order_by(SteeringCommand.id.desc())
        .limit(1)
    )
    return (await db.execute(stmt)).scalar_one_or_none()


def latest_preferences(session_id: Any) -> Any:
    """The memory of ``session_id`` (a value or a column) as a scalar subquery, to read with the session."""
    return (
        select(SteeringCommand.preferences)
        .where(SteeringCommand.session_id == session_id)
        .order_by(SteeringCommand.id.desc())
        .limit(1)
        .scalar_subquery()
    )


async def list_commands(
    db: AsyncSession, *, session_id: uuid.UUID, limit: int, offset: int
) -> tuple[list[SteeringCommand], int]:
    """Oldest first (the order they were given), with the total count."""
    where = SteeringCommand.session_id == session_id
    total = (await db.execute(select(func.count()).select_from(SteeringCommand).where(where))).scalar_one()
    stmt = select(SteeringCommand).where(where).order_by(SteeringCommand.id).limit(limit).offset(offset)
    return list((await db.execute(stmt)).scalars()), int(total)
