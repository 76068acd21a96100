"""The all-on-servers profile, as `just up-postgres` starts it: rows and vectors in PostgreSQL with
pgvector, graphs in one FalkorDB server, files in S3 (moto), driven through the gateway."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from lore_common.servers import database_url
from lore_common.stores.pgvector import table_name
from lore_common.testing.flows import CURIE, HOPPER
from lore_common.testing.processes import drop_stack_databases, pg_rows, start_servers_stack, wait_task

ROOT = Path(__file__).resolve().parents[2]
DOCS = "/api/v1/docdb/files"
VG = "/api/v1/mem/vg"
KB_MEM = "/api/v1/mem/kb"

pytestmark = pytest.mark.postgres


@dataclass
class Stack:
    url: str
    admin_url: str
    prefix: str
    work: Path

    def database(self, service: str) -> str:
        return database_url(self.admin_url, f"{self.prefix}_{service}")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, pgvector_server: str, moto_s3: str) -> Iterator[Stack]:
    work = tmp_path_factory.mktemp("servers")
    prefix = f"lore_e2e_{uuid.uuid4().hex[:8]}"
    servers = start_servers_stack(work, ROOT / "config", pgvector_server, prefix, s3_endpoint=moto_s3)
    try:
        yield Stack(servers.url, pgvector_server, prefix, work)
    finally:
        servers.process.stop()
        drop_stack_databases(pgvector_server, prefix)


def test_every_service_reports_its_servers(stack: Stack) -> None:
    body = httpx.get(f"{stack.url}/health", timeout=10).json()
    assert body["status"] == "ok", body
    docdb = body["services"]["docdb"]["checks"]
    assert {k: v["status"] for k, v in docdb.items()} == {
        "relational": "up",
        "vector": "up",
        "graph": "up",
        "objects": "up",
    }
    # Nothing embedded was started: no SQLite file, no Qdrant folder, no private FalkorDB.
    data = stack.work / "data"
    assert not (data / "docdb" / "docdb.db").exists() and not (data / "docdb" / "qdrant").exists()
    assert not (data / "mem" / "qdrant").exists() and not (data / "docdb" / "falkordb").exists()


@pytest.fixture(scope="module")
def people(stack: Stack) -> str:
    """A KB parsed in mode 0 (vectors and graph) from two small files; its name."""
    with httpx.Client(base_url=stack.url, timeout=60) as client:
        assert client.post(f"{DOCS}/raw-files/datasets", json={"name": "people"}).status_code == 200
        for name, text in (("curie.txt", CURIE), ("hopper.txt", HOPPER)):
            files = {"files": (name, text.encode())}
            assert client.post(f"{DOCS}/raw-files/datasets/people/files", files=files).status_code == 200
        assert client.post(f"{DOCS}/knowledge-bases", json={"name": "people"}).status_code == 200
        body = {"datasets": ["people"], "mode": 0}
        parse = client.post(f"{DOCS}/knowledge-bases/people/parse", json=body).json()
        task = wait_task(client, parse["data"]["tasks"][0]["task_id"], timeout=120)
        assert task["status"] == "completed", task
    return "people"


def test_documents_parse_into_pgvector_and_every_query_mode_cites_them(stack: Stack, people: str) -> None:
    table = table_name("kb_people")
    rows = pg_rows(stack.database("docdb"), f'SELECT dataset, file FROM "{table}"')
    assert {(r["dataset"], r["file"]) for r in rows} == {("people", "curie.txt"), ("people", "hopper.txt")}

    for mode in ("naive", "rerank", "rewriter", "multihop", "direct"):
        answer = httpx.post(
            f"{stack.url}/api/v1/docdb/chat",
            json={
                "query": "Who developed the first compiler?",
                "kb_id": people,
                "user_id": "u",
                "query_mode": mode,
            },
            timeout=60,
        ).json()
        assert answer["code"] == 200, (mode, answer)
        if mode == "direct":  # the model answers alone: nothing retrieved, nothing cited
            assert answer["citations"] == [], answer
            continue
        assert "Grace Hopper" in answer["response"], (mode, answer["response"])
        cited = {c["source_file"] for c in answer["citations"]}
        assert "hopper.txt" in cited, (mode, answer["citations"])
        # Files live in S3: each citation links to its object.
        assert all(c["file_url"] and "lore-files" in c["file_url"] for c in answer["citations"])


def test_vg_memories_live_in_pgvector_with_their_history(stack: Stack) -> None:
    with httpx.Client(base_url=stack.url + VG, timeout=60) as client:
        said = "I live in Lisbon and I love surfing."
        added = client.post("/add", json={"messages": [{"role": "user", "content": said}], "user_id": "ana"})
        [item] = added.json()["results"]
        client.post(
            "/add", json={"messages": [{"role": "user", "content": "I live in Oslo."}], "user_id": "bo"}
        )
        found = client.post("/search", json={"query": "where does she surf", "user_id": "ana"}).json()
        assert [r["id"] for r in found["results"]] == [item["id"]]  # bo's memory stays in bo's scope
        assert (
            client.put(f"/{item['id']}", json={"data": "I moved to Porto; still surfing."}).status_code == 200
        )
        assert client.get(f"/{item['id']}").json()["memory"] == "I moved to Porto; still surfing."
        listed = client.get("", params={"user_id": "ana"}).json()["results"]
        assert [m["id"] for m in listed] == [item["id"]]
        assert client.delete(f"/{item['id']}").status_code == 200
        assert client.get(f"/{item['id']}").status_code == 404
        history = client.get(f"/{item['id']}/history").json()
        assert [h["event"] for h in history] == ["ADD", "UPDATE", "DELETE"]
    rows = pg_rows(stack.database("mem"), f'SELECT user_id FROM "{table_name("memoryvg")}"')
    assert [r["user_id"] for r in rows] == ["bo"]


def test_kb_memory_insert_and_query(stack: Stack) -> None:
    fact = "The orchard behind the old mill grows forty quince trees."
    job = httpx.post(f"{stack.url}{KB_MEM}/insert", files={"query": (None, fact)}, timeout=30)
    assert job.status_code == 202
    deadline = time.monotonic() + 30
    while (status := httpx.get(f"{stack.url}{KB_MEM}/insert/{job.json()['id']}", timeout=10).json())[
        "status"
    ] != "done":
        assert status["status"] in ("accepted", "processing") and time.monotonic() < deadline, status
        time.sleep(0.1)
    answer = httpx.post(f"{stack.url}{KB_MEM}/query", json={"query": "How many quince trees?"}, timeout=30)
    assert answer.status_code == 200 and "forty quince" in answer.json()["final_answer"]


def test_gen_table_grounded_in_the_kb(stack: Stack, people: str) -> None:
    with httpx.Client(base_url=f"{stack.url}/api/v1/gen/pipeline", timeout=60) as client:
        submitted = client.post(
            "/submit",
            json={"question": "What do we know about Marie Curie and Grace Hopper?", "kb_name": people},
        )
        assert submitted.status_code == 200, submitted.text
        deadline = time.monotonic() + 120
        while (done := client.get(f"/status/{submitted.json()['task_id']}").json())["status"] not in (
            "completed",
            "failed",
        ):
            assert time.monotonic() < deadline, done
            time.sleep(0.2)
    assert done["status"] == "completed", done
    rows = {row["name"]: row for row in done["result"]["csv_data"]}
    # Each row's evidence is a sentence of the KB's own files, found through pgvector and the graph.
    assert rows["Grace Hopper"]["evidence"] and rows["Grace Hopper"]["evidence"] in HOPPER
    assert rows["Marie Curie"]["evidence"] and rows["Marie Curie"]["evidence"] in CURIE
    assert done["result"]["query_results"]
