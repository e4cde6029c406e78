"""A keyed steering command is exactly-once too: an Idempotency-Key row can name the command row it
produced (written in the command's transaction, like a loop's), and expired keys are found by an
index for `recloop db prune`.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02 04:50:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("idempotency_keys", sa.Column("command_id", sa.BigInteger(), nullable=True))
    op.create_foreign_key(
        op.f("fk_idempotency_keys_command_id_steering_commands"),
        "idempotency_keys",
        "steering_commands",
        ["command_id"],
        ["id"],
        ondelete="CASCADE",
    )
    op.create_index("ix_idempotency_keys_expires_at", "idempotency_keys", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_idempotency_keys_expires_at", table_name="idempotency_keys")
    op.drop_constraint(
        op.f("fk_idempotency_keys_command_id_steering_commands"), "idempotency_keys", type_="foreignkey"
    )
    op.drop_column("idempotency_keys", "command_id")
