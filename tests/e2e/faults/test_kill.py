"""kill -9 (the whole process group, as when a container dies) in the middle of work, then restart:
nothing stuck in a running state, no half-written data visible, every acknowledged write kept.
(docdb killed mid-parse: tests/e2e/test_docdb_crash.py.)"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from lore_common.testing.processes import (
    ServerProcess,
    free_port,
    model_env,
    poll_status,
    python_module,
    start_service,
)

pytestmark = pytest.mark.spread  # independent tests: xdist hands them out one by one

KB = "/api/v1/docdb/files/knowledge-bases"
DS = "/api/v1/docdb/files/raw-files/datasets"


def in_flight(method: str, url: str, **kwargs: Any) -> None:
    """Send a request from a thread; the kill cuts it off, which is the point."""

    def send() -> None:
        with contextlib.suppress(httpx.HTTPError):
            httpx.request(method, url, timeout=30, **kwargs)

    threading.Thread(target=send, daemon=True).start()


def kill9(process: ServerProcess) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.process.wait(10)


def test_gen_killed_during_a_table_task(tmp_path: Path, slow_llm: str) -> None:
    (tmp_path / "config").mkdir()
    env = {
        **model_env("LORE__GEN__LLM", slow_llm),
        "LORE__GEN__DOCDB_URL": f"http://127.0.0.1:{free_port()}",
        # Resuming off: the cut task fails (on, the default, it runs again: test_model_resume.py).
        "LORE__GEN__RESUME_INTERRUPTED": "false",
    }
    gen, url = start_service("gen", tmp_path, env)
    with httpx.Client(base_url=url, timeout=30) as client:
        task = client.post("/api/v1/gen/pipeline/submit", json={"question": "Compare: Alpha, Beta"}).json()
        task_path = f"/api/v1/gen/pipeline/status/{task['task_id']}"
        assert poll_status(client, task_path, {"running"})["status"] == "running"
    kill9(gen)
    gen, url = start_service("gen", tmp_path, env)
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            status = client.get(f"/api/v1/gen/pipeline/status/{task['task_id']}").json()
            assert status["status"] == "failed" and "interrupted" in status["error"]
        assert not list((tmp_path / "gen" / "tasks" / "table").glob("*.tmp"))
    finally:
        gen.stop()


def test_mem_killed_during_kb_insert_and_vg_add(tmp_path: Path, slow_llm: str) -> None:
    (tmp_path / "config").mkdir()
    env = {
        **model_env("LORE__MEM__MEMORYKB__LLM", slow_llm),
        "LORE__MEM__MEMORYKB__EMBEDDING__PROVIDER": "hashing",
        "LORE__MEM__EMBEDDING_API__PROVIDER": "hashing",
        # Resuming off: the cut insert fails (on, the default, it runs again: test_model_resume.py).
        "LORE__MEM__MEMORYKB__RESUME_INTERRUPTED": "false",
    }
    mem, url = start_service("mem", tmp_path, env)
    with httpx.Client(base_url=url, timeout=30) as client:
        # Acknowledged writes before the crash: a vg memory (offline model) and a finished kb insert.
        vg = client.post(
            "/api/v1/mem/vg/add",
            json={
                "messages": [{"role": "user", "content": "I keep my bicycle in the blue shed."}],
                "user_id": "u",
            },
        ).json()
        kept = client.post(
            "/api/v1/mem/kb/insert", files={"query": (None, "The Kestrel bridge opened in 1931.")}
        )
        kept_path = f"/api/v1/mem/kb/insert/{kept.json()['id']}"
        assert poll_status(client, kept_path, {"done", "failed"})["status"] == "done"
        cut = client.post(
            "/api/v1/mem/kb/insert", files={"query": (None, "The Osprey tunnel closed in 1999.")}
        )
        assert (
            poll_status(client, f"/api/v1/mem/kb/insert/{cut.json()['id']}", {"processing"})["status"]
            == "processing"
        )
        # A vg add in flight when the process dies.
        in_flight(
            "POST",
            f"{url}/api/v1/mem/vg/add",
            json={"messages": [{"role": "user", "content": "My locker code is 4411."}], "user_id": "u"},
        )
        time.sleep(0.05)
    kill9(mem)
    mem, url = start_service("mem", tmp_path, env)
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            job = client.get(f"/api/v1/mem/kb/insert/{cut.json()['id']}").json()
            assert job["status"] == "failed" and "interrupted" in job["error"]
            answer = client.post(
                "/api/v1/mem/kb/query", json={"query": "Kestrel bridge", "mode": "naive"}
            ).json()
            assert "1931" in answer["rag_memory"] and "Osprey" not in answer["rag_memory"]
            memories = client.get("/api/v1/mem/vg", params={"user_id": "u"}).json()["results"]
            texts = [m["memory"] for m in memories]
            assert vg["results"][0]["memory"] in texts
            for memory in memories:  # whatever the crash left is whole: readable, with its history
                assert client.get(f"/api/v1/mem/vg/{memory['id']}").status_code == 200
                history = client.get(f"/api/v1/mem/vg/{memory['id']}/history").json()
                assert history and history[0]["event"] == "ADD"
    finally:
        mem.stop()


def test_gateway_reports_a_killed_downstream_then_recovers_without_a_restart(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    gen_port, gateway_port = free_port(), free_port()
    gen, gen_url = start_service("gen", tmp_path, port=gen_port)
    gateway = ServerProcess(
        python_module("lore_gateway"),
        env={
            "LORE_CONFIG_DIR": str(tmp_path / "config"),
            "LORE__GATEWAY__PORT": str(gateway_port),
            "LORE__GATEWAY__GEN_URL": gen_url,
        },
        log_path=tmp_path / "gateway.log",
    )
    base = f"http://127.0.0.1:{gateway_port}"
    try:
        gateway.wait_healthy(f"{base}/")
        path = f"{base}/api/v1/gen/tag-tree/status/none"
        assert httpx.get(path, timeout=10).status_code == 404
        kill9(gen)
        down = httpx.get(path, timeout=10)
        assert down.status_code == 502 and down.json()["service"] == "gen"
        gen, _ = start_service("gen", tmp_path, port=gen_port)
        assert httpx.get(path, timeout=10).status_code == 404  # the same gateway process reaches it again
        assert gateway.process.poll() is None
    finally:
        gateway.stop()
        gen.stop()


def docdb_env() -> dict[str, str]:
    return {"LORE__DOCDB__EMBEDDING_API__PROVIDER": "hashing", "LORE__DOCDB__GRAPH_STORE__ENABLED": "false"}


def test_docdb_killed_during_a_chunked_upload_complete(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    docdb, url = start_service("docdb", tmp_path, docdb_env())
    payload = os.urandom(8 * 1024 * 1024)
    chunk = 256 * 1024
    with httpx.Client(base_url=url, timeout=60) as client:
        client.post(DS, json={"name": "media"})
        init = client.post(
            f"{DS}/media/upload/init",
            json={"filename": "clip.bin", "total_chunks": len(payload) // chunk, "total_size": len(payload)},
        ).json()
        upload = f"{DS}/media/upload/{init['upload_id']}"
        for i in range(len(payload) // chunk):
            client.post(
                f"{upload}/chunk", params={"chunk_index": i}, content=payload[i * chunk : (i + 1) * chunk]
            )
    in_flight("POST", f"{url}{upload}/complete")
    time.sleep(0.02)
    kill9(docdb)
    docdb, url = start_service("docdb", tmp_path, docdb_env())
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            names = [f["name"] for f in client.get(f"{DS}/media/files").json()["files"]]
            if "clip.bin" not in names:  # killed before the file was published: the session is still whole
                assert names == []
                assert client.post(f"{upload}/complete").status_code == 200
            assert (tmp_path / "docdb" / "raw" / "media" / "clip.bin").read_bytes() == payload
            assert [f["name"] for f in client.get(f"{DS}/media/files").json()["files"]] == ["clip.bin"]
        assert not list((tmp_path / "docdb" / "raw" / "media").glob(".tmp-*"))
    finally:
        docdb.stop()


def test_docdb_killed_during_a_kb_deletion_finishes_it_after_restart(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    docdb, url = start_service("docdb", tmp_path, docdb_env())
    text = " ".join(f"Paragraph {n} describes lighthouse number {n}." for n in range(4000))
    with httpx.Client(base_url=url, timeout=60) as client:
        client.post(DS, json={"name": "notes"})
        client.post(f"{DS}/notes/files", files={"files": ("notes.txt", text.encode())})
        client.post(KB, json={"name": "doomed"})
        task = client.post(f"{KB}/doomed/parse", json={"datasets": ["notes"]}).json()["data"]["tasks"][0]
        task_path = f"/api/v1/docdb/files/processing/tasks/{task['task_id']}"
        assert poll_status(client, task_path, {"completed"})["status"] == "completed"
        collections = tmp_path / "docdb" / "qdrant" / "edge"  # one Qdrant Edge shard per collection
        assert any(p.name.endswith("doomed") for p in collections.iterdir())
        assert client.delete(f"{KB}/doomed").status_code == 202
    kill9(docdb)
    docdb, url = start_service("docdb", tmp_path, docdb_env())
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            deadline = time.monotonic() + 30
            while client.get(f"{KB}/doomed").status_code != 404:
                assert time.monotonic() < deadline, client.get(f"{KB}/doomed").text
                time.sleep(0.1)
            assert client.get(KB).json()["data"] == []
        assert not any(p.name.endswith("doomed") for p in collections.iterdir())
    finally:
        docdb.stop()
