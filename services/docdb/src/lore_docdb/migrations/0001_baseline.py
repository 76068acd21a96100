"""docdb's tables as the releases before migrations created them.

A database those releases created (with `create_all`) has some or all of these tables and no version
table: each table is created only where it is missing, so such a database is adopted as it is.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from lore_common.migrations.operations import table_missing

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    if table_missing("tasks"):
        op.create_table(
            "tasks",
            sa.Column("task_id", sa.String(length=36), nullable=False),
            sa.Column("status", sa.String(length=16), nullable=False),
            sa.Column("task_type", sa.String(length=32), nullable=False),
            sa.Column("kb_name", sa.String(length=64), nullable=False),
            sa.Column("dataset", sa.String(length=64), nullable=False),
            sa.Column("mode", sa.Integer(), nullable=False),
            sa.Column("schema_name", sa.String(length=255), nullable=True),
            sa.Column("stage", sa.String(length=32), nullable=True),
            sa.Column("error", sa.String(), nullable=True),
            sa.Column("schema_entities", sa.String(), nullable=True),
            sa.Column("skipped_files", sa.String(), nullable=True),
            sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True),
            sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
            sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
            sa.PrimaryKeyConstraint("task_id"),
        )
        for column in ("status", "kb_name", "dataset"):
            op.create_index(f"ix_tasks_{column}", "tasks", [column])
    if table_missing("chunks"):
        op.create_table(
            "chunks",
            sa.Column("chunk_id", sa.String(length=80), nullable=False),
            sa.Column("kb_name", sa.String(length=64), nullable=False),
            sa.Column("dataset", sa.String(length=64), nullable=False),
            sa.Column("task_id", sa.String(length=36), nullable=False),
            sa.Column("file", sa.String(length=255), nullable=False),
            sa.Column("position", sa.Integer(), nullable=False),
            sa.Column("text", sa.String(), nullable=False),
            sa.PrimaryKeyConstraint("chunk_id"),
        )
        for column in ("dataset", "kb_name", "task_id"):
            op.create_index(f"ix_chunks_{column}", "chunks", [column])
    if table_missing("entity_schemas"):
        op.create_table(
            "entity_schemas",
            sa.Column("name", sa.String(length=255), nullable=False),
            sa.Column("entities", sa.String(), nullable=False),
            sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
            sa.PrimaryKeyConstraint("name"),
        )
    if table_missing("kb_datasets"):
        op.create_table(
            "kb_datasets",
            sa.Column("kb_name", sa.String(length=64), nullable=False),
            sa.Column("dataset", sa.String(length=64), nullable=False),
            sa.Column("parsed", sa.Boolean(), nullable=False),
            sa.Column("process_mode", sa.Integer(), nullable=False),
            sa.Column("parsed_at", sa.DateTime(timezone=True), nullable=True),
            sa.Column("schema_name", sa.String(length=255), nullable=True),
            sa.Column("task_id", sa.String(length=36), nullable=True),
            sa.PrimaryKeyConstraint("kb_name", "dataset"),
        )
    if table_missing("kb_versions"):
        op.create_table(
            "kb_versions",
            sa.Column("kb_name", sa.String(length=64), nullable=False),
            sa.Column("version", sa.Integer(), nullable=False),
            sa.PrimaryKeyConstraint("kb_name"),
        )
    if table_missing("knowledge_bases"):
        op.create_table(
            "knowledge_bases",
            sa.Column("name", sa.String(length=64), nullable=False),
            sa.Column("status", sa.String(length=16), nullable=False),
            sa.Column("mode", sa.Integer(), nullable=True),
            sa.Column("purge_db", sa.Boolean(), nullable=False),
            sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
            sa.PrimaryKeyConstraint("name"),
        )


def downgrade() -> None:
    raise NotImplementedError("docdb's migrations go forward only: restore a backup to go back")
