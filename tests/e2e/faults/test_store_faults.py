"""Store faults: PostgreSQL, the graph store or object storage going away mid-service (503 naming the
store, background work waiting for it, then recovery when it returns, with no restart) and a full disk
during an upload (507, no partial file)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

from lore_common.servers import falkordb
from lore_common.testing.flows import CURIE, DS, HOPPER
from lore_common.testing.processes import free_port, model_env, poll_status, start_service, wait_task
from lore_common.testing.tcp_proxy import TcpProxy

pytestmark = pytest.mark.spread  # independent tests: xdist hands them out one by one

KB = "/api/v1/docdb/files/knowledge-bases"
CHAT = "/api/v1/docdb/chat"


@pytest.mark.postgres
def test_postgresql_stopping_answers_503_and_service_recovers_when_it_returns(
    tmp_path: Path, postgres_url: str
) -> None:
    proxy, through_proxy = _proxied(postgres_url)
    (tmp_path / "config").mkdir()
    docdb, url = start_service(
        "docdb",
        tmp_path,
        {"LORE__DOCDB__DATABASE__URL": through_proxy, "LORE__DOCDB__EMBEDDING_API__PROVIDER": "hashing"},
    )
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            assert client.post(KB, json={"name": "before"}).status_code == 200
            proxy.stop()
            down = client.get(KB)
            assert down.status_code == 503, down.text
            assert "relational store is unavailable" in down.json()["message"]
            assert client.get("/health").status_code == 503
            # Liveness says the process is fine, so an orchestrator does not restart it in a loop.
            assert client.get("/livez").json() == {"status": "alive", "service": "docdb"}
            proxy.start()
            deadline = time.monotonic() + 20
            while (again := client.get(KB)).status_code != 200:
                assert time.monotonic() < deadline, again.text
                time.sleep(0.2)
            assert [kb["name"] for kb in again.json()["data"]] == ["before"]
            assert client.post(KB, json={"name": "after"}).status_code == 200
    finally:
        docdb.stop()
        proxy.close()


def _proxied(postgres_url: str) -> tuple[TcpProxy, str]:
    """A TCP proxy in front of PostgreSQL, and the database's URL through it."""
    parts = urlsplit(postgres_url)
    proxy = TcpProxy(parts.hostname or "127.0.0.1", parts.port or 5432).start()
    return proxy, urlunsplit(parts._replace(netloc=f"{parts.username or ''}@127.0.0.1:{proxy.port}"))


def _until(
    client: httpx.Client, path: str, holds: Callable[[dict[str, Any]], bool], limit: float
) -> dict[str, Any]:
    deadline = time.monotonic() + limit
    while not holds(body := client.get(path).json()):
        assert time.monotonic() < deadline, body
        time.sleep(0.1)
    return body


@pytest.mark.postgres
def test_a_kb_insert_waits_out_a_postgresql_outage_and_completes(
    tmp_path: Path, postgres_url: str, slow_llm: str
) -> None:
    """mem's kb insert cut off from PostgreSQL while its model answers: the job stays `processing`
    saying what it waits for, runs again when the store returns, and its memory answers."""
    proxy, through_proxy = _proxied(postgres_url)
    (tmp_path / "config").mkdir()
    mem, url = start_service(
        "mem",
        tmp_path,
        {
            **model_env("LORE__MEM__MEMORYKB__LLM", slow_llm),
            "LORE__MEM__DATABASE__URL": through_proxy,
            "LORE__MEM__MEMORYKB__EMBEDDING__PROVIDER": "hashing",
            "LORE__MEM__EMBEDDING_API__PROVIDER": "hashing",
        },
    )
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            job = client.post(
                "/api/v1/mem/kb/insert", files={"query": (None, "The Kestrel bridge opened in 1931.")}
            ).json()
            path = f"/api/v1/mem/kb/insert/{job['id']}"
            assert poll_status(client, path, {"processing"})["status"] == "processing"
            proxy.stop()
            waiting = _until(client, path, lambda body: bool(body.get("waiting_for")), 30)
            assert waiting["status"] == "processing"
            assert "relational store is unavailable" in waiting["waiting_for"]
            down = client.post("/api/v1/mem/kb/query", json={"query": "Kestrel bridge", "mode": "hybrid"})
            assert down.status_code == 503 and "relational store is unavailable" in down.json()["message"]
            proxy.start()
            done = poll_status(client, path, {"done", "failed"}, 60)
            assert done["status"] == "done" and done["chunks"] == 1, done
            answer = client.post("/api/v1/mem/kb/query", json={"query": "Kestrel bridge", "mode": "naive"})
            assert "1931" in answer.json()["rag_memory"]
    finally:
        mem.stop()
        proxy.close()


