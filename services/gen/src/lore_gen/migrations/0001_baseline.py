"""gen's tables (its tasks and tag trees, as jobs) as the releases before migrations created them.

A database the releases before migrations created (with `create_all`) has some or all of these
tables and no version table: each table is created only where it is missing, so such a database is
adopted as it is.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _missing(name: str) -> bool:
    return not sa.inspect(op.get_bind()).has_table(name)


def upgrade() -> None:
    if _missing("lore_gen_jobs"):
        op.create_table(
            "lore_gen_jobs",
            sa.Column("id", sa.String(length=64), nullable=False),
            sa.Column("kind", sa.String(length=32), nullable=False),
            sa.Column("status", sa.String(length=16), nullable=False),
            sa.Column("owner", sa.String(length=200), nullable=True),
            sa.Column("heartbeat_at", sa.Float(), nullable=True),
            sa.Column("created_at", sa.String(length=40), nullable=False),
            sa.Column("updated_at", sa.String(length=40), nullable=False),
            sa.Column("record", sa.JSON(), nullable=False),
            sa.PrimaryKeyConstraint("id"),
        )
        op.create_index("ix_lore_gen_jobs_kind", "lore_gen_jobs", ["kind"])
        op.create_index("ix_lore_gen_jobs_owner", "lore_gen_jobs", ["owner"])
        op.create_index("ix_lore_gen_jobs_status", "lore_gen_jobs", ["status"])


def downgrade() -> None:
    raise NotImplementedError("migrations go forward only: restore a backup to go back")
