"""The loop a keyed request answered, as it answered it: a retry whose first answer could not be
stored (the database went away right after it was sent) replays that answer, not the loop as it
is later (a paused loop judged meanwhile would answer another status and rounds).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-06 08:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("idempotency_keys", sa.Column("loop_outcome", postgresql.JSONB(), nullable=True))


def downgrade() -> None:
    op.drop_column("idempotency_keys", "loop_outcome")
