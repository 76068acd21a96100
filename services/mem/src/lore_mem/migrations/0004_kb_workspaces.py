"""The memory graph (mem kb) is partitioned by workspace: every kb table gets a `workspace` column,
part of the primary key where the key is an entity's or a counter's name (two workspaces may both know
"alice"). Rows made before this revision belong to the default workspace, so the graph of earlier
releases is what a call naming no workspace reads.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import warnings

import sqlalchemy as sa
from alembic import op
from sqlalchemy.exc import SAWarning

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

DEFAULT_WORKSPACE = "default"
# Each table and its primary key after this revision (None: the key does not change).
KEYS: dict[str, list[str] | None] = {
    "lore_kb_chunks": None,  # chunk ids are made of their insert's id: unique across workspaces
    "lore_kb_entities": ["workspace", "key"],
    "lore_kb_mentions": ["workspace", "entity_key", "chunk_id"],
    "lore_kb_relations": ["workspace", "source", "target"],
    "lore_kb_communities": ["workspace", "id"],
    "lore_kb_counters": ["workspace", "name"],
}


def _column() -> sa.Column[str]:
    return sa.Column("workspace", sa.String(length=200), nullable=False, server_default=DEFAULT_WORKSPACE)


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for table, key in KEYS.items():
        if sqlite:  # SQLite changes a primary key by copying the table (alembic's batch mode)
            with warnings.catch_warnings():
                # The copy is reflected with the old key, then given the new one, as intended.
                warnings.simplefilter("ignore", SAWarning)
                with op.batch_alter_table(table, recreate="always" if key else "auto") as batch:
                    batch.add_column(_column())
                    if key:
                        batch.create_primary_key(f"{table}_pkey", key)
            continue
        op.add_column(table, _column())
        if key:
            op.drop_constraint(f"{table}_pkey", table, type_="primary")
            op.create_primary_key(f"{table}_pkey", table, key)


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for table, key in KEYS.items():
        kept = [c for c in key or [] if c != "workspace"]
        rows = sa.table(table, sa.column("workspace"))
        op.execute(rows.delete().where(rows.c.workspace != DEFAULT_WORKSPACE))
        if sqlite:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SAWarning)
                with op.batch_alter_table(table, recreate="always" if key else "auto") as batch:
                    if key:
                        batch.create_primary_key(f"{table}_pkey", kept)
                    batch.drop_column("workspace")
            continue
        if key:
            op.drop_constraint(f"{table}_pkey", table, type_="primary")
            op.create_primary_key(f"{table}_pkey", table, kept)
        op.drop_column(table, "workspace")
