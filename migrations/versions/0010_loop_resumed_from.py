"""A loop's resumption: a loop whose worker stopped mid-run is continued by another from the thread's
last committed checkpoint, and its history says so (``resumed_from``: the step and node it went on
from, when, and how many times).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-06 04:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("loops", sa.Column("resumed_from", postgresql.JSONB(), nullable=True))


def downgrade() -> None:
    op.drop_column("loops", "resumed_from")
