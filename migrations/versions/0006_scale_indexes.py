"""Indexes for a million sessions (bench/scale.py): listing by status or user in creation order
without a sort, and retention's scan for idle sessions by last activity.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 22:40:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # GET /v1/sessions?status=...: the newest page of one status, read off the index in order.
    op.create_index(
        "ix_sessions_owner_status_created", "sessions", ["owner_key_id", "status", "created_at"], unique=False
    )
    # ?user_id=...: the same for one user (replaces (owner, user), which needed a sort).
    op.create_index(
        "ix_sessions_owner_user_created", "sessions", ["owner_key_id", "user_id", "created_at"], unique=False
    )
    op.drop_index("ix_sessions_owner_user", table_name="sessions")
    # recloop db prune: idle sessions by last activity, oldest first.
    op.create_index("ix_sessions_status_updated", "sessions", ["status", "updated_at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_sessions_status_updated", table_name="sessions")
    op.create_index("ix_sessions_owner_user", "sessions", ["owner_key_id", "user_id"], unique=False)
    op.drop_index("ix_sessions_owner_user_created", table_name="sessions")
    op.drop_index("ix_sessions_owner_status_created", table_name="sessions")
