"""One contract for every vector store: the same assertions on the embedded Qdrant Edge store and on
pgvector. (A Qdrant server is not run here: no server binary is installed with the suite.)"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from lore_common.stores import open_vector_store
from lore_common.stores.pgvector import table_name
from lore_common.stores.vector import VectorStore, VectorStoreError
from lore_core.settings import DatabaseConfig, VectorStoreConfig


@pytest.fixture
async def store(vector_store_config: VectorStoreConfig, tmp_path: Path) -> AsyncIterator[VectorStore]:
    opened = await open_vector_store(vector_store_config, tmp_path)
    try:
        yield opened
    finally:
        await opened.close()


def ids(n: int) -> list[str]:
    return [str(uuid.UUID(int=i + 1)) for i in range(n)]


def unit(*values: float) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)


async def test_points_round_trip_with_filters_counts_and_drop(store: VectorStore) -> None:
    assert await store.dimension("kb_demo") is None
    assert await store.search("kb_demo", unit(1, 0, 0), 5) == []
    assert await store.count("kb_demo") == 0
    await store.create("kb_demo", 3, ("dataset", "file"))
    await store.create("kb_demo", 3, ("dataset", "file"))  # a second create is a no-op
    assert await store.dimension("kb_demo") == 3

    point_ids = ids(4)
    vectors = np.asarray([[1, 0, 0], [0.9, 0.1, 0], [0.1, 1, 0], [0, 0, 1]], dtype=np.float32)
    payloads = [
        {"chunk_id": "c1", "dataset": "d1", "file": "a.txt", "text": "α"},
        {"chunk_id": "c2", "dataset": "d1", "file": "b.txt", "page": 3},
        {"chunk_id": "c3", "dataset": "d2", "file": "a.txt"},
        {"chunk_id": "c4", "dataset": "d2"},  # a key left out is simply absent
    ]
    await store.upsert("kb_demo", point_ids, vectors, payloads)
    assert await store.count("kb_demo") == 4
    assert await store.count("kb_demo", {"dataset": "d1"}) == 2
    assert await store.count("kb_demo", {"dataset": "d2", "file": "a.txt"}) == 1

    hits = await store.search("kb_demo", unit(1, 0, 0), 3, ef=40)
    assert [h.payload["chunk_id"] for h in hits] == ["c1", "c2", "c3"]
    assert hits[0].id == point_ids[0] and hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert hits[1].score == pytest.approx(0.9 / np.hypot(0.9, 0.1), abs=1e-5)
    assert hits[0].payload == payloads[0]  # the whole payload comes back, types kept
    assert (await store.search("kb_demo", unit(1, 0, 0), 3))[1].payload["page"] == 3
    # A threshold keeps only close points; a filter searches inside the filter only.
    assert [
        h.payload["chunk_id"] for h in await store.search("kb_demo", unit(1, 0, 0), 4, threshold=0.5)
    ] == [
        "c1",
        "c2",
    ]
    scoped = await store.search("kb_demo", unit(1, 0, 0), 4, where={"dataset": "d2"})
    assert [h.payload["chunk_id"] for h in scoped] == ["c3", "c4"]

    assert {p.payload["chunk_id"] for p in await store.scroll("kb_demo", {"file": "a.txt"}, 10)} == {
        "c1",
        "c3",
    }
    assert len(await store.scroll("kb_demo", {"dataset": "d1"}, 1)) == 1
    got = await store.retrieve("kb_demo", [point_ids[2], str(uuid.uuid4())])
    assert [(p.id, p.payload["chunk_id"]) for p in got] == [(point_ids[2], "c3")]
    assert await store.retrieve("kb_demo", ["not-a-uuid"]) == []

    # An upsert of an existing id replaces its vector and payload, and its filter values with them.
    await store.upsert(
        "kb_demo", [point_ids[3]], unit(1, 0, 0)[None, :], [{"chunk_id": "c4", "dataset": "d1"}]
    )
    assert await store.count("kb_demo") == 4 and await store.count("kb_demo", {"dataset": "d1"}) == 3
    top = await store.search("kb_demo", unit(1, 0, 0), 2)
    assert {h.payload["chunk_id"] for h in top} == {"c1", "c4"}

    await store.delete_where("kb_demo", {"dataset": "d1"})
    assert [p.payload["chunk_id"] for p in await store.scroll("kb_demo", {"dataset": "d2"}, 10)] == ["c3"]
    assert await store.count("kb_demo") == 1
    await store.delete("kb_demo", [point_ids[2]])
    assert await store.count("kb_demo") == 0

    await store.drop("kb_demo")
    assert await store.dimension("kb_demo") is None
    assert await store.search("kb_demo", unit(1, 0, 0), 5) == []
    await store.drop("kb_demo")  # dropping what is gone is fine


async def test_pages_return_every_vector_for_copies(store: VectorStore) -> None:
    await store.create("memoryvg", 8, ("user_id",))
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(25, 8)).astype(np.float32)
    point_ids = ids(25)
    await store.upsert("memoryvg", point_ids, vectors, [{"user_id": f"u{i % 3}"} for i in range(25)])
    seen: dict[str, np.ndarray] = {}
    async for batch in store.pages("memoryvg", page=10):
        assert len(batch.ids) <= 10 and batch.vectors.shape == (len(batch.ids), 8)
        seen.update(zip(batch.ids, batch.vectors, strict=True))
    assert sorted(seen) == sorted(point_ids)
    for point_id, vector in zip(point_ids, vectors, strict=True):
        # Same direction (Qdrant stores cosine vectors normalised; pgvector stores them as given).
        got = seen[point_id] / np.linalg.norm(seen[point_id])
        np.testing.assert_allclose(got, vector / np.linalg.norm(vector), atol=1e-6)


async def test_filters_must_name_an_indexed_key(store: VectorStore) -> None:
    with pytest.raises(VectorStoreError, match="invalid indexed payload key"):
        await store.create("kb_x", 4, ("Bad Key",))
    with pytest.raises(VectorStoreError, match="invalid collection name"):
        await store.create("kb x; drop", 4, ())


@pytest.mark.postgres
async def test_pgvector_filters_are_columns_with_indexes_and_search_uses_hnsw(pgvector_url: str) -> None:
    import asyncpg

    store = await open_vector_store(
        VectorStoreConfig(provider="pgvector"), Path(), DatabaseConfig(url=pgvector_url)
    )
    try:
        await store.create("kb_big", 16, ("dataset",))
        rng = np.random.default_rng(0)
        await store.upsert(
            "kb_big", ids(3000), rng.normal(size=(3000, 16)), [{"dataset": f"d{i % 50}"} for i in range(3000)]
        )
        # A filter on an unindexed key is refused rather than scanning JSON.
        with pytest.raises(VectorStoreError, match="no indexed payload key"):
            await store.count("kb_big", {"file": "x"})
    finally:
        await store.close()
    connection = await asyncpg.connect(pgvector_url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        table = table_name("kb_big")
        indexes = {
            r["indexdef"].split(" USING ")[1]
            for r in await connection.fetch("SELECT indexdef FROM pg_indexes WHERE tablename = $1", table)
        }
        assert (
            "hnsw (embedding vector_cosine_ops) WITH (m='32', ef_construction='128')" in indexes
            and "btree (dataset)" in indexes
        )
        await connection.execute(f'ANALYZE "{table}"')
        query = "[" + ",".join(["0.5"] * 16) + "]"
        plan = "\n".join(
            r[0]
            for r in await connection.fetch(
                f"EXPLAIN SELECT id FROM \"{table}\" ORDER BY embedding <=> '{query}' LIMIT 10"
            )
        )
        assert "Index Scan using lore_vec_" in plan and "_hnsw" in plan
        plan = "\n".join(
            r[0]
            for r in await connection.fetch(f"EXPLAIN SELECT count(*) FROM \"{table}\" WHERE dataset = 'd7'")
        )
        assert "Index" in plan  # a b-tree lookup, not a scan of every row
    finally:
        await connection.close()


async def test_pgvector_without_a_postgres_url_says_what_to_set(tmp_path: Path) -> None:
    with pytest.raises(VectorStoreError, match=r"vector_store\.url or the service's database\.url"):
        await open_vector_store(VectorStoreConfig(provider="pgvector"), tmp_path, DatabaseConfig())


@pytest.mark.postgres
async def test_two_pgvector_stores_on_one_database_see_each_others_writes(pgvector_url: str) -> None:
    """What two replicas of a service share: one writes, the other reads at once; a collection dropped
    and re-created by one is found again by the other, never answered from a stale cache."""
    config = VectorStoreConfig(provider="pgvector", url=pgvector_url)
    first, second = await open_vector_store(config, Path()), await open_vector_store(config, Path())
    try:
        await first.create("memoryvg", 3, ("user_id",))
        await first.upsert("memoryvg", ids(1), unit(1, 0, 0)[None, :], [{"user_id": "ana"}])
        assert [
            p.id for p in await second.search("memoryvg", unit(1, 0, 0), 5, where={"user_id": "ana"})
        ] == ids(1)
        await second.drop("memoryvg")
        assert await first.search("memoryvg", unit(1, 0, 0), 5) == []
        assert await first.count("memoryvg", {"user_id": "ana"}) == 0
        await second.create("memoryvg", 3, ("user_id", "run_id"))
        await second.upsert(
            "memoryvg", ids(2), np.eye(3, dtype=np.float32)[:2], [{"user_id": "bo", "run_id": "r"}] * 2
        )
        assert await first.count("memoryvg", {"run_id": "r"}) == 2  # the new key is known to the other
    finally:
        await first.close()
        await second.close()


CRASHING_WRITER = """
import asyncio, sys, uuid
from pathlib import Path
import numpy as np
from lore_common.stores.edge import open_edge

