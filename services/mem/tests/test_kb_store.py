"""mem `kb` durability: a crash mid-insert, fifty concurrent inserts across a restart, compaction."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from lore_common.testing.flows import FACT, INSERT, ask, communities_ready, finished, insert


async def test_a_crash_mid_insert_leaves_the_store_readable_and_the_job_failed(
    mem_factory: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    async with mem_factory() as client:
        await finished(client, (await insert(client, FACT))["id"])
        store = client.app.state.kb.store

        def torn_write(segment: Any) -> None:
            (store.segments_dir / ".000000000002.seg.dead.tmp").write_bytes(b"\x85half a segm")
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(store, "write_segment", torn_write)
        done = await finished(client, (await insert(client, "The Oslo ferry sails at dawn."))["id"])
        assert done["status"] == "failed" and "No space left on device" in done["error"]
        assert "Oslo" not in (await ask(client, "Oslo ferry?", mode="naive"))["rag_memory"]
    # A job a killed process left half-way.
    jobs = tmp_path / "mem" / "kb" / "jobs"
    (jobs / "left-running.json").write_text(
        json.dumps({"id": "left-running", "query": "x", "status": "processing"})
    )
    async with mem_factory() as client:
        assert FACT in (await ask(client, "Zanzibar lighthouse?", mode="naive"))["rag_memory"]
        left = (await client.get(f"{INSERT}/left-running")).json()
        assert left["status"] == "failed" and "interrupted" in left["error"]
    assert not list((tmp_path / "mem" / "kb" / "segments").glob("*.tmp"))


async def test_fifty_concurrent_inserts_all_become_queryable_and_survive_a_restart(mem_factory: Any) -> None:
    async with mem_factory() as client:
        jobs = await asyncio.gather(
            *(
                insert(client, f"Locker {i} holds the parcel with tracking code ZX{i:04d}Q.")
                for i in range(50)
            )
        )
        results = await asyncio.gather(*(finished(client, job["id"]) for job in jobs))
        assert [r["status"] for r in results] == ["done"] * 50
        for i in (0, 17, 49):
            assert f"ZX{i:04d}Q" in (await ask(client, f"ZX{i:04d}Q", mode="naive"))["rag_memory"]
            # Local recall finds the entity the question names, punctuation around it or not.
            local = await ask(client, f"Which locker holds parcel ZX{i:04d}Q?", mode="local")
            assert f"Locker {i} holds" in local["rag_memory"].split("-----Sources-----")[1]
        await communities_ready(client)
    async with mem_factory() as client:
        store = client.app.state.kb.store
        assert len(store.chunks) == 50 and store.communities
        found = [
            f"ZX{i:04d}Q" in (await ask(client, f"ZX{i:04d}Q", mode="naive"))["rag_memory"] for i in range(50)
        ]
        assert all(found)


async def test_compaction_keeps_every_insert(mem_factory: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("lore_mem.kb.store.COMPACT_AFTER_SEGMENTS", 5)
    async with mem_factory() as client:
        for i in range(12):
            await finished(client, (await insert(client, f"Shelf {i} stores jar code QJ{i:03d}."))["id"])
        segments = client.app.state.kb.store.segments_dir
        assert len(list(segments.glob("*.seg"))) < 5
    async with mem_factory() as client:
        for i in range(12):
            assert f"QJ{i:03d}" in (await ask(client, f"QJ{i:03d}", mode="naive"))["rag_memory"]
