"""mem `kb` durability: a failed commit, a job left running, fifty concurrent inserts across a restart,
the import of the earlier file store, and two replicas on one PostgreSQL."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from lore_common.providers.embedders import HashingEmbedder
from lore_common.testing.flows import FACT, INSERT, ask, communities_ready, finished, insert
from lore_mem.kb.legacy import CommunityFile, Snapshot
from lore_mem.kb.models import ChunkRecord, Community, EntityRecord, InsertJob, RelationRecord, Segment


async def test_a_failed_commit_leaves_nothing_behind_and_a_left_job_becomes_failed(
    mem_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with mem_factory() as client:
        kb = client.app.state.kb
        await finished(client, (await insert(client, FACT))["id"])

        async def full_disk(*_: Any) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(kb.store, "_write_rows", full_disk)
        done = await finished(client, (await insert(client, "The Oslo ferry sails at dawn."))["id"])
        assert done["status"] == "failed" and "No space left on device" in done["error"]
        assert "Oslo" not in (await ask(client, "Oslo ferry?", mode="naive"))["rag_memory"]
        # The failed insert's vectors went with it: only the first insert's chunk is searchable.
        assert len(await kb.store.chunk_vectors.scroll({"job_id": done["id"]}, 10)) == 0
        # A job this replica was running when it was killed.
        await kb.runner.store.save(
            InsertJob(id="left-running", query="x", status="processing"), kb.runner.owner
        )
    # With resuming off (on, the job runs again: test_kb_resume.py).
    async with mem_factory(LORE__MEM__MEMORYKB__RESUME_INTERRUPTED="false") as client:
        assert FACT in (await ask(client, "Zanzibar lighthouse?", mode="naive"))["rag_memory"]
        left = (await client.get(f"{INSERT}/left-running")).json()
        assert left["status"] == "failed" and "interrupted" in left["error"]


async def test_fifty_concurrent_inserts_all_become_queryable_and_survive_a_restart(mem_factory: Any) -> None:
    async with mem_factory() as client:
        jobs = await asyncio.gather(
            *(
                insert(client, f"Locker {i} holds the parcel with tracking code ZX{i:04d}Q.")
                for i in range(50)
            )
        )
        results = await asyncio.gather(*(finished(client, job["id"], limit=90) for job in jobs))
        assert [r["status"] for r in results] == ["done"] * 50
        for i in (0, 17, 49):
            assert f"ZX{i:04d}Q" in (await ask(client, f"ZX{i:04d}Q", mode="naive"))["rag_memory"]
            # Local recall finds the entity the question names, punctuation around it or not.
            local = await ask(client, f"Which locker holds parcel ZX{i:04d}Q?", mode="local")
            assert f"Locker {i} holds" in local["rag_memory"].split("-----Sources-----")[1]
        await communities_ready(client)
    async with mem_factory() as client:
        counts = await client.app.state.kb.store.counts()
        assert counts["chunks"] == 50 and counts["communities"] > 0
        found = [
            f"ZX{i:04d}Q" in (await ask(client, f"ZX{i:04d}Q", mode="naive"))["rag_memory"] for i in range(50)
        ]
        assert all(found)


def _vectors(texts: list[str]) -> bytes:
    embedder = HashingEmbedder(256)
    return np.asarray([embedder._one(t) for t in texts], dtype=np.float32).tobytes()


def _write_file_store(root: Path) -> None:
    """The layout earlier versions kept: a snapshot, a newer segment, communities and job files."""
    first = ChunkRecord(id="j1:0", job_id="j1", text="The Bergen archive keeps the whaling logs.")
    archive = EntityRecord(
        key="bergen archive",
        name="Bergen archive",
        type="place",
        descriptions=["Keeps logs."],
        chunk_ids=["j1:0"],
    )
    logs = EntityRecord(key="whaling logs", name="whaling logs", type="object", chunk_ids=["j1:0"])
    snapshot = Snapshot(
        last_seq=1,
        dim=256,
        chunks=[first],
        chunk_vectors=_vectors([first.text]),
        entities=[archive, logs],
        entity_vectors=_vectors(["Bergen archive", "whaling logs"]),
        relations=[RelationRecord(source="bergen archive", target="whaling logs", descriptions=["keeps"])],
    )
    second = ChunkRecord(id="j2:0", job_id="j2", text="The Tromso museum lends the harpoon QH77.")
    segment = Segment(
        seq=2,
        job_id="j2",
        chunks=[second],
        chunk_vectors=_vectors([second.text]),
        entities=[EntityRecord(key="tromso museum", name="Tromso museum", type="place", chunk_ids=["j2:0"])],
        vector_keys=["tromso museum"],
        entity_vectors=_vectors(["Tromso museum"]),
        relations=[],
    )
    (root / "segments").mkdir(parents=True)
    (root / "jobs").mkdir()
    (root / "snapshot.bin").write_bytes(msgspec.msgpack.encode(snapshot))
    # A segment the snapshot covers (a crash came before its deletion): replaying it would add j1 twice.
    covered = Segment(
        seq=1,
        job_id="j1",
        chunks=[first],
        chunk_vectors=_vectors([first.text]),
        entities=[],
        vector_keys=[],
        entity_vectors=b"",
        relations=[],
    )
    (root / "segments" / "000000000001.seg").write_bytes(msgspec.msgpack.encode(covered))
    (root / "segments" / "000000000002.seg").write_bytes(msgspec.msgpack.encode(segment))
    community = Community(
        id="c1", members=["bergen archive", "whaling logs"], title="Bergen", summary="Logs."
    )
    (root / "communities.bin").write_bytes(
        msgspec.msgpack.encode(CommunityFile(version=3, communities=[community], vectors=_vectors(["Logs."])))
    )
    for job_id, status in (("j1", "done"), ("j2", "done"), ("j3", "processing")):
        (root / "jobs" / f"{job_id}.json").write_text(
            json.dumps({"id": job_id, "query": "q", "status": status})
        )


async def test_the_file_store_of_earlier_versions_is_imported_once(mem_factory: Any, tmp_path: Path) -> None:
    root = tmp_path / "mem" / "kb"
    _write_file_store(root)
    for _ in range(2):  # the second start finds the folder renamed and imports nothing twice
        async with mem_factory(LORE__MEM__MEMORYKB__RESUME_INTERRUPTED="false") as client:
            assert await client.app.state.kb.store.counts() == {
                "chunks": 2,
                "entities": 3,
                "relations": 1,
                "communities": 1,
            }
            assert "QH77" in (await ask(client, "harpoon QH77", mode="naive"))["rag_memory"]
            local = await ask(client, "What does the Bergen archive keep?", mode="local")
            assert "Bergen archive -- whaling logs: keeps" in local["rag_memory"]
            assert "Logs." in (await ask(client, "whaling logs", mode="global"))["rag_memory"]
            assert (await client.get(f"{INSERT}/j2")).json()["status"] == "done"
            left = (await client.get(f"{INSERT}/j3")).json()
            assert left["status"] == "failed" and "interrupted" in left["error"]
        assert not root.exists() and (tmp_path / "mem" / "kb.imported" / "snapshot.bin").exists()


@pytest.mark.postgres
async def test_two_replicas_share_the_graph_and_compute_communities_once(
    mem_factory: Any, pgvector_url: str
) -> None:
    env = {
        "LORE__MEM__DATABASE__URL": pgvector_url,
        "LORE__MEM__VECTOR_STORE__PROVIDER": "pgvector",
        "LORE__MEM__MEMORYKB__JOB_HEARTBEAT_INTERVAL": "0.05",
    }
    async with (
        mem_factory(LORE__MEM__SERVER__PORT="9203", **env) as first,
        mem_factory(LORE__MEM__SERVER__PORT="9204", **env) as second,
    ):
        jobs = [
            await insert(first if i % 2 else second, f"Crate {i} ships spare part KP{i:03d}.")
            for i in range(6)
        ]
        # Each job reads the same on both replicas, and once done its insert answers on both.
        for job in jobs:
            assert (await finished(second, job["id"]))["status"] == "done"
            assert (await first.get(f"{INSERT}/{job['id']}")).json()["status"] == "done"
        for i in range(6):
            for client in (first, second):
                assert (
                    f"KP{i:03d}" in (await ask(client, f"spare part KP{i:03d}", mode="naive"))["rag_memory"]
                )
        await communities_ready(first)
        runs = first.app.state.kb.communities.runs + second.app.state.kb.communities.runs
        assert (
            runs >= 1 and min(first.app.state.kb.communities.runs, second.app.state.kb.communities.runs) == 0
        )  # only the leader recomputes
        assert (await first.app.state.kb.store.counts())["entities"] >= 6
