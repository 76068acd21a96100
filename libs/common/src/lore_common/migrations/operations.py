"""Operations that several services' migrations share. Each is frozen under a versioned name: a later
change of the job table gets a new function and a new revision, never an edit here, so an old revision
always does what it did."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


def table_missing(name: str) -> bool:
    """Whether the table is absent (baselines create only those, to adopt `create_all` databases)."""
    return not sa.inspect(op.get_bind()).has_table(name)


def create_job_table_v1(name: str) -> None:
    """The shared job store's table (`lore_common.jobs.job_table`) as its first version defines it."""
    op.create_table(
        name,
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
    for column in ("kind", "owner", "status"):
        op.create_index(f"ix_{name}_{column}", name, [column])


def create_model_cache_table_v1(name: str) -> None:
    """The extraction cache's table (`lore_common.providers.cache.model_cache_table`), first version."""
    op.create_table(
        name,
        sa.Column("key", sa.String(length=512), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("created_at", sa.String(length=40), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )
