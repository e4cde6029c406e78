"""The steering table and its repository: every command (and reset) of a session, with what it did.

The session's preference memory is the ``preferences`` of its newest row, so the memory and
its history can never disagree. Rows go with their session (ON DELETE CASCADE).
The model registers on the service's ``Base`` so Alembic sees one metadata.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    func,
    select,
)
from sqlalchemy.dialects.postgresql import JSONB, UUID
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from app.db.models import Base, usage_of

COMMAND_KINDS = ("command", "reset")


class SteeringCommand(Base):
    """One natural-language command (or a reset) on a session and the memory it produced."""

    __tablename__ = "steering_commands"
    __table_args__ = (
        CheckConstraint(f"kind IN {COMMAND_KINDS}", name="kind"),
        Index("ix_steering_commands_session_id", "session_id", "id"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    session_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("sessions.id", ondelete="CASCADE"), nullable=False
    )
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    text: Mapped[str | None] = mapped_column(Text)
    parser: Mapped[str | None] = mapped_column(String(16))
    understood: Mapped[bool] = mapped_column(Boolean, nullable=False)
    fallback: Mapped[bool] = mapped_column(Boolean, nullable=False)
    unparsed: Mapped[list[str]] = mapped_column(JSONB, nullable=False)
    parsed: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False)
    preferences: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False)
    recommendations: Mapped[list[int]] = mapped_column(JSONB, nullable=False)
    fallback_cause: Mapped[str | None] = mapped_column(Text)
    llm_calls: Mapped[int] = mapped_column(Integer, nullable=False, default=0, server_default="0")
    prompt_tokens: Mapped[int] = mapped_column(Integer, nullable=False, default=0, server_default="0")
    completion_tokens: Mapped[int] = mapped_column(Integer, nullable=False, default=0, server_default="0")
    cached_tokens: Mapped[int] = mapped_column(Integer, nullable=False, default=0, server_default="0")
    counted_calls: Mapped[int] = mapped_column(Integer, nullable=False, default=0, server_default="0")
    llm_seconds: Mapped[float] = mapped_column(Float, nullable=False, default=0.0, server_default="0")
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )

    @property
    def usage(self) -> dict[str, Any]:
        return usage_of(self)


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


async def list_commands(
    db: AsyncSession, *, session_id: uuid.UUID, limit: int, offset: int
) -> tuple[list[SteeringCommand], int]:
    """Oldest first (the order they were given), with the total count."""
    where = SteeringCommand.session_id == session_id
    total = (await db.execute(select(func.count()).select_from(SteeringCommand).where(where))).scalar_one()
    stmt = select(SteeringCommand).where(where).order_by(SteeringCommand.id).limit(limit).offset(offset)
    return list((await db.execute(stmt)).scalars()), int(total)
