"""Exactly-once keyed requests and resolvable loops: an Idempotency-Key row is written in the
transaction of the work it stands for (its answer may follow later), and a loop names the worker
process that runs it.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 22:05:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    for column in ("status_code", "content_type", "body"):
        op.alter_column("idempotency_keys", column, nullable=True)
    op.add_column("idempotency_keys", sa.Column("session_id", sa.UUID(), nullable=True))
    op.add_column("idempotency_keys", sa.Column("loop_index", sa.Integer(), nullable=True))
    op.create_foreign_key(
        op.f("fk_idempotency_keys_session_id_sessions"),
        "idempotency_keys",
        "sessions",
        ["session_id"],
        ["id"],
        ondelete="CASCADE",
    )
    op.add_column("loops", sa.Column("worker_id", sa.String(length=36), nullable=True))
    op.create_index(
        "ix_loops_running_worker",
        "loops",
        ["worker_id"],
        postgresql_where=sa.text("status = 'running'"),
    )


def downgrade() -> None:
    op.drop_index("ix_loops_running_worker", table_name="loops")
    op.drop_column("loops", "worker_id")
    op.drop_constraint(
        op.f("fk_idempotency_keys_session_id_sessions"), "idempotency_keys", type_="foreignkey"
    )
    op.drop_column("idempotency_keys", "loop_index")
    op.drop_column("idempotency_keys", "session_id")
    op.execute("DELETE FROM idempotency_keys WHERE body IS NULL")  # links without an answer: not storable
    for column in ("status_code", "content_type", "body"):
        op.alter_column("idempotency_keys", column, nullable=False)
