"""Two replicas of each service on shared stores (PostgreSQL + pgvector, one FalkorDB server, S3)
behind the gateway, as `just up-postgres --replicas 2` starts them: work begun on one replica is
finished or read on the other, and the gateway keeps answering while a replica is down."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil
import pytest

from lore_common.servers import database_url
from lore_common.stores.pgvector import table_name
from lore_common.testing.flows import CURIE, HOPPER
from lore_common.testing.processes import (
    ServerProcess,
    drop_stack_databases,
    pg_rows,
    start_servers_stack,
    wait_task,
)

ROOT = Path(__file__).resolve().parents[2]
DS = "/api/v1/docdb/files/raw-files/datasets"
KB = "/api/v1/docdb/files/knowledge-bases"
GEN = "/api/v1/gen/pipeline"
INTERNAL = {"x-lore-internal-token": "replicas-internal-token"}

pytestmark = pytest.mark.postgres


@dataclass
class Cluster:
    url: str
    docdb: list[str]
    gen: list[str]
    mem: list[str]
    launcher: ServerProcess
    admin_url: str
    prefix: str
    work: Path

    def replica_pid(self, service: str, url: str) -> int:
        """The process `lore-up` started for the replica of `service` at `url`."""
        port = url.rsplit(":", 1)[1]
        for child in psutil.Process(self.launcher.pid).children(recursive=True):
            command = child.cmdline()
            own = child.environ().get(f"LORE__{service.upper()}__SERVER__PORT")
            if command[-2:] == ["-m", f"lore_{service}"] and own == port:
                return int(child.pid)
        raise AssertionError(f"no {service} replica at {url}")


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, pgvector_server: str, moto_s3: str
) -> Iterator[Cluster]:
    work = tmp_path_factory.mktemp("replicas")
    prefix = f"lore_rep_{uuid.uuid4().hex[:8]}"
    env = {
        # Known here: the tests call replicas straight, past the gateway, with the internal credential.
        "LORE__SECURITY__INTERNAL_TOKEN": INTERNAL["x-lore-internal-token"],
        "LORE__GATEWAY__HEALTH_INTERVAL": "0.5",
        "LORE__DOCDB__EMBEDDING_API__PROVIDER": "hashing",
        "LORE__DOCDB__EMBEDDING_API__DIM": "64",
        "LORE__DOCDB__TASK_HEARTBEAT_INTERVAL": "0.3",
        "LORE__DOCDB__TASK_STALE_AFTER": "3",
        "LORE__DOCDB__UPLOAD_SWEEP_INTERVAL": "0.5",
    }
    stack = start_servers_stack(
        work, ROOT / "config", pgvector_server, prefix, s3_endpoint=moto_s3, replicas=2, env=env, timeout=180
    )
    try:
        yield Cluster(
            stack.url,
            stack.replica_urls("docdb", 2),
            stack.replica_urls("gen", 2),
            stack.replica_urls("mem", 2),
            stack.process,
            pgvector_server,
            prefix,
            work,
        )
    finally:
        stack.process.stop()
        drop_stack_databases(pgvector_server, prefix)


def test_the_gateway_sees_two_replicas_of_each_service(cluster: Cluster) -> None:
    services = httpx.get(f"{cluster.url}/health", timeout=10).json()["services"]
    for name, urls in (("docdb", cluster.docdb), ("gen", cluster.gen), ("mem", cluster.mem)):
        assert [(r["url"], r["status"]) for r in services[name]["replicas"]] == [(u, "up") for u in urls]


def test_a_kb_insert_on_one_mem_replica_is_queried_on_the_other(cluster: Cluster) -> None:
    a, b = (httpx.Client(base_url=u, timeout=60, headers=INTERNAL) for u in cluster.mem)
    fact = "The Kestrel ferry to Skye leaves pier 7 at 06:40 every Tuesday."
    job = a.post("/api/v1/mem/kb/insert", files={"query": (None, fact)}).json()
    deadline = time.monotonic() + 60
    while (status := b.get(f"/api/v1/mem/kb/insert/{job['id']}").json())["status"] not in ("done", "failed"):
        assert time.monotonic() < deadline, status
        time.sleep(0.1)
    assert status["status"] == "done" and status["chunks"] == 1, status
    # Done on B's reading means queryable on B (and on A), in every mode that reads chunks.
    for client in (b, a):
        for mode in ("naive", "local", "hybrid"):
            answer = client.post(
                "/api/v1/mem/kb/query", json={"query": "Kestrel ferry Skye pier", "mode": mode}
            )
            assert fact in answer.json()["rag_memory"], (mode, answer.text)


def test_twenty_concurrent_vg_adds_over_both_mem_replicas_store_each_fact_once(cluster: Cluster) -> None:
    facts = [f"My storage unit number is {n}" for n in range(4)]

    async def add_all() -> list[int]:
        async with httpx.AsyncClient(timeout=60, headers=INTERNAL) as client:
            replies = await asyncio.gather(
                *(
                    client.post(
                        f"{cluster.mem[(i // len(facts)) % 2]}/api/v1/mem/vg/add",
                        json={
                            "messages": [{"role": "user", "content": facts[i % len(facts)]}],
                            "user_id": "replicated",
                            "infer": i >= 12,
                        },
                    )
                    for i in range(20)
                )
            )
        return [r.status_code for r in replies]

    assert asyncio.run(add_all()) == [200] * 20
    for url in cluster.mem:
        stored = httpx.get(
            f"{url}/api/v1/mem/vg", params={"user_id": "replicated"}, timeout=30, headers=INTERNAL
        ).json()
        assert sorted(m["memory"] for m in stored["results"]) == sorted(facts)


def test_a_chunked_upload_spread_over_both_replicas_then_parse_on_one_and_chat_on_both(
    cluster: Cluster,
) -> None:
    a, b = (httpx.Client(base_url=u, timeout=60, headers=INTERNAL) for u in cluster.docdb)
    body = f"{CURIE}\n\n{HOPPER}\n".encode()
    assert a.post(DS, json={"name": "people"}).status_code == 200
    size = -(-len(body) // 3)
    init = a.post(
        f"{DS}/people/upload/init",
        json={"filename": "people.txt", "total_chunks": 3, "total_size": len(body)},
    )
    upload_id = init.json()["upload_id"]
    for index, client in enumerate((a, b, a)):  # chunk i at replica A, chunk j at replica B
        chunk = body[index * size : (index + 1) * size]
        r = client.post(f"{DS}/people/upload/{upload_id}/chunk", params={"chunk_index": index}, content=chunk)
        assert r.status_code == 200, r.text
    done = b.post(f"{DS}/people/upload/{upload_id}/complete")  # completed at the other one
    assert done.status_code == 200 and done.json()["data"] == {"filename": "people.txt", "size": len(body)}

    # A `complete` sent to both replicas at once merges once: one answers 200, the other finds the
    # session gone (404), and the file is whole.
    again = a.post(
        f"{DS}/people/upload/init", json={"filename": "twice.txt", "total_chunks": 1, "total_size": 4}
    )
    twice = again.json()["upload_id"]
    assert (
        b.post(f"{DS}/people/upload/{twice}/chunk", params={"chunk_index": 0}, content=b"abcd").status_code
        == 200
    )
    statuses = sorted(asyncio.run(_complete_on_both(cluster.docdb, f"{DS}/people/upload/{twice}/complete")))
    assert statuses == [200, 404]
    listed = {f["name"]: f["size"] for f in a.get(f"{DS}/people/files").json()["files"]}
    assert listed["twice.txt"] == 4
    # Each replica has a disk of its own, as pods without a shared volume: the files are in S3 only.
    data = cluster.work / "data"
    assert (data / "docdb").is_dir() and (data / "docdb-2").is_dir()
    assert not (data / "docdb" / "raw").exists() and not (data / "docdb-2" / "raw").exists()

    assert a.post(KB, json={"name": "people"}).status_code == 200
    parse = a.post(f"{KB}/people/parse", json={"datasets": ["people"]}).json()
    task = wait_task(b, parse["data"]["tasks"][0]["task_id"], timeout=120)  # followed on B
    assert task["status"] == "completed", task
    for client in (a, b):
        answer = client.post(
            "/api/v1/docdb/chat",
            json={"query": "Who developed the first compiler?", "kb_id": "people", "user_id": "u"},
        ).json()
        assert "Grace Hopper" in answer["response"] and answer["citations"][0]["source_file"] == "people.txt"


async def _complete_on_both(replicas: list[str], path: str) -> list[int]:
    async with httpx.AsyncClient(timeout=60, headers=INTERNAL) as client:
        replies = await asyncio.gather(*(client.post(f"{url}{path}") for url in replicas))
    return [r.status_code for r in replies]


def test_a_gen_task_submitted_on_one_replica_is_read_on_the_other(cluster: Cluster) -> None:
    submitted = httpx.post(
        f"{cluster.gen[0]}{GEN}/submit",
        json={"question": "What do we know about Marie Curie and Grace Hopper?", "kb_name": "people"},
        timeout=30,
        headers=INTERNAL,
    )
    assert submitted.status_code == 200, submitted.text
    task_id = submitted.json()["task_id"]
    deadline = time.monotonic() + 120
    while (
        status := httpx.get(f"{cluster.gen[1]}{GEN}/status/{task_id}", timeout=10, headers=INTERNAL).json()
    )["status"] not in (
        "completed",
        "failed",
    ):
        assert time.monotonic() < deadline, status
        time.sleep(0.2)
    assert status["status"] == "completed", status
    assert {row["name"] for row in status["result"]["csv_data"]} >= {"Marie Curie", "Grace Hopper"}


def test_a_replica_killed_mid_parse_loses_nothing_and_the_gateway_keeps_answering(cluster: Cluster) -> None:
    text = " ".join(f"Sentence {n} of a long report about harbour number {n % 13}." for n in range(20000))
    with httpx.Client(base_url=cluster.url, timeout=60) as client:
        assert client.post(DS, json={"name": "harbours"}).status_code == 200
        files = {"files": ("harbours.txt", text.encode())}
        assert client.post(f"{DS}/harbours/files", files=files).status_code == 200
        assert client.post(KB, json={"name": "harbours"}).status_code == 200
        parse = client.post(f"{KB}/harbours/parse", json={"datasets": ["harbours"]}).json()
        task_id = parse["data"]["tasks"][0]["task_id"]
        deadline = time.monotonic() + 30
        while client.get(f"/api/v1/docdb/files/processing/tasks/{task_id}").json()["status"] == "pending":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.killpg(cluster.replica_pid("docdb", cluster.docdb[0]), signal.SIGKILL)  # as when a node dies
        # The gateway answers every docdb request while one replica is down.
        for _ in range(20):
            assert client.get(KB).status_code == 200
        task = wait_task(client, task_id, timeout=120)
    # Taken over or failed and rolled back: either way nothing half-done stays.
    docdb_db, table = database_url(cluster.admin_url, f"{cluster.prefix}_docdb"), table_name("kb_harbours")
    exists = pg_rows(docdb_db, f"SELECT to_regclass('\"{table}\"') IS NOT NULL")[0][0]
    vectors = pg_rows(docdb_db, f'SELECT count(*) FROM "{table}"')[0][0] if exists else 0
    if task["status"] == "completed":
        assert vectors > 0
    else:
        assert task["status"] == "failed" and "interrupted" in task["error"], task
        assert vectors == 0  # rolled back: no vector of the task is left
    # lore-up brought the killed replica back.
    deadline = time.monotonic() + 60
    while not _alive(cluster.docdb[0]):
        assert time.monotonic() < deadline, cluster.launcher.log_tail()
        time.sleep(0.5)
    assert "lore: docdb-1 exited with code -9; restarting in 1 s" in cluster.launcher.log_path.read_text()


def _alive(url: str) -> bool:
    try:
        return httpx.get(f"{url}/livez", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False
