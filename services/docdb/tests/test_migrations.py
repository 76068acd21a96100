"""docdb's schema migrations, on SQLite and on PostgreSQL: a database at the first revision (the
schema of the releases before migrations) upgrades with its data, and the models and the migrations
agree."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from lore_common.stores.migrate import current, differences, upgrade
from lore_common.stores.sql import create_engine
from lore_common.testing.flows import KB, TASKS
from lore_core.settings import DatabaseConfig
from lore_docdb.database import SCHEMA

TASK_ROW = (
    "INSERT INTO tasks (task_id, status, task_type, kb_name, dataset, mode, stage, error, created_at, "
    "updated_at) VALUES (:id, :status, 'file_processing', 'kb', 'papers', 0, 'embed', :error, "
    "'2026-01-02 03:04:05+00:00', '2026-01-02 03:04:06+00:00')"
)


@pytest.fixture
def db_env(relational_url: str | None) -> dict[str, str]:
    return {"LORE__DOCDB__DATABASE__URL": relational_url} if relational_url else {}


@pytest.fixture
async def engine(db_env: dict[str, str], tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    url = db_env.get("LORE__DOCDB__DATABASE__URL")
    engine = create_engine(DatabaseConfig(url=url), tmp_path / "docdb", "docdb")
    try:
        yield engine
    finally:
        await engine.dispose()


async def test_a_fresh_database_at_head_matches_the_models(engine: AsyncEngine) -> None:
    await upgrade(engine, SCHEMA)
    assert await current(engine, SCHEMA) == "0008"
    assert await differences(engine, SCHEMA) == []
    await upgrade(engine, SCHEMA)  # a second start finds nothing to do


async def test_a_database_of_the_first_revision_upgrades_with_its_tasks(
    engine: AsyncEngine, docdb_factory: Any
) -> None:
    await upgrade(engine, SCHEMA, "0001")
    async with engine.begin() as connection:
        for n, status, error in (
            (1, "completed", None),
            (2, "failed", "no parsable file"),
            (3, "running", None),
        ):
            await connection.execute(
                text(TASK_ROW),
                {"id": f"11111111-0000-0000-0000-00000000000{n}", "status": status, "error": error},
            )
        await connection.execute(text("INSERT INTO kb_versions (kb_name, version) VALUES ('kb', 7)"))
        await connection.execute(
            text(
                "INSERT INTO knowledge_bases (name, status, mode, purge_db, created_at) "
                "VALUES ('kb', 'ready', 1, true, '2026-01-02 03:04:05+00:00')"
            )
        )
    await engine.dispose()
    # The start of the upgraded release migrates (the running task fails rather than resumes).
    async with docdb_factory(LORE__DOCDB__RESUME_INTERRUPTED="false") as docdb:
        for _ in range(100):  # on PostgreSQL the leader closes the running one at its next heartbeat
            tasks = {t["task_id"][-1]: t for t in (await docdb.get(TASKS)).json()}
            if tasks["3"]["status"] != "running":
                break
            await asyncio.sleep(0.1)
        assert {k: t["status"] for k, t in tasks.items()} == {"1": "completed", "2": "failed", "3": "failed"}
        assert tasks["2"]["error"] == "no parsable file"
        assert "interrupted" in tasks["3"]["error"]  # nothing stays running forever
        assert tasks["1"]["metadata"] == {
            "kb_name": "kb",
            "dataset": "papers",
            "mode": 0,
            "schema_name": None,
        }
        assert tasks["1"]["created_at"].startswith("2026-01-02T03:04:05")
        # A KB from before KBs recorded their embedder is read as built with the configured one.
        assert (await docdb.get(f"{KB}/kb")).json()["embedding_model"] == "hashing"
        # The other tables kept their rows (the recovery of task 3 bumped the version once more).
        assert await docdb.app.state.kb_store.kb_version("kb") == 8
    assert await current(engine, SCHEMA) == "0008"
    assert await differences(engine, SCHEMA) == []
