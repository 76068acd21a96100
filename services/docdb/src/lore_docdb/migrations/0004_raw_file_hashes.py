"""Each raw file kept in object storage records the sha256 of its content (its identity with its path).

Existing files get NULL: their hash is unknown until they are written again, which a sync or
`lore ingest` then does once.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("raw_files") as batch:
        batch.add_column(sa.Column("sha256", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("raw_files") as batch:
        batch.drop_column("sha256")
