from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import numpy as np
import psutil
import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from lore_common.stores import open_stores
from lore_common.stores.graph import GraphStoreError
from lore_common.stores.objects import open_object_store
from lore_common.stores.sql import create_engine, transaction_lock
from lore_core.settings import DatabaseConfig, GraphStoreConfig, ObjectStorageConfig, VectorStoreConfig


async def exercise_engine(url: str | None, data_dir: Path) -> None:
    engine = create_engine(DatabaseConfig(url=url), data_dir, "unit")
    try:
        async with engine.begin() as conn:
            await conn.execute(text("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)"))
            await conn.execute(text("INSERT INTO notes (id, body) VALUES (1, 'kept')"))
        with pytest.raises(IntegrityError):
            async with engine.begin() as conn:
                await conn.execute(text("INSERT INTO notes (id, body) VALUES (2, 'rolled back')"))
                await conn.execute(text("INSERT INTO notes (id, body) VALUES (1, 'duplicate key')"))
        async with engine.connect() as conn:
            rows = (await conn.execute(text("SELECT id, body FROM notes ORDER BY id"))).all()
        assert [tuple(r) for r in rows] == [(1, "kept")]  # the failed transaction left nothing
    finally:
        await engine.dispose()


async def test_sqlite_engine_uses_wal_and_transactions(tmp_path: Path) -> None:
    await exercise_engine(None, tmp_path)
    assert (tmp_path / "unit.db").exists()
    engine = create_engine(DatabaseConfig(), tmp_path, "unit")
    async with engine.connect() as conn:
        assert (await conn.execute(text("PRAGMA journal_mode"))).scalar() == "wal"
        assert (await conn.execute(text("PRAGMA busy_timeout"))).scalar() == 30000
    await engine.dispose()


async def test_a_locked_sqlite_transaction_reads_and_writes_as_one(tmp_path: Path) -> None:
    """A check then a write under `transaction_lock`: another writer that commits meanwhile waits for
    it, so no update is lost (Python's SQLite driver used to read outside the transaction until its
    first write: mem kb saved communities a forget had just voided)."""
    engine = create_engine(DatabaseConfig(), tmp_path, "unit")
    try:
        async with engine.begin() as conn:
            await conn.execute(text("CREATE TABLE counter (id INTEGER PRIMARY KEY, value INTEGER)"))
            await conn.execute(text("INSERT INTO counter VALUES (1, 0)"))
        read = asyncio.Event()

        async def locked_increment() -> None:
            async with engine.begin() as conn:
                await transaction_lock(conn, "counter")
                value = (await conn.execute(text("SELECT value FROM counter"))).scalar_one()
                read.set()
                await asyncio.sleep(0.3)  # the other writer tries to commit here
                await conn.execute(text("UPDATE counter SET value = :v"), {"v": value + 1})

        async def other_increment() -> None:
            await read.wait()
            async with engine.begin() as conn:
                await conn.execute(text("UPDATE counter SET value = value + 1"))

        await asyncio.gather(locked_increment(), other_increment())
        async with engine.connect() as conn:
            assert (await conn.execute(text("SELECT value FROM counter"))).scalar_one() == 2
    finally:
        await engine.dispose()


@pytest.mark.postgres
async def test_postgres_engine_through_asyncpg(postgres_url: str, tmp_path: Path) -> None:
    # The plain URL people paste is accepted and turned into an asyncpg one.
    await exercise_engine(postgres_url.replace("postgresql+asyncpg://", "postgresql://"), tmp_path)


async def test_vectors_persist_across_a_restart(
    vector_store_config: VectorStoreConfig, tmp_path: Path
) -> None:
    point = "00000000-0000-0000-0000-000000000001"
    async with open_stores(tmp_path, name="t", vector_store=vector_store_config) as stores:
        assert stores.vector is not None
        assert stores.vector.embedded == (vector_store_config.provider == "qdrant")
        await stores.vector.create("kb_demo", 4, ("dataset",))
        await stores.vector.upsert(
            "kb_demo", [point], np.asarray([[1, 0, 0, 0]], np.float32), [{"dataset": "d"}]
        )
        assert {name for name, item in (await _checks(stores)).items() if item["status"] == "up"} == {
            "vector"
        }
    async with open_stores(tmp_path, name="t", vector_store=vector_store_config) as stores:
        assert stores.vector is not None
        [hit] = await stores.vector.search("kb_demo", np.asarray([1, 0, 0, 0], np.float32), 1)
        assert hit.id == point and hit.payload == {"dataset": "d"}


async def test_embedded_falkordb_persists_across_restart_and_leaves_no_process(tmp_path: Path) -> None:
    async with open_stores(tmp_path, name="t", graph_store=GraphStoreConfig()) as stores:
        assert stores.graph is not None and stores.graph.embedded is not None
        server = stores.graph.embedded.process
        assert server is not None
        pid = server.pid
        graph = stores.graph.graph("kb_demo")
        await graph.query("CREATE INDEX FOR (n:Entity) ON (n.id)")
        await graph.query("MERGE (a:Entity {id: 'curie'})-[:KNOWS {w: 2}]->(b:Entity {id: 'pierre'})")
        assert {name for name, item in (await _checks(stores)).items() if item["status"] == "up"} == {"graph"}
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    async with open_stores(tmp_path, name="t", graph_store=GraphStoreConfig()) as stores:
        assert stores.graph is not None
        result = await stores.graph.graph("kb_demo").query(
            "MATCH (a:Entity)-[r:KNOWS]->(b:Entity) RETURN a.id, r.w, b.id"
        )
        assert result.result_set == [["curie", 2, "pierre"]]


async def _checks(stores: object) -> dict[str, dict[str, object]]:
    from lore_core.web import run_health_checks

    return await run_health_checks(stores.health_checks())  # type: ignore[attr-defined]


async def test_s3_against_moto_server(moto_s3: str, tmp_path: Path) -> None:
    config = ObjectStorageConfig(
        bucket="lore-test", endpoint_url=moto_s3, access_key="test", secret_key="test", presign_expiry=60
    )
    source = tmp_path / "report.pdf"
    source.write_bytes(b"%PDF-1.4 fake bytes" * 100)
    async with open_object_store(config) as store:
        assert store is not None
        await store.put_file("ds1/report.pdf", source)
        await store.put_file("ds1/other.txt", source)
        await store.put_file("ds2/keep.txt", source)
        assert await store.get_bytes("ds1/report.pdf") == source.read_bytes()
        url = await store.presigned_get("ds1/report.pdf")
        async with httpx.AsyncClient() as client:
            fetched = await client.get(url)
        assert fetched.status_code == 200 and fetched.content == source.read_bytes()
        assert await store.delete_prefix("ds1/") == 2
        listing = await store.client.list_objects_v2(Bucket="lore-test")
        assert [item["Key"] for item in listing["Contents"]] == ["ds2/keep.txt"]


async def test_no_object_store_when_unconfigured() -> None:
    async with open_object_store(ObjectStorageConfig()) as store:
        assert store is None


async def test_a_failed_start_closes_what_was_opened(tmp_path: Path) -> None:
    with pytest.raises(GraphStoreError, match=r"graph_store\.url"):
        async with open_stores(
            tmp_path, name="t", database=DatabaseConfig(), graph_store=GraphStoreConfig(url="http://nope")
        ):
            pass
    await asyncio.sleep(0)
