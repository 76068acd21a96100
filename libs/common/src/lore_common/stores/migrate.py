"""Schema migrations of each service's relational store (Alembic), run at start-up or by
`lore-up migrate`.

Each service keeps its revisions in its own `migrations/` folder and its own version table
(`alembic_version_<service>`), so services may share one database. On PostgreSQL the upgrade holds an
advisory lock in its transaction: replicas starting at once migrate one after the other, and the later
ones find nothing to do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from sqlalchemy import Connection, MetaData, Table, text
from sqlalchemy.ext.asyncio import AsyncEngine

from lore_common.stores.sql import SCHEMA_LOCK, create_engine
from lore_core.settings import DatabaseConfig

ENVIRONMENT = Path(__file__).resolve().parent.parent / "migrations"


@dataclass(frozen=True)
class Schema:
    """What one service keeps in its relational store."""

    service: str
    versions: Path  # the service's revision scripts
    tables: Sequence[Table]  # what its models declare, for autogenerate

    @property
    def version_table(self) -> str:
        return f"alembic_version_{self.service}"

    def metadata(self) -> MetaData:
        metadata = MetaData()
        for table in self.tables:
            table.to_metadata(metadata)
        return metadata


def alembic_config(schema: Schema) -> Config:
    config = Config()
    config.set_main_option("script_location", str(ENVIRONMENT))
    config.set_main_option("version_locations", str(schema.versions))
    config.set_main_option("path_separator", "os")
    config.attributes["version_table"] = schema.version_table
    config.attributes["metadata"] = schema.metadata()
    return config


async def upgrade(engine: AsyncEngine, schema: Schema, revision: str = "head") -> None:
    """Bring the store to `revision` in one transaction (one replica at a time on PostgreSQL)."""
    config = alembic_config(schema)
    async with engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            await connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": SCHEMA_LOCK})
        await connection.run_sync(_run, config, revision)


def _run(connection: Connection, config: Config, revision: str) -> None:
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


async def current(engine: AsyncEngine, schema: Schema) -> str | None:
    async with engine.connect() as connection:
        return await connection.run_sync(
            lambda sync: MigrationContext.configure(
                sync, opts={"version_table": schema.version_table}
            ).get_current_revision()
        )


async def differences(engine: AsyncEngine, schema: Schema) -> list[Any]:
    """What autogenerate would change to make the store match the models (empty when they agree)."""
    metadata = schema.metadata()
    async with engine.connect() as connection:
        return await connection.run_sync(
            lambda sync: compare_metadata(
                MigrationContext.configure(
                    sync,
                    opts={
                        "version_table": schema.version_table,
                        "compare_type": True,
                        "include_name": lambda name, kind, _: kind != "table" or name in metadata.tables,
                    },
                ),
                metadata,
            )
        )


async def migrate_store(config: DatabaseConfig, data_dir: Path, schema: Schema) -> str | None:
    """Upgrade one service's store (as its start-up does) and return the revision it is at."""
    engine = create_engine(config, data_dir, schema.service)
    try:
        await upgrade(engine, schema)
        return await current(engine, schema)
    finally:
        await engine.dispose()


def migrate_command(config: DatabaseConfig, data_dir: Path, schema: Schema) -> None:
    """`python -m lore_<service> migrate`: what `lore-up migrate` (or a deploy job) runs."""
    revision = asyncio.run(migrate_store(config, data_dir, schema))
    print(f"lore: {schema.service} store at revision {revision}", flush=True)
