"""Incremental parsing: a parse reads only the files added or changed since the KB's last parse of the
dataset and takes back what changed and deleted files held; its result equals a full rebuild from the
same files (chunks, vectors, BM25 entries, graph), on SQLite + Qdrant local and PostgreSQL + pgvector."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest
from sqlalchemy import text

from lore_common.testing.flows import CURIE, DS, KB, parse, upload, wait_task
from lore_common.testing.pytest_plugin import StoreProfile
from lore_docdb.index.graph import graph_name
from lore_docdb.index.vectors import collection_name

Client = Any
GRAPH = {"LORE__DOCDB__GRAPH_STORE__ENABLED": "true"}
FILES = {
    "curie.txt": CURIE,
    "einstein.txt": "Albert Einstein worked in Berlin. Albert Einstein met Marie Curie in Brussels.",
    "bohr.md": "# Copenhagen\n\nNiels Bohr founded an institute in Copenhagen. Bohr met Albert Einstein.",
    "noether.txt": "Emmy Noether taught in Göttingen. David Hilbert invited Emmy Noether to Göttingen.",
    "setup.exe": "MZ",
}


@pytest.fixture(params=["embedded", pytest.param("pgvector", marks=pytest.mark.postgres)])
def db_env(request: pytest.FixtureRequest) -> dict[str, str]:
    """SQLite + Qdrant local, and everything in one PostgreSQL with pgvector."""
    if request.param == "embedded":
        return StoreProfile(None).env("docdb")
    return StoreProfile(request.getfixturevalue("pgvector_url"), "pgvector").env("docdb")


async def put(client: Client, dataset: str, path: str, text: str) -> None:
    reply = await client.put(f"{DS}/{dataset}/files", params={"path": path}, content=text.encode())
    assert reply.status_code == 200, reply.text


async def parsed(client: Client, kb: str, dataset: str, **options: Any) -> dict[str, Any]:
    [task_id] = await parse(client, kb, [dataset], **options)
    task = await wait_task(client, task_id)
    assert task["status"] == "completed", task
    return task


async def snapshot(client: Client, kb: str) -> dict[str, Any]:
    """What a KB holds, named by file and position rather than by the ids of the tasks that made it."""
    state = client.app.state
    rows = await state.kb_store.get_chunks([r[0] for r in await state.kb_store.chunks_of_kb(kb)])
    places = {c.chunk_id: (c.file, c.position) for c in rows}
    chunks = sorted((places[r.chunk_id], r.text, r.heading_path, r.page_start, r.page_end) for r in rows)
    vectors: dict[tuple[str, int], np.ndarray[Any, Any]] = {}
    async for page in state.vectors.store.pages(collection_name(kb)):
        for payload, vector in zip(page.payloads, page.vectors, strict=True):
            vectors[places[payload["chunk_id"]]] = vector
    bm25 = sorted(places[i.decode()] for i in (await state.bm25.get(kb)).ids)
    graph = state.graph.store.graph(graph_name(kb))

    def place_of(ids: list[str]) -> list[tuple[str, int]]:
        return [places[i] for i in ids]

    nodes = (
        await graph.query(
            "MATCH (n:Entity) RETURN n.id, n.name, n.type, n.description, n.mentions, n.datasets, "
            "n.chunk_ids, size(n.sources) ORDER BY n.id"
        )
    ).result_set
    edges = (
        await graph.query(
            "MATCH (a:Entity)-[r:RELATED]->(b:Entity) RETURN a.id, b.id, r.description, r.weight, "
            "r.datasets, r.chunk_ids ORDER BY a.id, b.id"
        )
    ).result_set
    return {
        "chunks": chunks,
        "vectors": vectors,
        "bm25": bm25,
        "nodes": [(*n[:6], place_of(n[6])) for n in nodes],
        "edges": [(*e[:5], place_of(e[5])) for e in edges],
        "files": {place[0] for place in places.values()},
    }


def assert_same(incremental: dict[str, Any], full: dict[str, Any]) -> None:
    assert incremental["chunks"] == full["chunks"]
    assert incremental["bm25"] == full["bm25"] == [c[0] for c in full["chunks"]]
    assert incremental["vectors"].keys() == full["vectors"].keys() == {c[0] for c in full["chunks"]}
    for place, vector in full["vectors"].items():
        assert np.allclose(incremental["vectors"][place], vector, atol=1e-5), place
    assert incremental["nodes"] == full["nodes"]
    assert incremental["edges"] == full["edges"]


async def test_an_incremental_parse_equals_a_full_rebuild_from_the_same_files(docdb_factory: Any) -> None:
    async with docdb_factory(**GRAPH) as client:
        state = client.app.state
        await upload(client, "papers", {name: text.encode() for name, text in FILES.items()})
        await client.post(KB, json={"name": "inc"})
        first = await parsed(client, "inc", "papers")
        assert first["metadata"]["files"] == {"added": 5, "changed": 0, "deleted": 0, "unchanged": 0}
        shared = {n[1]: n for n in (await snapshot(client, "inc"))["nodes"]}["Albert Einstein"]
        assert {place[0] for place in shared[6]} == {"curie.txt", "einstein.txt", "bohr.md"}

        # Edit one file, delete one (it shared Albert Einstein), add one.
        await put(client, "papers", "einstein.txt", "Albert Einstein worked in Zurich and met Emmy Noether.")
        assert (await client.delete(f"{DS}/papers/files/bohr.md")).status_code == 200
        await put(client, "papers", "hilbert.txt", "David Hilbert worked in Göttingen with Emmy Noether.")
        again = await client.post(f"{KB}/inc/parse", json={"datasets": ["papers"]})
        assert again.status_code == 409 and "incremental" in again.json()["message"]
        second = await parsed(client, "inc", "papers", incremental=True)
        assert second["metadata"]["files"] == {"added": 1, "changed": 1, "deleted": 1, "unchanged": 3}
        unsupported = {"file": "setup.exe", "reason": "unsupported type .exe"}
        assert second["metadata"]["skipped_files"] == [unsupported]
        new_chunks = await state.kb_store.count_chunks("inc", second["task_id"])
        # The model read only the new and changed files' chunks; the unchanged ones kept theirs.
        assert second["metadata"]["usage"]["extracted"] == new_chunks == 2
        assert await state.kb_store.count_chunks("inc", first["task_id"]) == 2  # curie.txt, noether.txt

        await client.post(KB, json={"name": "full"})
        await parsed(client, "full", "papers")
        incremental, full = await snapshot(client, "inc"), await snapshot(client, "full")
        assert_same(incremental, full)

        # Nothing of the deleted file remains; the entity it shared stays with its other files.
        assert incremental["files"] == {"curie.txt", "einstein.txt", "noether.txt", "hilbert.txt"}
        assert await state.vectors.count("inc", "file", "bohr.md") == 0
        nodes = {n[1]: n for n in incremental["nodes"]}
        assert "Niels Bohr" not in nodes and "Copenhagen" not in nodes
        assert {place[0] for place in nodes["Albert Einstein"][6]} == {"curie.txt", "einstein.txt"}
        assert "Berlin" not in str(incremental["edges"]) and "Berlin" not in str(incremental["nodes"])

        # Nothing changed: nothing read, nothing embedded, no model call, nothing moved.
        third = await parsed(client, "inc", "papers", incremental=True)
        assert third["metadata"]["files"] == {"added": 0, "changed": 0, "deleted": 0, "unchanged": 5}
        usage = third["metadata"].get("usage", {})
        assert usage.get("model_calls", 0) == usage.get("extracted", 0) == usage.get("cache_hits", 0) == 0
        assert await state.kb_store.count_chunks("inc", third["task_id"]) == 0
        assert_same(await snapshot(client, "inc"), full)

        # `force` reads every file again, with the same result.
        forced = await parsed(client, "inc", "papers", force=True)
        assert forced["metadata"]["files"] == {"added": 0, "changed": 5, "deleted": 0, "unchanged": 0}
        assert await state.kb_store.count_chunks("inc") == await state.kb_store.count_chunks(
            "inc", forced["task_id"]
        )
        assert_same(await snapshot(client, "inc"), full)


# Store-independent paths: on the embedded stores only (each graph-enabled app costs seconds to stop).
EMBEDDED_ONLY = pytest.mark.parametrize("db_env", [{}], ids=["embedded"])


@EMBEDDED_ONLY
async def test_a_failed_incremental_parse_leaves_the_kb_as_it_was(docdb_factory: Any) -> None:
    async with docdb_factory(**GRAPH) as client:
        await upload(client, "papers", {name: text.encode() for name, text in FILES.items()})
        await client.post(KB, json={"name": "inc"})
        await parsed(client, "inc", "papers")
        before = await snapshot(client, "inc")
        await put(client, "papers", "einstein.txt", "Albert Einstein worked in Zurich and met Emmy Noether.")

        graph = client.app.state.graph
        real = graph.replace_entities

        async def fails_once(kb: str, entities: set[str], *_: Any) -> None:
            """Deletes the entities it rebuilds, then fails before writing them again."""
            graph.replace_entities = real  # the rollback's rebuild goes through
            await real(kb, entities, [], [], 100)
            raise RuntimeError("the graph store went away")

        graph.replace_entities = fails_once
        [task_id] = await parse(client, "inc", ["papers"], incremental=True)
        task = await wait_task(client, task_id)
        assert task["status"] == "failed" and "graph store went away" in task["error"]
        after = await snapshot(client, "inc")
        assert_same(after, before)
        # The failed parse recorded nothing: the next one still finds einstein.txt changed.
        retried = await parsed(client, "inc", "papers", incremental=True)
        assert retried["metadata"]["files"]["changed"] == 1


@EMBEDDED_ONLY
async def test_a_parse_after_every_file_was_deleted_empties_the_kb_of_them(docdb_factory: Any) -> None:
    """A dataset whose files are all gone (a source that mirrored an emptied folder) parses to nothing:
    the parse completes and the KB holds none of the files' chunks, vectors, BM25 entries or entities,
    instead of failing with "no parsable file" and answering from deleted files. A first parse of a
    dataset with nothing parsable still fails."""
    async with docdb_factory(**GRAPH) as client:
        await upload(client, "papers", {name: text.encode() for name, text in FILES.items()})
        await client.post(KB, json={"name": "inc"})
        await parsed(client, "inc", "papers")
        assert (await snapshot(client, "inc"))["nodes"]
        for name in FILES:
            assert (await client.delete(f"{DS}/papers/files/{name}")).status_code == 200
        emptied = await parsed(client, "inc", "papers", incremental=True)
        assert emptied["metadata"]["files"] == {"added": 0, "changed": 0, "deleted": 5, "unchanged": 0}
        left = await snapshot(client, "inc")
        assert (left["chunks"], left["vectors"], left["bm25"]) == ([], {}, [])
        assert (left["nodes"], left["edges"]) == ([], [])
        found = await client.post("/api/v1/docdb/retrieve", json={"kb_id": "inc", "query": "Albert Einstein"})
        assert found.json()["data"] == []

        await upload(client, "binaries", {"setup.exe": b"MZ"})
        [task_id] = await parse(client, "inc", ["binaries"])
        first = await wait_task(client, task_id)
        assert first["status"] == "failed" and "has no parsable file" in first["error"], first


@EMBEDDED_ONLY
async def test_a_kb_parsed_before_file_records_reads_every_file_once(docdb_factory: Any) -> None:
    """A KB from before migration 0008 has no file records and chunks without graph contributions: its
    next parse reads every file, replaces the old chunks and graph, and records the files."""
    async with docdb_factory(**GRAPH) as client:
        await upload(client, "papers", {name: text.encode() for name, text in FILES.items()})
        await client.post(KB, json={"name": "old"})
        first = await parsed(client, "old", "papers")
        async with client.app.state.kb_store.engine.begin() as connection:
            await connection.execute(text("DELETE FROM kb_files"))
            await connection.execute(text("UPDATE chunks SET graph = NULL"))
        upgraded = await parsed(client, "old", "papers", incremental=True)
        assert upgraded["metadata"]["files"] == {"added": 5, "changed": 0, "deleted": 0, "unchanged": 0}
        assert await client.app.state.kb_store.count_chunks("old", first["task_id"]) == 0
        await client.post(KB, json={"name": "full"})
        await parsed(client, "full", "papers")
        assert_same(await snapshot(client, "old"), await snapshot(client, "full"))
        again = await parsed(client, "old", "papers", incremental=True)
        assert again["metadata"]["files"]["unchanged"] == 5


@EMBEDDED_ONLY
async def test_removing_a_dataset_leaves_the_kb_its_other_dataset_would_build(docdb_factory: Any) -> None:
    async with docdb_factory(**GRAPH) as client:
        names = sorted(FILES)
        await upload(client, "d1", {name: FILES[name].encode() for name in names[:2]})
        await upload(client, "d2", {name: FILES[name].encode() for name in names[2:]})
        await client.post(KB, json={"name": "two"})
        await parsed(client, "two", "d1")
        await parsed(client, "two", "d2")
        assert (await client.delete(f"{KB}/two/datasets/d2")).status_code == 200
        await client.post(KB, json={"name": "one"})
        await parsed(client, "one", "d1")
        # Albert Einstein, named in both, keeps d1's descriptions, mentions and chunks only.
        assert_same(await snapshot(client, "two"), await snapshot(client, "one"))


@EMBEDDED_ONLY
async def test_files_that_change_while_a_parse_runs_are_parsed_again_when_it_ends(docdb_factory: Any) -> None:
    """A sync or an upload that lands after a parse listed the files (the KB's first parse included)
    queues the parse of those changes once it completes: nothing waits for a next change to be seen."""
    async with docdb_factory() as client:
        await upload(client, "papers", {name: text.encode() for name, text in FILES.items()})
        await client.post(KB, json={"name": "inc"})
        pipeline = client.app.state.parse.pipeline
        real = pipeline.run

        async def files_change_meanwhile(ctx: Any) -> Any:
            pipeline.run = real  # the follow-up parse runs as usual
            outcome = await real(ctx)  # what the parse listed and read
            await put(client, "papers", "einstein.txt", "Albert Einstein sailed on Lake Geneva with Noether.")
            assert (await client.delete(f"{DS}/papers/files/bohr.md")).status_code == 200
            return outcome

        pipeline.run = files_change_meanwhile
        first = await parsed(client, "inc", "papers")
        assert first["metadata"]["files"]["added"] == 5
        for _ in range(200):  # the follow-up is queued as the first completes
            [row] = await client.app.state.kb_store.kb_datasets("inc")
            if row.task_id != first["task_id"]:
                break
            await asyncio.sleep(0.05)
        follow_up = await wait_task(client, row.task_id)
        assert follow_up["status"] == "completed", follow_up
        assert follow_up["metadata"]["files"] == {"added": 0, "changed": 1, "deleted": 1, "unchanged": 3}
        found = await client.post(
            "/api/v1/docdb/retrieve", json={"kb_id": "inc", "query": "Einstein Lake Geneva"}
        )
        texts = " ".join(p["content"] for p in found.json()["data"])
        assert "Lake Geneva" in texts and "worked in Berlin" not in texts and "Copenhagen" not in texts
        # Nothing changed under the follow-up: no third parse.
        await asyncio.sleep(0.3)
        [row] = await client.app.state.kb_store.kb_datasets("inc")
        assert row.task_id == follow_up["task_id"]
