"""A loop its client ended (a run cancelled, a paused loop abandoned) says so in a column of its
own, not only by how its error message starts: ``loops.cancelled``, filled for the loops recorded
before from their error (``cancelled:`` ...).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-06 08:05:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("loops", sa.Column("cancelled", sa.Boolean(), server_default=sa.false(), nullable=False))
    op.execute("UPDATE loops SET cancelled = true WHERE status = 'failed' AND error LIKE 'cancelled:%'")


def downgrade() -> None:
    op.drop_column("loops", "cancelled")