async def main() -> None:
    store = await open_edge(Path(sys.argv[1]))
    await store.create("kb_crash", 8, ("dataset",))
    rng = np.random.default_rng(0)
    for batch in range(100_000):
        ids = [str(uuid.UUID(int=batch * 50 + i + 1)) for i in range(50)]
        await store.upsert("kb_crash", ids, rng.normal(size=(50, 8)), [{"dataset": f"b{batch}"}] * 50)
        print(batch, flush=True)  # acknowledged

asyncio.run(main())
"""


def test_embedded_store_killed_during_upserts_keeps_every_acknowledged_point(tmp_path: Path) -> None:
    """SIGKILL to the writer and its engine process (one process group) while upserts stream in."""
    writer = subprocess.Popen(
        [sys.executable, "-c", CRASHING_WRITER, str(tmp_path / "qdrant")],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert writer.stdout is not None
    acknowledged = -1
    try:
        while acknowledged < 30:
            line = writer.stdout.readline()
            assert line, "the writer stopped before it was killed"
            acknowledged = int(line)
    finally:
        os.killpg(writer.pid, signal.SIGKILL)
        writer.wait()

    async def check() -> None:
        store = await open_vector_store(VectorStoreConfig(), tmp_path)
        try:
            assert await store.count("kb_crash") >= (acknowledged + 1) * 50
            assert await store.count("kb_crash", {"dataset": f"b{acknowledged}"}) == 50
            last = [str(uuid.UUID(int=acknowledged * 50 + i + 1)) for i in range(50)]
            assert len(await store.retrieve("kb_crash", last)) == 50
            hits = await store.search("kb_crash", np.ones(8, np.float32), 5, where={"dataset": "b3"})
            assert len(hits) == 5 and all(h.payload == {"dataset": "b3"} for h in hits)
        finally:
            await store.close()

    asyncio.run(check())


async def test_qdrant_local_mode_collections_move_into_the_embedded_store_at_start(tmp_path: Path) -> None:
    # Imported here: qdrant_client costs each xdist worker about a second to collect this module.
    from lore_common.stores.qdrant import QdrantStore

    old = QdrantStore.local_mode(tmp_path / "qdrant")
    await old.create("kb_old", 4, ("dataset",))
    vectors = np.random.default_rng(2).normal(size=(30, 4)).astype(np.float32)
    payloads = [{"chunk_id": f"c{i}", "dataset": f"d{i % 3}", "text": "x" * i} for i in range(30)]
    await old.upsert("kb_old", ids(30), vectors, payloads)
    await old.close()

    store = await open_vector_store(VectorStoreConfig(), tmp_path)
    try:
        assert await store.dimension("kb_old") == 4 and await store.count("kb_old") == 30
        assert await store.count("kb_old", {"dataset": "d1"}) == 10
        hits = await store.search("kb_old", vectors[7], 1)
        assert hits[0].id == ids(30)[7] and hits[0].payload == payloads[7]
    finally:
        await store.close()
    # The old files are kept aside, so the next start does not migrate again.
    assert not (tmp_path / "qdrant" / "meta.json").exists()
    assert (tmp_path / "qdrant" / "local-mode-migrated" / "collection" / "kb_old").is_dir()
    store = await open_vector_store(VectorStoreConfig(), tmp_path)
    try:
        assert await store.count("kb_old") == 30
    finally:
        await store.close()
