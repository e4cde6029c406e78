"""SQLAlchemy 2 models of the service's own tables (owned by Alembic, see migrations/).

LangGraph's checkpoint tables are not here: the saver creates them in their own schema.
"""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    false,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB, UUID
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

# Deterministic constraint names, so autogenerate and downgrades agree across databases.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

SESSION_STATUSES = ("idle", "running", "awaiting_feedback")
LOOP_STATUSES = ("running", "awaiting_feedback", "completed", "failed")


def include_in_autogenerate(name: str | None, type_: str, parent_names: dict) -> bool:
    """Alembic's ``include_name``: only the default schema is ours; LangGraph's schema is not."""
    if type_ == "schema":
        return name in (None, "public")
    return True


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def _now_column() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), server_default=func.now(), nullable=False)


class ApiKey(Base):
    """An API key: only its SHA-256 is stored; ``prefix`` lets an owner tell keys apart."""

    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    owner: Mapped[str] = mapped_column(String(200), nullable=False)
    prefix: Mapped[str] = mapped_column(String(16), nullable=False)
    key_hash: Mapped[str] = mapped_column(String(64), nullable=False, unique=True)
    created_at: Mapped[datetime] = _now_column()
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class LLMUsageColumns:
    """The LLM usage columns of a loop and of a round (:data:`USAGE_COLUMNS` names their LLMUsage keys);
    :class:`KeyUsage` sums them per day in wider columns of its own."""

    llm_calls: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    prompt_tokens: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    cached_tokens: Mapped[int] = mapped_column(Integer, nullable=False, default=0, server_default="0")
    counted_calls: Mapped[int] = mapped_column(Integer, nullable=False, default=0, server_default="0")
    llm_seconds: Mapped[float] = mapped_column(Float, nullable=False, default=0.0, server_default="0")

    @property
    def usage(self) -> dict[str, Any]:
        return usage_of(self)


class Session(Base):
    """One user's recommendation session; its LangGraph thread is ``thread_id``."""

    __tablename__ = "sessions"
    __table_args__ = (
        CheckConstraint(f"status IN {SESSION_STATUSES}", name="status"),
        # migration 0009: each order of a listing (app/db/sessions.py SORT_COLUMNS) read off one index
        Index("ix_sessions_owner_created_id", "owner_key_id", "created_at", "id"),
        Index("ix_sessions_owner_status_created_id", "owner_key_id", "status", "created_at", "id"),
        Index("ix_sessions_owner_updated_id", "owner_key_id", "updated_at", "id"),
        Index("ix_sessions_owner_id", "owner_key_id", "id"),
        # migration 0006 (bench/scale.py): list by user in creation order; retention's scan
        Index("ix_sessions_owner_user_created", "owner_key_id", "user_id", "created_at"),
        Index("ix_sessions_status_updated", "status", "updated_at"),
    )

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True, default=uuid.uuid4)
    owner_key_id: Mapped[int] = mapped_column(ForeignKey("api_keys.id", ondelete="CASCADE"), nullable=False)
    user_id: Mapped[str] = mapped_column(String(200), nullable=False)
    dataset: Mapped[str] = mapped_column(String(100), nullable=False)
    thread_id: Mapped[str] = mapped_column(String(64), nullable=False, unique=True)
    status: Mapped[str] = mapped_column(String(32), nullable=False, default="idle")
    history: Mapped[list[int]] = mapped_column(JSONB, nullable=False)
    n_loops: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    created_at: Mapped[datetime] = _now_column()
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), onupdate=func.now(), nullable=False
    )
    thread_metadata: Mapped[dict[str, Any]] = mapped_column(
        "metadata", JSONB, nullable=False, default=dict, server_default=text("'{}'::jsonb")
    )
    """The thread's metadata in LangGraph's protocol (``metadata`` is taken in SQLAlchemy's models)."""

    loops: Mapped[list[Loop]] = relationship(back_populates="session", passive_deletes=True)


class Loop(LLMUsageColumns, Base):
    """One recommendation request on a session: its parameters, outcome, timings and LLM usage."""

    __tablename__ = "loops"
    __table_args__ = (
        UniqueConstraint("session_id", "loop_index", name="uq_loops_session_loop_index"),
        CheckConstraint(f"status IN {LOOP_STATUSES}", name="status"),
        Index("ix_loops_running_worker", "worker_id", postgresql_where=text("status = 'running'")),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    session_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("sessions.id", ondelete="CASCADE"), nullable=False, index=True
    )
    loop_index: Mapped[int] = mapped_column(Integer, nullable=False)
    status: Mapped[str] = mapped_column(String(32), nullable=False)
    params: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False)
    final_item: Mapped[int | None] = mapped_column(Integer)
    final_reason: Mapped[str | None] = mapped_column(Text)
    stop_reason: Mapped[str | None] = mapped_column(String(32))
    started_at: Mapped[datetime] = _now_column()
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    duration_ms: Mapped[float | None] = mapped_column(Float)
    error: Mapped[str | None] = mapped_column(Text)
    """Why a ``failed`` loop failed (exception type and message, shortened)."""
    cancelled: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False, server_default=false())
    """A ``failed`` loop its client ended: a run cancelled, or a paused loop abandoned at its judge
    (app/services/loop_cancel.py)."""
    worker_id: Mapped[str | None] = mapped_column(String(36))
    """The worker process that runs (ran) the loop: who may say a ``running`` loop is dead."""
    resumed_from: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    """Set when another worker continued the loop after its worker stopped mid-run
    (app/services/resume.py): the checkpoint's step and next nodes, when, and how many times."""

    session: Mapped[Session] = relationship(back_populates="loops")

    rounds: Mapped[list[Round]] = relationship(
        back_populates="loop", order_by="Round.round", passive_deletes=True
    )


