"""docdb's vector index: the same behaviour on the embedded Qdrant Edge store and on pgvector; the
embedded engine runs in a child process that can die and come back."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from lore_common.stores import open_vector_store
from lore_common.stores.edge import EdgeStore
from lore_common.stores.vector import VectorStoreError
from lore_core.settings import VectorStoreConfig
from lore_docdb.index.vectors import DimensionMismatch, VectorIndex


async def test_vector_index_survives_its_engine_process_dying(tmp_path: Path) -> None:
    store = await open_vector_store(VectorStoreConfig(), tmp_path)
    assert isinstance(store, EdgeStore)
    index = VectorIndex(store)
    await index.ensure("kb", 4)
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(40, 4)).astype(np.float32)
    payloads = [{"chunk_id": f"c{i}", "dataset": "d1" if i < 20 else "d2"} for i in range(40)]
    await index.upsert("kb", vectors, payloads)
    query = vectors[7]
    first = await index.search("kb", query, 5, 0.0, 10)
    assert first[0].payload["chunk_id"] == "c7" and len(first) == 5

    worker = store._worker
    assert worker is not None and worker.process is not None
    worker.process.kill()
    await worker.process.wait()
    # The next call starts a new engine, which reopens the KB from disk with every write in it.
    again = await index.search("kb", query, 5, 0.0, 10)
    assert [h.payload["chunk_id"] for h in again] == [h.payload["chunk_id"] for h in first]
    assert store._worker is not worker

    await index.delete_where("kb", "dataset", "d1")
    assert all(h.payload["dataset"] == "d2" for h in await index.search("kb", query, 40, 0.0, 80))
    await index.upsert("kb", np.asarray([[9, 9, 9, 9]], np.float32), [{"chunk_id": "new"}])
    assert (await index.search("kb", np.ones(4, np.float32), 1, 0.0, 2))[0].payload["chunk_id"] == "new"
    await index.drop("kb")
    assert await index.search("kb", query, 5, 0.0, 10) == []
    await index.close()
    await store.close()


async def test_a_search_in_flight_when_the_engine_dies_fails_clearly(tmp_path: Path) -> None:
    store = await open_vector_store(VectorStoreConfig(), tmp_path)
    assert isinstance(store, EdgeStore)
    index = VectorIndex(store)
    await index.ensure("kb", 64)
    vectors = np.random.default_rng(1).normal(size=(2000, 64)).astype(np.float32)
    await index.upsert("kb", vectors, [{"chunk_id": f"c{i}"} for i in range(2000)])
    await index.search("kb", vectors[0], 5, 0.0, 10)
    worker = store._worker
    assert worker is not None and worker.process is not None
    searches = [asyncio.ensure_future(index.search("kb", v, 100, 0.0, 200)) for v in vectors[:200]]
    await asyncio.sleep(0)
    worker.process.kill()
    results = await asyncio.gather(*searches, return_exceptions=True)
    errors = [r for r in results if isinstance(r, Exception)]
    assert errors and all(isinstance(e, VectorStoreError) for e in errors)
    assert "exited" in str(errors[0])
    assert len(await index.search("kb", vectors[3], 5, 0.0, 10)) == 5
    await index.close()
    await store.close()


async def test_kb_vectors_behave_the_same_on_every_backend(
    vector_store_config: VectorStoreConfig, tmp_path: Path
) -> None:
    store = await open_vector_store(vector_store_config, tmp_path)
    index = VectorIndex(store)
    try:
        assert await index.search("kb", np.ones(8, np.float32), 5, 0.0, 50) == []
        await index.ensure("kb", 8)
        await index.ensure("kb", 8)
        with pytest.raises(DimensionMismatch, match="holds 8-d vectors but the embedder makes 16-d"):
            await index.ensure("kb", 16)
        rng = np.random.default_rng(11)
        vectors = rng.normal(size=(60, 8)).astype(np.float32)
        payloads = [
            {"chunk_id": f"t{i // 20}:{i}", "dataset": f"d{i % 2}", "task_id": f"t{i // 20}", "file": "f.txt"}
            for i in range(60)
        ]
        await index.upsert("kb", vectors, payloads)
        assert await index.count("kb") == 60 and await index.count("kb", "dataset", "d1") == 30
        hits = await index.search("kb", vectors[42], 5, 0.0, 50)
        assert hits[0].payload == payloads[42] and hits[0].score == pytest.approx(1.0, abs=1e-5)
        assert all(h.score >= 0.6 for h in await index.search("kb", vectors[42], 60, 0.6, 600))
        # Re-parsing a chunk replaces its point (same chunk id, same point id).
        await index.upsert("kb", -vectors[42:43], [payloads[42]])
        assert await index.count("kb") == 60
        assert (await index.search("kb", -vectors[42], 1, 0.0, 10))[0].payload["chunk_id"] == "t2:42"
        await index.delete_where("kb", "task_id", "t1")
        assert await index.count("kb") == 40 and await index.count("kb", "task_id", "t1") == 0
        assert all(h.payload["task_id"] != "t1" for h in await index.search("kb", vectors[25], 60, 0.0, 600))
        # The embedded engine searches in a process of its own; a server with its own index.
        assert isinstance(store, EdgeStore) == (vector_store_config.provider == "qdrant")
        await index.drop("kb")
        assert await index.count("kb") == 0 and await index.search("kb", vectors[0], 5, 0.0, 50) == []
    finally:
        await index.close()
        await store.close()
