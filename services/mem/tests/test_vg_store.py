"""vg's memory store: the same behaviour on Qdrant local (mirrored in memory) and on pgvector; adds of
one scope over two replicas."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from lore_common.stores import open_vector_store
from lore_core.settings import VectorStoreConfig
from lore_mem.vg.store import VgStore


def memory(text: str, created: int, **scope: str) -> dict[str, str]:
    return {"data": text, "hash": f"h-{text}", "created_at": f"2026-01-01T00:00:{created:02d}", **scope}


async def test_memories_are_scoped_searchable_and_survive_a_restart(
    vector_store_config: VectorStoreConfig, tmp_path: Path
) -> None:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(6, 16)).astype(np.float32)
    ids = [str(uuid.uuid4()) for _ in range(6)]
    store = await open_vector_store(vector_store_config, tmp_path)
    memories = VgStore(store, "memoryvg")
    try:
        await memories.ensure(16)
        assert memories.embedded == (vector_store_config.provider == "qdrant")
        records = [
            memory("tea", 3, user_id="ana"),
            memory("surf", 1, user_id="ana"),
            memory("oslo", 2, user_id="bo"),
            memory("run", 4, user_id="ana", run_id="r1"),
            memory("agent", 5, agent_id="helper"),
            memory("gone", 6, user_id="ana"),
        ]
        for memory_id, vector, record in zip(ids, vectors, records, strict=True):
            await memories.put(memory_id, vector.tolist(), record)
        await memories.delete([ids[5]])

        hits = await memories.search(vectors[2].tolist(), 10, where={"user_id": "ana"})
        assert {r["data"] for r, _ in hits} == {"tea", "surf", "run"}  # bo's memory stays in bo's scope
        assert [
            r["data"] for r, _ in await memories.search(vectors[0].tolist(), 1, where={"user_id": "ana"})
        ] == ["tea"]
        scoped = await memories.search(vectors[3].tolist(), 10, where={"user_id": "ana", "run_id": "r1"})
        assert [(r["data"], round(s, 4)) for r, s in scoped] == [("run", 1.0)]
        assert await memories.search(vectors[1].tolist(), 10, where={"user_id": "ana"}, threshold=0.999) == [
            (await memories.get(ids[1]) or {}, pytest.approx(1.0, abs=1e-5))
        ]
        assert [r["data"] for r in await memories.list_scope({"user_id": "ana"}, 10)] == [
            "surf",
            "tea",
            "run",
        ]
        assert (await memories.find_hash({"user_id": "ana"}, "h-tea") or {})["id"] == ids[0]
        assert await memories.find_hash({"user_id": "bo"}, "h-tea") is None
        assert await memories.get(ids[5]) is None and await memories.get("not-a-uuid") is None
        await memories.put(ids[0], vectors[0].tolist(), memory("green tea", 3, user_id="ana"))
        assert (await memories.get(ids[0]) or {})["data"] == "green tea"
    finally:
        await store.close()

    # A new process sees the same memories (Qdrant local rebuilds its mirror; pgvector just reads).
    store = await open_vector_store(vector_store_config, tmp_path)
    memories = VgStore(store, "memoryvg")
    try:
        await memories.ensure(16)
        assert [r["data"] for r in await memories.list_scope({"user_id": "ana"}, 10)] == [
            "surf",
            "green tea",
            "run",
        ]
        assert (await memories.get(ids[4]) or {})["agent_id"] == "helper"
    finally:
        await store.close()


@pytest.mark.postgres
async def test_twenty_concurrent_adds_over_two_replicas_store_each_fact_once(
    mem_factory: Any, pgvector_url: str
) -> None:
    env = {"LORE__MEM__DATABASE__URL": pgvector_url, "LORE__MEM__VECTOR_STORE__PROVIDER": "pgvector"}
    facts = [f"My locker number is {n}" for n in range(4)]
    async with mem_factory(**env) as first, mem_factory(**env) as second:
        for client in (first, second):  # a slow embedder: the window between "is it new?" and the write
            vg = client.app.state.vg
            embed = vg.embedder.embed_query

            async def slow(text: str, embed: Any = embed) -> Any:
                await asyncio.sleep(0.05)
                return await embed(text)

            vg.embedder = SimpleNamespace(embed_query=slow)
        replies = await asyncio.gather(
            *(
                (first if (i // len(facts)) % 2 else second).post(
                    "/api/v1/mem/vg/add",
                    json={
                        "messages": [{"role": "user", "content": facts[i % len(facts)]}],
                        "user_id": "shared",
                        "infer": i >= 12,
                    },
                )
                for i in range(20)
            )
        )
        assert [r.status_code for r in replies] == [200] * 20
        for client in (first, second):
            stored = (await client.get("/api/v1/mem/vg", params={"user_id": "shared"})).json()["results"]
            assert sorted(m["memory"] for m in stored) == sorted(facts)
