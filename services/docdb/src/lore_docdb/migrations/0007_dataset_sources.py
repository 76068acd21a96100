"""Datasets that sync from a source: the `dataset_sources` table (one row per dataset with a source, its
schedule) and the job table of sync tasks.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from lore_common.migrations.operations import create_job_table_v1

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_job_table_v1("lore_docdb_sync_jobs")
    op.create_table(
        "dataset_sources",
        sa.Column("dataset", sa.String(length=64), nullable=False),
        sa.Column("spec", sa.String(), nullable=False),
        sa.Column("interval_s", sa.Integer(), nullable=True),
        sa.Column("next_sync_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_task_id", sa.String(length=36), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("dataset"),
    )
    op.create_index("ix_dataset_sources_next_sync_at", "dataset_sources", ["next_sync_at"])


def downgrade() -> None:
    op.drop_index("ix_dataset_sources_next_sync_at", table_name="dataset_sources")
    op.drop_table("dataset_sources")
    op.drop_table("lore_docdb_sync_jobs")
