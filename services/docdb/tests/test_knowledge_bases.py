from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from lore_common.testing.flows import CURIE, DS, KB, TASKS, parse, upload, wait_task
from lore_common.testing.pytest_plugin import StoreProfile

pytestmark = pytest.mark.spread  # independent tests: xdist hands them out one by one

Client = Any
GRAPH = {"LORE__DOCDB__GRAPH_STORE__ENABLED": "true"}

LU_XUN = "鲁迅是中国现代文学的奠基人。鲁迅在北京大学任教，写了《狂人日记》。"


@pytest.fixture
def db_env(store_profile: StoreProfile) -> dict[str, str]:
    """Every test here runs on the embedded stores, on PostgreSQL + Qdrant, and all in PostgreSQL."""
    return store_profile.env("docdb")


async def test_kb_create_list_detail_and_conflicts(docdb: Client) -> None:
    assert (await docdb.get(KB)).json() == {"success": True, "data": []}
    assert (await docdb.post(KB, json={"name": "science"})).status_code == 200
    assert (await docdb.post(KB, json={"name": "science"})).status_code == 409
    assert (await docdb.post(KB, json={"name": "bad name"})).status_code == 400
    listing = (await docdb.get(KB)).json()["data"]
    assert [(k["name"], k["status"]) for k in listing] == [("science", "ready")]
    detail = (await docdb.get(f"{KB}/science")).json()
    assert detail["datasets"] == [] and detail["status"] == "ready"
    assert {m["id"] for m in detail["available_query_modes"]} == {
        "naive",
        "rerank",
        "rewriter",
        "multihop",
        "direct",
    }
    assert all(m["label"] and m["desc"] for m in detail["available_query_modes"])
    assert (await docdb.get(f"{KB}/nope")).status_code == 404


