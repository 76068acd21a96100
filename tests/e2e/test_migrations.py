"""Every service's schema migrations, on SQLite and on PostgreSQL: a fresh store reaches the head
revision and then matches the models (autogenerate finds no difference); a store the releases before
migrations made is adopted with its rows; replicas migrating at once do not race; `lore-up migrate`
does it from the command line."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from lore_common.stores.migrate import Schema, current, differences, upgrade
from lore_common.stores.sql import create_engine
from lore_core.settings import DatabaseConfig
from lore_docdb.database import SCHEMA as DOCDB
from lore_gen.database import SCHEMA as GEN
from lore_mem.database import SCHEMA as MEM

pytestmark = pytest.mark.spread  # independent tests: xdist hands them out one by one

HEADS = {"docdb": "0008", "gen": "0002", "mem": "0004"}
SCHEMAS = {"docdb": DOCDB, "gen": GEN, "mem": MEM}


@pytest.fixture
async def engine(relational_url: str | None, tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(DatabaseConfig(url=relational_url), tmp_path, "store")
    try:
        yield engine
    finally:
        await engine.dispose()


@pytest.mark.parametrize("service", ["docdb", "gen", "mem"])
async def test_a_fresh_store_reaches_head_and_matches_the_models(engine: AsyncEngine, service: str) -> None:
    schema = SCHEMAS[service]
    await upgrade(engine, schema)
    assert await current(engine, schema) == HEADS[service]
    assert await differences(engine, schema) == []


async def test_the_services_share_one_database_with_a_version_table_each(engine: AsyncEngine) -> None:
    for schema in SCHEMAS.values():
        await upgrade(engine, schema)
    for service, schema in SCHEMAS.items():
        assert await current(engine, schema) == HEADS[service]
        assert await differences(engine, schema) == []  # the others' tables are not its business


@pytest.mark.parametrize("service", ["gen", "mem"])
async def test_a_store_made_before_migrations_is_adopted_with_its_rows(
    engine: AsyncEngine, service: str
) -> None:
    schema: Schema = SCHEMAS[service]
    metadata = schema.metadata()
    jobs = next(name for name in metadata.tables if name.endswith("_jobs"))
    async with engine.begin() as connection:  # what `create_all` made, one table short
        await connection.run_sync(metadata.create_all, tables=[metadata.tables[jobs]])
        await connection.execute(
            text(
                f"INSERT INTO {jobs} (id, kind, status, created_at, updated_at, record) "
                "VALUES ('j1', 'k', 'failed', '2026-01-01', '2026-01-01', '{}')"
            )
        )
    await upgrade(engine, schema)
    assert await current(engine, schema) == HEADS[service]
    assert await differences(engine, schema) == []
    async with engine.connect() as connection:
        assert (await connection.execute(text(f"SELECT id FROM {jobs}"))).scalars().all() == ["j1"]


@pytest.mark.postgres
async def test_replicas_starting_at_once_migrate_one_after_the_other(
    postgres_url: str, tmp_path: Path
) -> None:
    engines = [create_engine(DatabaseConfig(url=postgres_url), tmp_path, "store") for _ in range(3)]
    try:
        await asyncio.gather(*(upgrade(engine, DOCDB) for engine in engines))
        assert await current(engines[0], DOCDB) == HEADS["docdb"]
        assert await differences(engines[0], DOCDB) == []
    finally:
        for engine in engines:
            await engine.dispose()


def test_lore_up_migrate_brings_every_store_to_head(tmp_path: Path) -> None:
    env = {
        **os.environ,
        **{f"LORE__{name.upper()}__SERVER__DATA_DIR": str(tmp_path / name) for name in SCHEMAS},
    }
    done = subprocess.run(
        [sys.executable, "-m", "lore_gateway.launch", "migrate"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    for name, head in HEADS.items():
        assert f"lore: {name} store at revision {head}" in done.stdout
        assert (tmp_path / name / f"{name}.db").is_file()
