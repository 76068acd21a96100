"""Alembic's environment for every Lore service: the connection, the service's version table and its
models' metadata come from `lore_common.stores.migrate` (no alembic.ini, no offline mode)."""

from __future__ import annotations

from alembic import context

config = context.config
if context.is_offline_mode():
    raise RuntimeError("Lore's migrations run against a database: use `lore-up migrate` or start a service")

context.configure(
    connection=config.attributes["connection"],
    target_metadata=config.attributes["metadata"],
    version_table=config.attributes["version_table"],
    render_as_batch=True,  # SQLite alters tables by copying them
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
