"""Parse tasks become jobs of the shared job store; raw files and chunked uploads can live in object
storage, registered here.

The rows of `tasks` move into `lore_docdb_jobs` (a task left running is found there with no heartbeat,
so recovery closes it), then `tasks` goes.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import op

from lore_common.migrations.operations import create_job_table_v1

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

JOBS = sa.table(
    "lore_docdb_jobs",
    sa.column("id", sa.String),
    sa.column("kind", sa.String),
    sa.column("status", sa.String),
    sa.column("owner", sa.String),
    sa.column("heartbeat_at", sa.Float),
    sa.column("created_at", sa.String),
    sa.column("updated_at", sa.String),
    sa.column("record", sa.JSON),
)
TASK_FIELDS = (
    "task_id",
    "status",
    "task_type",
    "kb_name",
    "dataset",
    "mode",
    "schema_name",
    "stage",
    "error",
    "schema_entities",
    "skipped_files",
)
TASKS = sa.table(
    "tasks",
    *(sa.column(name) for name in TASK_FIELDS),
    sa.column("created_at", sa.DateTime(timezone=True)),
    sa.column("updated_at", sa.DateTime(timezone=True)),
)


def _stamp(value: Any) -> str:
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return str(value.isoformat(timespec="microseconds"))
    return str(value).replace(" ", "T")


def upgrade() -> None:
    create_job_table_v1("lore_docdb_jobs")
    op.create_table(
        "raw_datasets",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.create_table(
        "raw_files",
        sa.Column("dataset", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("ready", sa.Boolean(), nullable=False),
        sa.Column("modified_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("dataset", "name"),
    )
    op.create_table(
        "upload_sessions",
        sa.Column("upload_id", sa.String(length=32), nullable=False),
        sa.Column("dataset", sa.String(length=64), nullable=False),
        sa.Column("filename", sa.String(length=255), nullable=False),
        sa.Column("total_chunks", sa.Integer(), nullable=False),
        sa.Column("total_size", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("touched_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("upload_id"),
    )
    op.create_index("ix_upload_sessions_touched_at", "upload_sessions", ["touched_at"])
    op.create_table(
        "upload_chunks",
        sa.Column("upload_id", sa.String(length=32), nullable=False),
        sa.Column("chunk_index", sa.Integer(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("upload_id", "chunk_index"),
    )

    bind = op.get_bind()
    jobs = []
    for row in bind.execute(sa.select(TASKS)).mappings():
        record = {name: row[name] for name in TASK_FIELDS if row[name] is not None}
        record["created_at"], record["updated_at"] = _stamp(row["created_at"]), _stamp(row["updated_at"])
        jobs.append(
            {
                "id": row["task_id"],
                "kind": row["task_type"],
                "status": row["status"],
                "owner": None,
                "heartbeat_at": None,
                "created_at": record["created_at"],
                "updated_at": record["updated_at"],
                "record": record,
            }
        )
    if jobs:
        op.bulk_insert(JOBS, jobs)
    op.drop_table("tasks")


def downgrade() -> None:
    raise NotImplementedError("docdb's migrations go forward only: restore a backup to go back")
