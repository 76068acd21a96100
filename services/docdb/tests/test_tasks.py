"""Processing tasks: listing and filters, cancel rules and rollback, timestamps, the processing config."""

from __future__ import annotations

import asyncio
import re
from datetime import datetime
from typing import Any

import pytest

from lore_common.testing.flows import CURIE, KB, TASKS, parse, upload, wait_task

Client = Any
GRAPH = {"LORE__DOCDB__GRAPH_STORE__ENABLED": "true"}


@pytest.fixture
def db_env(relational_url: str | None) -> dict[str, str]:
    """Every test of this module runs on SQLite and on PostgreSQL."""
    return {"LORE__DOCDB__DATABASE__URL": relational_url} if relational_url else {}


async def test_task_list_filter_limit_and_cancel_rules(docdb: Client) -> None:
    await upload(docdb, "d1", {"a.txt": CURIE.encode()})
    await docdb.post(KB, json={"name": "kb"})
    [task_id] = await parse(docdb, "kb", ["d1"], mode=1)
    await wait_task(docdb, task_id)
    listing = (await docdb.get(TASKS, params={"status": "completed", "limit": 5})).json()
    assert [t["task_id"] for t in listing] == [task_id]
    assert listing[0]["task_type"] == "file_processing" and listing[0]["error"] is None
    assert (await docdb.get(TASKS, params={"status": "running"})).json() == []
    assert (await docdb.get(TASKS, params={"status": "bogus"})).status_code == 400
    terminal = await docdb.post(f"{TASKS}/{task_id}/cancel")
    assert terminal.status_code == 400 and "already completed" in terminal.json()["message"]
    assert (await docdb.post(f"{TASKS}/nope/cancel")).status_code == 404
    assert (await docdb.get(f"{TASKS}/nope")).status_code == 404


async def test_cancel_pending_is_immediate(docdb: Client) -> None:
    await upload(docdb, "d1", {"a.txt": CURIE.encode()})
    await docdb.post(KB, json={"name": "kb"})
    await docdb.app.state.parse.stop()  # no worker: the task stays pending
    [task_id] = await parse(docdb, "kb", ["d1"])
    r = await docdb.post(f"{TASKS}/{task_id}/cancel")
    assert r.json()["data"] == {"task_id": task_id, "status": "cancelled"}
    assert (await docdb.get(f"{TASKS}/{task_id}")).json()["status"] == "cancelled"


async def test_cancel_running_task_rolls_back_indexed_chunks_and_graph(docdb_factory: Any) -> None:
    async with docdb_factory(**GRAPH) as client:
        state = client.app.state
        await upload(client, "d1", {f"doc{i}.txt": CURIE.encode() for i in range(5)})
        await client.post(KB, json={"name": "kb"})
        reached_merge = asyncio.Event()
        release = asyncio.Event()
        original = state.graph.ensure

        async def slow_ensure(kb: str) -> None:
            reached_merge.set()
            await release.wait()
            await original(kb)

        state.graph.ensure = slow_ensure
        [task_id] = await parse(client, "kb", ["d1"])
        await asyncio.wait_for(reached_merge.wait(), 30)
        # The chunks, points and BM25 entries of this task exist now; the graph merge is about to start.
        assert await state.kb_store.count_chunks("kb", task_id) > 0
        assert any(i.decode().startswith(f"{task_id}:") for i in (await state.bm25.get("kb")).ids)
        search = {"kb_id": "kb", "query": "Marie Curie radium", "mode": "naive"}
        assert (await client.post("/api/v1/docdb/retrieve", json=search)).json()["data"]
        r = await client.post(f"{TASKS}/{task_id}/cancel")
        assert r.json()["data"]["status"] == "cancelling"
        release.set()
        task = await wait_task(client, task_id)
        assert task["status"] == "cancelled"
        assert await state.vectors.count("kb", "task_id", task_id) == 0
        assert await state.kb_store.count_chunks("kb", task_id) == 0
        assert await state.graph.counts("kb", task_id) == (0, 0)
        bm25 = await state.bm25.get("kb")
        assert not any(i.decode().startswith(f"{task_id}:") for i in bm25.ids)
        # Searches (served from the in-memory copy of the vectors) no longer find the rolled-back chunks.
        assert (await client.post("/api/v1/docdb/retrieve", json=search)).json()["data"] == []


async def test_processing_config(docdb: Client) -> None:
    data = (await docdb.get("/api/v1/docdb/files/processing/config")).json()["data"]
    assert data["llm"] == {"model": "offline-extractive", "max_concurrent": 10, "timeout": 120.0}
    assert data["embedding"]["batch_size"] == 2000 and data["embedding"]["dim"] == 1024
    assert data["graph"] == {"chunk_size": 1024, "overlap": 50, "batch_size": 2000, "max_workers": 200}


async def test_a_tasks_updated_at_is_never_before_its_created_at(docdb: Client) -> None:
    """Both stamps carry microseconds (the job store writes `updated_at`, the task its `created_at`), so
    the later one never reads as earlier."""
    await upload(docdb, "d1", {"a.txt": CURIE.encode()})
    await docdb.post(KB, json={"name": "kb"})
    [task_id] = await parse(docdb, "kb", ["d1"], mode=1)
    pending = (await docdb.get(f"{TASKS}/{task_id}")).json()
    done = await wait_task(docdb, task_id)
    for task in (pending, done):
        for stamp in (task["created_at"], task["updated_at"]):
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}", stamp), stamp
        assert datetime.fromisoformat(task["updated_at"]) >= datetime.fromisoformat(task["created_at"])
    assert done["created_at"] == pending["created_at"] and done["updated_at"] > done["created_at"]