async def test_parse_mode_0_builds_vectors_chunks_and_graph(docdb_factory: Any) -> None:
    async with docdb_factory(**GRAPH) as client:
        await upload(
            client,
            "papers",
            {"curie.txt": CURIE.encode(), "luxun.md": LU_XUN.encode(), "setup.exe": b"MZ"},
        )
        await client.post(KB, json={"name": "science"})
        [task_id] = await parse(client, "science", ["papers"])
        task = await wait_task(client, task_id)
        assert task["status"] == "completed", task
        usage = task["metadata"].pop("usage")
        assert task["metadata"] == {
            "kb_name": "science",
            "dataset": "papers",
            "mode": 0,
            "schema_name": None,
            "skipped_files": [{"file": "setup.exe", "reason": "unsupported type .exe"}],
            "files": {"added": 3, "changed": 0, "deleted": 0, "unchanged": 0},
        }
        assert usage["failed_chunks"] == 0 and usage["extracted"] >= 2  # the offline model read every chunk
        state = client.app.state
        assert await state.vectors.count("science") == await state.kb_store.count_chunks("science") >= 2
        nodes, edges = await state.graph.counts("science")
        assert nodes >= 4 and edges >= 2
        detail = (await client.get(f"{KB}/science")).json()
        [entry] = detail["datasets"]
        assert (
            entry["name"] == "papers"
            and entry["parsed"] is True
            and entry["process_mode"] == 0
            and entry["parsed_at"]
        )
        overview = (
            await client.get(f"{KB}/science/overview", params={"top_nodes": 3, "sample_relations": 2})
        ).json()
        top = overview["overview"]["top_entities"]
        assert len(top) == 3 and top[0]["name"] == "Marie Curie"
        assert len(overview["overview"]["sample_relations"]) == 2
        assert "Marie Curie" in overview["prompt"] and "papers (parsed)" in overview["prompt"]
        # The prompt is read: types as their English labels; the entities keep the contract's values.
        assert top[0]["type"] == "客观实体" and "Marie Curie [Physical entity]" in overview["prompt"]
        assert not any(t in overview["prompt"] for t in ("客观实体", "抽象实体", "事件实体", "文献实体"))

        # Each file as the parse left it: its chunks, or why it has none; by pages.
        listed = (await client.get(f"{KB}/science/files")).json()
        assert listed["total"] == 3 and [f["path"] for f in listed["files"]] == [
            "curie.txt",
            "luxun.md",
            "setup.exe",
        ]
        assert all(f["chunks"] >= 1 and f["skipped"] is None for f in listed["files"][:2])
        assert listed["files"][2] | {"task_id": ""} == {
            "dataset": "papers",
            "path": "setup.exe",
            "name": "setup.exe",
            "chunks": 0,
            "skipped": "unsupported type .exe",
            "task_id": "",
        }
        second = (await client.get(f"{KB}/science/files", params={"offset": 1, "limit": 1})).json()
        assert [f["path"] for f in second["files"]] == ["luxun.md"] and second["total"] == 3
        assert (await client.get(f"{KB}/nope/files")).status_code == 404

        # The graph route pages through every entity; the relations come once each, among those paged.
        seen_nodes: list[dict[str, Any]] = []
        seen_edges: list[tuple[str, str]] = []
        for offset in range(0, nodes + 3, 3):
            page = (await client.get(f"{KB}/science/graph", params={"offset": offset, "limit": 3})).json()
            assert page["total_nodes"] == nodes and page["offset"] == offset
            seen_nodes += page["nodes"]
            seen_edges += [(e["source"], e["target"]) for e in page["edges"]]
            held = {n["name"] for n in seen_nodes}
            assert all(source in held and target in held for source, target in seen_edges)
        assert len(seen_nodes) == len({n["name"] for n in seen_nodes}) == nodes
        assert seen_nodes[0]["name"] == "Marie Curie" and seen_nodes[0]["degree"] >= seen_nodes[-1]["degree"]
        assert len(seen_edges) == len(set(seen_edges)) == edges
        whole = (await client.get(f"{KB}/science/graph")).json()
        assert len(whole["nodes"]) == nodes and len(whole["edges"]) == edges and whole["limit"] == 500
        assert (await client.get(f"{KB}/nope/graph")).status_code == 404
        # Descriptions shorter than the page's cut that end in a multi-byte character, beside one
        # longer than it: FalkorDB's `substring` returned the short ones cut inside that character, a
        # 500 for the whole page.
        descriptions = {
            "Row Access": "4 1.3.2 New controls: Row and Column Access Control …",
            "Column Access": "New controls: Row and Column Access Control …",
            "Long Story": "a" * 299 + "é" * 5,
        }
        for name, description in descriptions.items():
            await state.graph._graph("science").query(
                "CREATE (:Entity {name: $name, type: 'concept', description: $d, datasets: ['papers']})",
                {"name": name, "d": description},
            )
        shown = await client.get(f"{KB}/science/graph")
        assert shown.status_code == 200, shown.text
        got = {n["name"]: n["description"] for n in shown.json()["nodes"]}
        assert got["Row Access"] == descriptions["Row Access"]
        assert got["Column Access"] == descriptions["Column Access"]
        assert got["Long Story"] == descriptions["Long Story"][:300]
        for bad in ({"limit": 0}, {"limit": 2001}, {"offset": -1}):
            refused = await client.get(f"{KB}/science/graph", params=bad)
            assert refused.status_code == 400, refused.text
        again = await client.post(f"{KB}/science/parse", json={"datasets": ["papers"]})
        assert again.status_code == 409 and "force" in again.json()["message"]


async def test_mode_1_makes_no_graph_and_modes_must_agree(docdb_factory: Any) -> None:
    async with docdb_factory(**GRAPH) as client:
        await upload(client, "a", {"a.txt": CURIE.encode()})
        await upload(client, "b", {"b.txt": b"Plain text about nothing in particular, repeated. " * 20})
        await client.post(KB, json={"name": "vec"})
        [task_id] = await parse(client, "vec", ["a"], mode=1)
        assert (await wait_task(client, task_id))["status"] == "completed"
        assert await client.app.state.graph.counts("vec") == (0, 0)
        assert await client.app.state.vectors.count("vec") > 0
        mixed = await client.post(f"{KB}/vec/parse", json={"datasets": ["b"], "mode": 0})
        assert mixed.status_code == 409 and "mode" in mixed.json()["message"]
        modes = {m["id"] for m in (await client.get(f"{KB}/vec")).json()["available_query_modes"]}
        assert "multihop" not in modes and "rerank" in modes


