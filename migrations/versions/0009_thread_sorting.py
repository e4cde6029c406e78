"""Indexes for sorted thread listings (LangGraph's threads.search ``sort_by``/``sort_order``): each
order (created_at, status then created_at, updated_at, thread id; the id last, in the same
direction) is one index read forwards or backwards, for one owner, with no sort.

The two indexes the listings used so far gain the id as their last column, so they serve the same
queries and their ties too.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-04 10:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_sessions_owner_created_id", "sessions", ["owner_key_id", "created_at", "id"])
    op.drop_index("ix_sessions_owner_created", table_name="sessions")
    op.create_index(
        "ix_sessions_owner_status_created_id", "sessions", ["owner_key_id", "status", "created_at", "id"]
    )
    op.drop_index("ix_sessions_owner_status_created", table_name="sessions")
    op.create_index("ix_sessions_owner_updated_id", "sessions", ["owner_key_id", "updated_at", "id"])
    op.create_index("ix_sessions_owner_id", "sessions", ["owner_key_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_sessions_owner_id", table_name="sessions")
    op.drop_index("ix_sessions_owner_updated_id", table_name="sessions")
    op.create_index("ix_sessions_owner_status_created", "sessions", ["owner_key_id", "status", "created_at"])
    op.drop_index("ix_sessions_owner_status_created_id", table_name="sessions")
    op.create_index("ix_sessions_owner_created", "sessions", ["owner_key_id", "created_at"])
    op.drop_index("ix_sessions_owner_created_id", table_name="sessions")