@pytest.mark.postgres
def test_a_table_task_waits_out_a_postgresql_outage_and_completes(
    tmp_path: Path, postgres_url: str, slow_llm: str
) -> None:
    """gen's table task cut off from PostgreSQL (where its table is written): it shows step `waiting`
    with the reason, runs again when the store returns and completes with its rows and SQL."""
    proxy, through_proxy = _proxied(postgres_url)
    (tmp_path / "config").mkdir()
    gen, url = start_service(
        "gen",
        tmp_path,
        {
            **model_env("LORE__GEN__LLM", slow_llm),
            "LORE__GEN__DATABASE__URL": through_proxy,
            "LORE__GEN__DOCDB_URL": f"http://127.0.0.1:{free_port()}",
        },
    )
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            task = client.post(
                "/api/v1/gen/pipeline/submit", json={"question": "Compare: Alpha, Beta"}
            ).json()
            path = f"/api/v1/gen/pipeline/status/{task['task_id']}"
            assert poll_status(client, path, {"running"})["status"] == "running"
            proxy.stop()
            waiting = _until(client, path, lambda body: body.get("step_name") == "waiting", 30)
            assert waiting["status"] == "running"
            assert "relational store is unavailable" in waiting["progress"]["waiting_for"]
            proxy.start()
            done = poll_status(client, path, {"completed", "failed"}, 60)
            assert done["status"] == "completed", done
            assert done["result"]["sql"] and len(done["result"]["csv_data"]) == 2
    finally:
        gen.stop()
        proxy.close()


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An 8 MiB tmpfs: a disk that fills up (needs the right to mount, as root in CI)."""
    mount_point = tmp_path / "small"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount_point)],
        capture_output=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def test_a_full_disk_during_upload_is_507_and_leaves_no_partial_file(
    tmp_path: Path, small_disk: Path
) -> None:
    (tmp_path / "config").mkdir()
    docdb, url = start_service(
        "docdb",
        tmp_path,
        {
            "LORE__DOCDB__SERVER__DATA_DIR": str(small_disk),
            "LORE__DOCDB__EMBEDDING_API__PROVIDER": "hashing",
            "LORE__DOCDB__GRAPH_STORE__ENABLED": "false",
        },
    )
    datasets = "/api/v1/docdb/files/raw-files/datasets"
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            assert client.post(datasets, json={"name": "big"}).status_code == 200
            assert (
                client.post(f"{datasets}/big/files", files={"files": ("small.txt", b"fits")}).status_code
                == 200
            )
            full = client.post(
                f"{datasets}/big/files", files={"files": ("huge.bin", b"\0" * (12 * 1024 * 1024))}
            )
            assert full.status_code == 507, full.text
            assert "disk is full" in full.json()["message"]
            listed = client.get(f"{datasets}/big/files").json()["files"]
            assert [f["name"] for f in listed] == ["small.txt"]
            assert not list((small_disk / "raw" / "big").glob(".tmp-*"))
            # Space comes back: the next upload works.
            assert (
                client.post(f"{datasets}/big/files", files={"files": ("again.txt", b"ok")}).status_code == 200
            )
    finally:
        docdb.stop()


def _until_waiting(client: httpx.Client, task_id: str, limit: float) -> None:
    """Until the parse shows stage `waiting` (it holds for a store), never having ended."""
    deadline = time.monotonic() + limit
    while (state := client.get(f"/api/v1/docdb/files/processing/tasks/{task_id}").json())[
        "stage"
    ] != "waiting":
        assert state["status"] in ("pending", "running") and time.monotonic() < deadline, state
        time.sleep(0.2)


def test_the_graph_store_going_away_answers_503_parses_wait_and_all_recovers(tmp_path: Path) -> None:
    """A FalkorDB server cut off by a proxy: routes that need the graph answer 503 naming it at once,
    `/health` says it is down, a parse started meanwhile waits (stage `waiting`) instead of failing,
    and when the store returns the parse completes and every route answers, with no restart."""
    (tmp_path / "config").mkdir()
    graph_port = free_port()
    with falkordb(tmp_path, graph_port):
        proxy = TcpProxy("127.0.0.1", graph_port).start()
        docdb, url = start_service(
            "docdb",
            tmp_path,
            {
                "LORE__DOCDB__GRAPH_STORE__URL": f"falkordb://127.0.0.1:{proxy.port}",
                "LORE__DOCDB__GRAPH_STORE__ENABLED": "true",
                "LORE__DOCDB__EMBEDDING_API__PROVIDER": "hashing",
            },
        )
        try:
            with httpx.Client(base_url=url, timeout=30) as client:
                for name, text in (("before", CURIE), ("during", HOPPER)):
                    client.post(DS, json={"name": name})
                    client.post(f"{DS}/{name}/files", files={"files": (f"{name}.txt", text.encode())})
                    client.post(KB, json={"name": name})
                first = client.post(f"{KB}/before/parse", json={"datasets": ["before"]}).json()
                done = wait_task(client, first["data"]["tasks"][0]["task_id"], timeout=60)
                assert done["status"] == "completed", done
                entities = client.get(f"{KB}/before/graph").json()["total_nodes"]
                assert entities > 0

                proxy.stop()
                started = time.monotonic()
                down = client.get(f"{KB}/before/overview")
                assert down.status_code == 503 and "graph store is unavailable" in down.json()["message"]
                assert time.monotonic() - started < 5
                health = client.get("/health")
                assert health.status_code == 503 and health.json()["checks"]["graph"]["status"] == "down"
                chat = client.post(
                    CHAT, json={"query": "Who discovered polonium?", "kb_id": "before", "user_id": "u"}
                )
                assert chat.json()["code"] == 500 and "graph store is unavailable" in chat.json()["message"]

                waiting = client.post(f"{KB}/during/parse", json={"datasets": ["during"]}).json()
                task_id = waiting["data"]["tasks"][0]["task_id"]
                _until_waiting(client, task_id, 30)

                proxy.start()
                finished = wait_task(client, task_id, timeout=90)
                assert finished["status"] == "completed", finished
                assert client.get("/health").status_code == 200
                assert client.get(f"{KB}/before/graph").json()["total_nodes"] == entities  # nothing lost
                assert client.get(f"{KB}/during/graph").json()["total_nodes"] > 0
                answer = client.post(
                    CHAT,
                    json={"query": "Who developed the first compiler?", "kb_id": "during", "user_id": "u"},
                ).json()
                assert answer["success"] and "Grace Hopper" in answer["response"]
        finally:
            docdb.stop()
            proxy.close()


def test_object_storage_going_away_fails_uploads_cleanly_and_parses_wait_for_it(
    tmp_path: Path, moto_s3: str
) -> None:
    """S3 behind a proxy: a simple upload while it is away answers 500 naming it and keeps nothing (the
    contract's rule), a parse started meanwhile waits for it, and when it returns the parse completes
    and answers, with no restart."""
    (tmp_path / "config").mkdir()
    s3 = urlsplit(moto_s3)
    proxy = TcpProxy(s3.hostname or "127.0.0.1", s3.port or 80).start()
    docdb, url = start_service(
        "docdb",
        tmp_path,
        {
            "LORE__DOCDB__OBJECT_STORAGE__BUCKET": f"outage-{time.monotonic_ns()}",
            "LORE__DOCDB__OBJECT_STORAGE__ENDPOINT_URL": f"http://127.0.0.1:{proxy.port}",
            "LORE__DOCDB__OBJECT_STORAGE__ACCESS_KEY": "testing",
            "LORE__DOCDB__OBJECT_STORAGE__SECRET_KEY": "testing",
            "LORE__DOCDB__EMBEDDING_API__PROVIDER": "hashing",
        },
    )
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            client.post(DS, json={"name": "people"})
            stored = client.post(f"{DS}/people/files", files={"files": ("hopper.txt", HOPPER.encode())})
            assert stored.status_code == 200, stored.text
            client.post(KB, json={"name": "people"})

            proxy.stop()
            refused = client.post(f"{DS}/people/files", files={"files": ("curie.txt", CURIE.encode())})
            assert refused.status_code == 500 and "object storage" in refused.json()["message"].lower()
            names = [f["name"] for f in client.get(f"{DS}/people/files").json()["files"]]
            assert names == ["hopper.txt"]  # nothing half-stored
            parse = client.post(f"{KB}/people/parse", json={"datasets": ["people"], "mode": 1}).json()
            task_id = parse["data"]["tasks"][0]["task_id"]
            _until_waiting(client, task_id, 60)

            proxy.start()
            finished = wait_task(client, task_id, timeout=90)
            assert finished["status"] == "completed", finished
            answer = client.post(
                CHAT, json={"query": "Who developed the first compiler?", "kb_id": "people", "user_id": "u"}
            ).json()
            assert answer["success"] and answer["citations"][0]["source_file"] == "hopper.txt"
    finally:
        docdb.stop()
        proxy.close()
