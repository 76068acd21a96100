"""gen's tables (its tasks and tag trees, as jobs) as the releases before migrations created them.

A database the releases before migrations created (with `create_all`) has some or all of these
tables and no version table: each table is created only where it is missing, so such a database is
adopted as it is.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

from lore_common.migrations.operations import create_job_table_v1, table_missing

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    if table_missing("lore_gen_jobs"):
        create_job_table_v1("lore_gen_jobs")


def downgrade() -> None:
    raise NotImplementedError("migrations go forward only: restore a backup to go back")
