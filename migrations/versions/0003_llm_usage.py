"""LLM accounting: cached and locally counted tokens, LLM time, fallback causes, per-key daily usage.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 16:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

USAGE_TABLES = ("loops", "rounds", "steering_commands")


def _usage_columns() -> list[sa.Column]:
    return [
        sa.Column("cached_tokens", sa.Integer(), server_default="0", nullable=False),
        sa.Column("counted_calls", sa.Integer(), server_default="0", nullable=False),
        sa.Column("llm_seconds", sa.Float(), server_default="0", nullable=False),
    ]


def upgrade() -> None:
    for table in USAGE_TABLES:
        for column in _usage_columns():
            op.add_column(table, column)
    op.add_column("rounds", sa.Column("rec_fallback_cause", sa.Text(), nullable=True))
    op.add_column("rounds", sa.Column("user_fallback_cause", sa.Text(), nullable=True))
    op.add_column("rounds", sa.Column("llm_detail", postgresql.JSONB(astext_type=sa.Text()), nullable=True))
    op.add_column("steering_commands", sa.Column("fallback_cause", sa.Text(), nullable=True))
    for name in ("llm_calls", "prompt_tokens", "completion_tokens"):
        op.add_column("steering_commands", sa.Column(name, sa.Integer(), server_default="0", nullable=False))
    op.create_table(
        "key_usage",
        sa.Column("owner_key_id", sa.Integer(), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("llm_calls", sa.BigInteger(), nullable=False),
        sa.Column("prompt_tokens", sa.BigInteger(), nullable=False),
        sa.Column("completion_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cached_tokens", sa.BigInteger(), nullable=False),
        sa.Column("counted_calls", sa.BigInteger(), nullable=False),
        sa.Column("llm_seconds", sa.Float(), nullable=False),
        sa.Column("fallbacks", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["owner_key_id"],
            ["api_keys.id"],
            name=op.f("fk_key_usage_owner_key_id_api_keys"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("owner_key_id", "day", name=op.f("pk_key_usage")),
    )


def downgrade() -> None:
    op.drop_table("key_usage")
    for name in ("fallback_cause", "llm_calls", "prompt_tokens", "completion_tokens"):
        op.drop_column("steering_commands", name)
    for name in ("rec_fallback_cause", "user_fallback_cause", "llm_detail"):
        op.drop_column("rounds", name)
    for table in USAGE_TABLES:
        for column in _usage_columns():
            op.drop_column(table, column.name)