async def test_parse_errors(docdb: Client) -> None:
    await upload(docdb, "papers", {"a.txt": b"text"})
    assert (await docdb.post(f"{KB}/ghost/parse", json={"datasets": ["papers"]})).status_code == 404
    await docdb.post(KB, json={"name": "kb"})
    assert (await docdb.post(f"{KB}/kb/parse", json={"datasets": ["ghost"]})).status_code == 404
    assert (await docdb.post(f"{KB}/kb/parse", json={"datasets": []})).status_code == 400
    assert (await docdb.post(f"{KB}/kb/parse", json={"datasets": ["papers"], "mode": 7})).status_code == 400
    missing_schema = await docdb.post(f"{KB}/kb/parse", json={"datasets": ["papers"], "schema_name": "nope"})
    assert missing_schema.status_code == 404


async def test_a_dataset_without_parsable_files_fails_with_a_readable_error(docdb: Client) -> None:
    await upload(docdb, "pics", {"photo.jpg": b"\xff\xd8\xff"})
    await docdb.post(KB, json={"name": "kb"})
    [task_id] = await parse(docdb, "kb", ["pics"])
    task = await wait_task(docdb, task_id)
    assert task["status"] == "failed"
    assert "no parsable file" in task["error"] and "photo.jpg" in task["error"]
    detail = (await docdb.get(f"{KB}/kb")).json()
    assert detail["datasets"][0]["parsed"] is False


async def test_remove_dataset_purges_its_data_and_keeps_raw_files(docdb_factory: Any) -> None:
    async with docdb_factory(**GRAPH) as client:
        state = client.app.state
        await upload(client, "d1", {"a.txt": CURIE.encode()})
        await upload(client, "d2", {"b.txt": LU_XUN.encode()})
        await client.post(KB, json={"name": "kb"})
        for task_id in await parse(client, "kb", ["d1", "d2"]):
            assert (await wait_task(client, task_id))["status"] == "completed"
        before = await state.vectors.count("kb")
        assert (await client.delete(f"{KB}/kb/datasets/d1")).status_code == 200
        assert await state.vectors.count("kb", "dataset", "d1") == 0
        assert 0 < await state.vectors.count("kb") < before
        names = {e["name"] for e in await state.graph.top_entities("kb", 50)}
        assert "Marie Curie" not in names and "鲁迅" in names
        assert [d["name"] for d in (await client.get(f"{KB}/kb")).json()["datasets"]] == ["d2"]
        assert (await client.get(f"{DS}/d1/files")).json()["files"][0]["name"] == "a.txt"
        assert (await client.delete(f"{KB}/kb/datasets/d1")).status_code == 404
        assert (await client.delete(f"{KB}/ghost/datasets/d1")).status_code == 404


async def test_force_reparse_replaces_the_old_data(docdb: Client) -> None:
    await upload(docdb, "d1", {"a.txt": CURIE.encode()})
    await docdb.post(KB, json={"name": "kb"})
    [first] = await parse(docdb, "kb", ["d1"], mode=1)
    await wait_task(docdb, first)
    count = await docdb.app.state.vectors.count("kb")
    [second] = await parse(docdb, "kb", ["d1"], mode=1, force=True)
    assert (await wait_task(docdb, second))["status"] == "completed"
    assert await docdb.app.state.vectors.count("kb") == count
    assert await docdb.app.state.vectors.count("kb", "task_id", first) == 0