class Round(LLMUsageColumns, Base):
    """One proposal of a loop and the judgement on it; (loop, round) is unique: no forks."""

    __tablename__ = "rounds"
    __table_args__ = (
        UniqueConstraint("loop_id", "round", name="uq_rounds_loop_round"),
        CheckConstraint("decision IN ('accept', 'reject')", name="decision"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    loop_id: Mapped[int] = mapped_column(ForeignKey("loops.id", ondelete="CASCADE"), nullable=False)
    round: Mapped[int] = mapped_column(Integer, nullable=False)
    item: Mapped[int] = mapped_column(Integer, nullable=False)
    item_title: Mapped[str] = mapped_column(Text, nullable=False)
    rec_reason: Mapped[str] = mapped_column(Text, nullable=False)
    reward_score: Mapped[float | None] = mapped_column(Float)
    reward_rank: Mapped[int | None] = mapped_column(Integer)
    decision: Mapped[str] = mapped_column(String(16), nullable=False)
    user_reason: Mapped[str] = mapped_column(Text, nullable=False)
    rec_fallback: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    user_fallback: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    rec_fallback_cause: Mapped[str | None] = mapped_column(Text)
    user_fallback_cause: Mapped[str | None] = mapped_column(Text)
    llm_detail: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    """Per agent usage (``rec``, ``user``) and every attempt (``attempts``) of the round's LLM calls."""
    created_at: Mapped[datetime] = _now_column()

    loop: Mapped[Loop] = relationship(back_populates="rounds")

    @property
    def rec_usage(self) -> dict[str, Any] | None:
        return (self.llm_detail or {}).get("rec")

    @property
    def user_usage(self) -> dict[str, Any] | None:
        return (self.llm_detail or {}).get("user")

    @property
    def llm_attempts(self) -> list[dict[str, Any]]:
        return list((self.llm_detail or {}).get("attempts") or [])

    @property
    def reason_reading(self) -> dict[str, Any] | None:
        return (self.llm_detail or {}).get("reason_reading")

    @property
    def llm_evidence(self) -> dict[str, Any] | None:
        return (self.llm_detail or {}).get("evidence")


class KeyUsage(Base):
    """LLM usage per API key and UTC day, across all its sessions (deleted ones included).

    Upserted in the same transaction as the loop history or steering command that used the LLM,
    so per-key totals (and budgets built on them) can neither drift nor be reset by deleting a
    session.
    """

    __tablename__ = "key_usage"

    owner_key_id: Mapped[int] = mapped_column(ForeignKey("api_keys.id", ondelete="CASCADE"), primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    llm_calls: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    prompt_tokens: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    completion_tokens: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    cached_tokens: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    counted_calls: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    llm_seconds: Mapped[float] = mapped_column(Float, nullable=False, default=0.0)
    fallbacks: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)

    @property
    def usage(self) -> dict[str, Any]:
        return usage_of(self)


USAGE_COLUMNS = {
    "calls": "llm_calls",
    "prompt_tokens": "prompt_tokens",
    "completion_tokens": "completion_tokens",
    "cached_tokens": "cached_tokens",
    "counted_calls": "counted_calls",
    "seconds": "llm_seconds",
}
"""LLMUsage key -> column name, on every table that stores usage."""


def usage_of(row: Any) -> dict[str, Any]:
    """A row's usage columns as an LLMUsage dict."""
    return {key: getattr(row, column) or 0 for key, column in USAGE_COLUMNS.items()}


def usage_columns(usage: dict[str, Any]) -> dict[str, Any]:
    """An LLMUsage dict as column values (missing keys are zero)."""
    return {column: usage.get(key, 0) or 0 for key, column in USAGE_COLUMNS.items()}


class IdempotencyKey(Base):
    """A request sent with an Idempotency-Key: what it produced and its answer, replayed until it expires.

    A loop, session or command request writes its row in the transaction of its work
    (``session_id``, ``loop_index`` and ``command_id`` name what it produced; no answer yet), so the
    outcome of a request whose answer was lost is known; the answer is added once it has been sent.
    """

    __tablename__ = "idempotency_keys"

    owner_key_id: Mapped[int] = mapped_column(ForeignKey("api_keys.id", ondelete="CASCADE"), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64), nullable=False)
    """SHA-256 of the request (method, path, body, streamed or not): a different request is refused."""
    status_code: Mapped[int | None] = mapped_column(Integer)
    content_type: Mapped[str | None] = mapped_column(String(200))
    body: Mapped[bytes | None] = mapped_column(LargeBinary)
    session_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("sessions.id", ondelete="CASCADE")
    )
    loop_index: Mapped[int | None] = mapped_column(Integer)
    command_id: Mapped[int | None] = mapped_column(
        BigInteger, ForeignKey("steering_commands.id", ondelete="CASCADE")
    )
    """The steering command the request stored (its answer is rebuilt from that row)."""
    loop_outcome: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    """The loop as the request's run recorded it (written with the record): its answer is rebuilt
    from this, not from the loop as it is later (a paused loop may have been judged since)."""
    created_at: Mapped[datetime] = _now_column()
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False, index=True)


class RateWindow(Base):
    """Requests of one API key in one minute (fixed windows), shared by all workers."""

    __tablename__ = "rate_windows"

    owner_key_id: Mapped[int] = mapped_column(ForeignKey("api_keys.id", ondelete="CASCADE"), primary_key=True)
    window_start: Mapped[datetime] = mapped_column(DateTime(timezone=True), primary_key=True)
    count: Mapped[int] = mapped_column(Integer, nullable=False)


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
