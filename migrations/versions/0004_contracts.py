"""Recorded failures (loops.error), idempotency keys, per-key request windows.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 15:10:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("loops", sa.Column("error", sa.Text(), nullable=True))
    op.create_table(
        "idempotency_keys",
        sa.Column("owner_key_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=False),
        sa.Column("content_type", sa.String(length=200), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["owner_key_id"],
            ["api_keys.id"],
            name=op.f("fk_idempotency_keys_owner_key_id_api_keys"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("owner_key_id", "key", name=op.f("pk_idempotency_keys")),
    )
    op.create_table(
        "rate_windows",
        sa.Column("owner_key_id", sa.Integer(), nullable=False),
        sa.Column("window_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["owner_key_id"],
            ["api_keys.id"],
            name=op.f("fk_rate_windows_owner_key_id_api_keys"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("owner_key_id", "window_start", name=op.f("pk_rate_windows")),
    )


def downgrade() -> None:
    op.drop_table("rate_windows")
    op.drop_table("idempotency_keys")
    op.drop_column("loops", "error")
