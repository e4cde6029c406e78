"""Service tables: API keys, sessions, loops and rounds.

Revision ID: 0001
Revises:
Create Date: 2026-11-30 03:05:25.989175
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "api_keys",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("owner", sa.String(length=200), nullable=False),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
        sa.UniqueConstraint("key_hash", name=op.f("uq_api_keys_key_hash")),
    )
    op.create_table(
        "sessions",
        sa.Column("id", sa.UUID(), nullable=False),
        sa.Column("owner_key_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.String(length=200), nullable=False),
        sa.Column("dataset", sa.String(length=100), nullable=False),
        sa.Column("thread_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("history", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("n_loops", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "status IN ('idle', 'running', 'awaiting_feedback')", name=op.f("ck_sessions_status")
        ),
        sa.ForeignKeyConstraint(
            ["owner_key_id"],
            ["api_keys.id"],
            name=op.f("fk_sessions_owner_key_id_api_keys"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sessions")),
        sa.UniqueConstraint("thread_id", name=op.f("uq_sessions_thread_id")),
    )
    op.create_index("ix_sessions_owner_created", "sessions", ["owner_key_id", "created_at"], unique=False)
    op.create_index("ix_sessions_owner_user", "sessions", ["owner_key_id", "user_id"], unique=False)
    op.create_table(
        "loops",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("session_id", sa.UUID(), nullable=False),
        sa.Column("loop_index", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("params", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("final_item", sa.Integer(), nullable=True),
        sa.Column("final_reason", sa.Text(), nullable=True),
        sa.Column("stop_reason", sa.String(length=32), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("duration_ms", sa.Float(), nullable=True),
        sa.Column("llm_calls", sa.Integer(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.CheckConstraint(
            "status IN ('running', 'awaiting_feedback', 'completed', 'failed')", name=op.f("ck_loops_status")
        ),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"], name=op.f("fk_loops_session_id_sessions"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_loops")),
        sa.UniqueConstraint("session_id", "loop_index", name="uq_loops_session_loop_index"),
    )
    op.create_index(op.f("ix_loops_session_id"), "loops", ["session_id"], unique=False)
    op.create_table(
        "rounds",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("loop_id", sa.BigInteger(), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("item", sa.Integer(), nullable=False),
        sa.Column("item_title", sa.Text(), nullable=False),
        sa.Column("rec_reason", sa.Text(), nullable=False),
        sa.Column("reward_score", sa.Float(), nullable=True),
        sa.Column("reward_rank", sa.Integer(), nullable=True),
        sa.Column("decision", sa.String(length=16), nullable=False),
        sa.Column("user_reason", sa.Text(), nullable=False),
        sa.Column("rec_fallback", sa.Boolean(), nullable=False),
        sa.Column("user_fallback", sa.Boolean(), nullable=False),
        sa.Column("llm_calls", sa.Integer(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("decision IN ('accept', 'reject')", name=op.f("ck_rounds_decision")),
        sa.ForeignKeyConstraint(
            ["loop_id"], ["loops.id"], name=op.f("fk_rounds_loop_id_loops"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rounds")),
        sa.UniqueConstraint("loop_id", "round", name="uq_rounds_loop_round"),
    )


def downgrade() -> None:
    op.drop_table("rounds")
    op.drop_index(op.f("ix_loops_session_id"), table_name="loops")
    op.drop_table("loops")
    op.drop_index("ix_sessions_owner_user", table_name="sessions")
    op.drop_index("ix_sessions_owner_created", table_name="sessions")
    op.drop_table("sessions")
    op.drop_table("api_keys")
