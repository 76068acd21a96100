"""Processing tasks (contract 4.5): listing and filters, cancel rules and rollback, the processing config."""

from __future__ import annotations

import asyncio
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
    await docdb.app.state.tasks.stop()  # no worker: the task stays pending
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
        assert await state.index.count_chunks("kb", task_id) > 0
        assert any(c[0].startswith(f"{task_id}:") for c in (await state.bm25.get("kb")).chunks)
        search = {"kb_id": "kb", "query": "Marie Curie radium", "mode": "naive"}
        assert (await client.post("/api/v1/docdb/retrieve", json=search)).json()["data"]
        r = await client.post(f"{TASKS}/{task_id}/cancel")
        assert r.json()["data"]["status"] == "cancelling"
        release.set()
        task = await wait_task(client, task_id)
        assert task["status"] == "cancelled"
        assert await state.vectors.count("kb", "task_id", task_id) == 0
        assert await state.index.count_chunks("kb", task_id) == 0
        assert await state.graph.counts("kb", task_id) == (0, 0)
        bm25 = await state.bm25.get("kb")
        assert not any(c[0].startswith(f"{task_id}:") for c in bm25.chunks)
        # Searches (served from the in-memory copy of the vectors) no longer find the rolled-back chunks.
        assert (await client.post("/api/v1/docdb/retrieve", json=search)).json()["data"] == []


async def test_processing_config(docdb: Client) -> None:
    data = (await docdb.get("/api/v1/docdb/files/processing/config")).json()["data"]
    assert data["llm"] == {"model": "offline-extractive", "max_concurrent": 10, "timeout": 120.0}
    assert data["embedding"]["batch_size"] == 2000 and data["embedding"]["dim"] == 1024
    assert data["graph"] == {"chunk_size": 1024, "overlap": 50, "batch_size": 2000, "max_workers": 200}


OLD_TASKS = """CREATE TABLE tasks (
    task_id VARCHAR(36) PRIMARY KEY, status VARCHAR(16) NOT NULL, task_type VARCHAR(32) NOT NULL,
    kb_name VARCHAR(64) NOT NULL, dataset VARCHAR(64) NOT NULL, mode INTEGER NOT NULL,
    schema_name VARCHAR(255), stage VARCHAR(32), error TEXT, schema_entities TEXT, skipped_files TEXT,
    heartbeat_at TIMESTAMP, created_at TIMESTAMP NOT NULL, updated_at TIMESTAMP NOT NULL)"""


async def test_tasks_of_the_earlier_table_move_into_the_job_store(docdb_factory: Any) -> None:
    """An upgrade keeps every task: finished ones as they were, one left running is closed."""
    from sqlalchemy import text

    async with docdb_factory() as docdb, docdb.app.state.stores.sql.begin() as connection:
        await connection.execute(text(OLD_TASKS))
        for task_id, status, error in (
            ("11111111-0000-0000-0000-000000000001", "completed", None),
            ("11111111-0000-0000-0000-000000000002", "failed", "no parsable file"),
            ("11111111-0000-0000-0000-000000000003", "running", None),
        ):
            await connection.execute(
                text(
                    "INSERT INTO tasks VALUES (:id, :status, 'file_processing', 'kb', 'papers', 0, NULL, "
                    "'embed', :error, NULL, NULL, NULL, '2026-01-02 03:04:05', '2026-01-02 03:04:06')"
                ),
                {"id": task_id, "status": status, "error": error},
            )
    async with docdb_factory() as docdb:  # the restart of an upgraded install
        for _ in range(100):  # on PostgreSQL the leader closes it at its next heartbeat
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