async def test_delete_kb_is_asynchronous_then_404(docdb_factory: Any) -> None:
    async with docdb_factory(**GRAPH) as client:
        state = client.app.state
        await upload(client, "d1", {"a.txt": CURIE.encode()})
        await client.post(KB, json={"name": "kb"})
        [task_id] = await parse(client, "kb", ["d1"])
        await wait_task(client, task_id)
        first = await client.delete(f"{KB}/kb")
        assert first.status_code == 202
        second = await client.delete(f"{KB}/kb")
        assert second.status_code in (200, 404)  # 200 while deleting; 404 if it already finished
        deadline = time.monotonic() + 30
        while (await client.get(f"{KB}/kb")).status_code != 404:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        assert await state.vectors.count("kb") == 0
        assert await state.graph.counts("kb") == (0, 0)
        assert await state.kb_store.count_chunks("kb") == 0
        assert (await client.get(f"{DS}/d1/files")).json()["files"]  # raw files stay


async def test_dataset_delete_is_409_while_its_parse_is_active(docdb: Client) -> None:
    await upload(docdb, "d1", {"a.txt": CURIE.encode()})
    await docdb.post(KB, json={"name": "kb"})
    await docdb.app.state.parse.stop()
    [task_id] = await parse(docdb, "kb", ["d1"])
    assert (await docdb.delete(f"{DS}/d1")).status_code == 409
    assert (await docdb.delete(f"{KB}/kb/datasets/d1")).status_code == 409
    again = await docdb.post(f"{KB}/kb/parse", json={"datasets": ["d1"], "force": True})
    assert again.status_code == 409 and "active" in again.json()["message"]
    await docdb.post(f"{TASKS}/{task_id}/cancel")
    assert (await docdb.delete(f"{DS}/d1")).status_code == 200


async def test_another_replicas_bm25_index_catches_up_with_new_chunks(docdb: Client, tmp_path: Path) -> None:
    """A second docdb on the same database never sees this one's `bump`: the KB's version, written
    with the chunks, tells its next question to rebuild."""
    from lore_docdb.index.bm25 import Bm25Cache

    index = docdb.app.state.kb_store
    await upload(docdb, "d1", {"curie.txt": CURIE.encode()})
    await docdb.post(KB, json={"name": "kb"})
    await wait_task(docdb, (await parse(docdb, "kb", ["d1"]))[0])
    replica = Bm25Cache(index.passages_of_kb, index.kb_version, tmp_path, shared=True)
    before = len((await replica.get("kb")).ids)
    assert before > 0 and await index.kb_version("kb") > 0
    assert not (await replica.get("kb")).search("Madman Diary Peking", 5)

    await upload(
        docdb, "d2", {"luxun.txt": b"Lu Xun taught at Peking University and wrote A Madman's Diary."}
    )
    await wait_task(docdb, (await parse(docdb, "kb", ["d2"]))[0])
    assert len((await replica.get("kb")).ids) > before
    [best, *_] = (await replica.get("kb")).search("Madman Diary Peking", 5)
    assert [row.file for row in await index.get_chunks([best[0]])] == ["luxun.txt"]
    assert (await docdb.delete(f"{KB}/kb/datasets/d2")).status_code == 200
    assert len((await replica.get("kb")).ids) == before  # a removal moves the version too


async def test_questions_that_find_the_kb_cache_expired_share_one_read(docdb: Client) -> None:
    index = docdb.app.state.kb_store
    await docdb.post(KB, json={"name": "kb"})
    reads = 0
    original = index.get_kb

    async def counting(name: str) -> Any:
        nonlocal reads
        reads += 1
        return await original(name)

    index.get_kb = counting
    rows = await asyncio.gather(*(index.cached_kb("kb") for _ in range(32)))
    assert reads == 1 and {row.name for row in rows} == {"kb"}
    # Uncounted from here: the background deletion reads the KB row too, at a moment of its own.
    index.get_kb = original
    # A write by this process is seen by the next question at once, not after the cache time: a
    # cached row would still say `ready`.
    assert (await docdb.delete(f"{KB}/kb")).status_code in (200, 202)
    row = await index.cached_kb("kb")
    assert row is None or row.status == "deleting"
