"""Incremental parsing: `kb_files` records each file as a KB last parsed it (content hash, the parse
version that made its chunks, the task holding them), and each chunk keeps what graph extraction drew
from it (`chunks.graph`), so a changed file's entities are rebuilt from what the other files say.

Existing KBs have no file rows: their next parse reads every file once (as a first parse would), then
records them. Their chunks get NULL for `graph`.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "kb_files",
        sa.Column("kb_name", sa.String(length=64), nullable=False),
        sa.Column("dataset", sa.String(length=64), nullable=False),
        sa.Column("file", sa.String(length=255), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("version", sa.String(length=400), nullable=False),
        sa.Column("task_id", sa.String(length=36), nullable=False),
        sa.Column("chunks", sa.Integer(), nullable=False),
        sa.Column("skipped", sa.String(), nullable=True),
        sa.PrimaryKeyConstraint("kb_name", "dataset", "file"),
    )
    with op.batch_alter_table("chunks") as batch:
        batch.add_column(sa.Column("graph", sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("chunks") as batch:
        batch.drop_column("graph")
    op.drop_table("kb_files")
