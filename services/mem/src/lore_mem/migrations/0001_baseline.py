"""mem's tables (vg history, the kb graph and its insert jobs) as the releases before migrations created them.

A database the releases before migrations created (with `create_all`) has some or all of these
tables and no version table: each table is created only where it is missing, so such a database is
adopted as it is.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from lore_common.migrations.operations import create_job_table_v1, table_missing

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    if table_missing("lore_kb_chunks"):
        op.create_table(
            "lore_kb_chunks",
            sa.Column("id", sa.String(length=100), nullable=False),
            sa.Column("job_id", sa.String(length=64), nullable=False),
            sa.Column("text", sa.Text(), nullable=False),
            sa.PrimaryKeyConstraint("id"),
        )
        op.create_index("ix_lore_kb_chunks_job_id", "lore_kb_chunks", ["job_id"])
    if table_missing("lore_kb_communities"):
        op.create_table(
            "lore_kb_communities",
            sa.Column("id", sa.String(length=32), nullable=False),
            sa.Column("position", sa.Integer(), nullable=False),
            sa.Column("members", sa.JSON(), nullable=False),
            sa.Column("title", sa.Text(), nullable=False),
            sa.Column("summary", sa.Text(), nullable=False),
            sa.PrimaryKeyConstraint("id"),
        )
    if table_missing("lore_kb_counters"):
        op.create_table(
            "lore_kb_counters",
            sa.Column("name", sa.String(length=40), nullable=False),
            sa.Column("value", sa.Integer(), nullable=False),
            sa.PrimaryKeyConstraint("name"),
        )
    if table_missing("lore_kb_entities"):
        op.create_table(
            "lore_kb_entities",
            sa.Column("key", sa.String(length=200), nullable=False),
            sa.Column("name", sa.String(length=200), nullable=False),
            sa.Column("type", sa.String(length=100), nullable=False),
            sa.Column("name_form", sa.String(length=200), nullable=False),
            sa.Column("descriptions", sa.JSON(), nullable=False),
            sa.Column("job_id", sa.String(length=64), nullable=False),
            sa.PrimaryKeyConstraint("key"),
        )
        op.create_index("ix_lore_kb_entities_name_form", "lore_kb_entities", ["name_form"])
    if table_missing("lore_kb_mentions"):
        op.create_table(
            "lore_kb_mentions",
            sa.Column("entity_key", sa.String(length=200), nullable=False),
            sa.Column("chunk_id", sa.String(length=100), nullable=False),
            sa.PrimaryKeyConstraint("entity_key", "chunk_id"),
        )
    if table_missing("lore_kb_relations"):
        op.create_table(
            "lore_kb_relations",
            sa.Column("source", sa.String(length=200), nullable=False),
            sa.Column("target", sa.String(length=200), nullable=False),
            sa.Column("descriptions", sa.JSON(), nullable=False),
            sa.Column("weight", sa.Float(), nullable=False),
            sa.PrimaryKeyConstraint("source", "target"),
        )
        op.create_index("ix_lore_kb_relations_target", "lore_kb_relations", ["target"])
    if table_missing("lore_mem_kb_jobs"):
        create_job_table_v1("lore_mem_kb_jobs")
    if table_missing("memory_history"):
        op.create_table(
            "memory_history",
            sa.Column("id", sa.String(length=36), nullable=False),
            sa.Column("memory_id", sa.String(length=36), nullable=False),
            sa.Column("event", sa.String(length=8), nullable=False),
            sa.Column("old_memory", sa.String(), nullable=True),
            sa.Column("new_memory", sa.String(), nullable=True),
            sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
            sa.Column("is_deleted", sa.Boolean(), nullable=False),
            sa.PrimaryKeyConstraint("id"),
        )
        op.create_index("ix_memory_history_memory_id", "memory_history", ["memory_id"])


def downgrade() -> None:
    raise NotImplementedError("migrations go forward only: restore a backup to go back")
