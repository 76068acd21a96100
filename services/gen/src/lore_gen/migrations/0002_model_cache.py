"""The extraction cache: structured model results by (prompt version, model, chunk, schema), shared by
replicas, so a re-run over the same text asks the model nothing new (see lore_common.providers.cache).

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

from alembic import op

from lore_common.migrations.operations import create_model_cache_table_v1

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

TABLE = "lore_gen_model_cache"


def upgrade() -> None:
    create_model_cache_table_v1(TABLE)


def downgrade() -> None:
    op.drop_table(TABLE)
