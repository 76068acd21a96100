"""A docdb process killed mid-parse, with `docdb.resume_interrupted` off: after a restart the task is
failed ("interrupted"), nothing of it is left in the stores, and a forced re-parse succeeds. (With it on,
the default, the task resumes: tests/e2e/test_model_resume.py.)"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from lore_common.testing.processes import ServerProcess, free_port

DS = "/api/v1/docdb/files/raw-files/datasets"
KB = "/api/v1/docdb/files/knowledge-bases"
TASKS = "/api/v1/docdb/files/processing/tasks"


def start_docdb(tmp: Path, port: int, llm_url: str, log: str) -> ServerProcess:
    env = {
        "LORE_CONFIG_DIR": str(tmp / "config"),
        "LORE__DOCDB__SERVER__PORT": str(port),
        "LORE__DOCDB__SERVER__DATA_DIR": str(tmp / "docdb"),
        "LORE__DOCDB__EMBEDDING_API__PROVIDER": "hashing",
        "LORE__DOCDB__LLM__PROVIDER": "openai",
        "LORE__DOCDB__LLM__BASE_URL": llm_url,
        "LORE__DOCDB__LLM__MAX_CONCURRENT_REQUESTS": "1",
        "LORE__PARAMETER__CHUNK_CONFIG__CHUNK_SIZE": "64",
        "LORE__DOCDB__RESUME_INTERRUPTED": "false",
    }
    process = ServerProcess([sys.executable, "-m", "lore_docdb"], env=env, log_path=tmp / log)
    process.wait_healthy(f"http://127.0.0.1:{port}/health", timeout=90)
    return process


def wait_status(client: httpx.Client, task_id: str, wanted: set[str], timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        task = client.get(f"{TASKS}/{task_id}").json()
        if task["status"] in wanted:
            return task
        time.sleep(0.1)
    raise AssertionError(f"task never reached {wanted}: {task}")


def test_kill_mid_parse_then_restart(tmp_path: Path) -> None:
    llm_port = free_port()
    llm = ServerProcess(
        [
            sys.executable,
            "-m",
            "lore_common.testing.fake_llm",
            "--port",
            str(llm_port),
            "--latency-ms",
            "300",
        ],
        log_path=tmp_path / "llm.log",
    )
    llm.wait_healthy(f"http://127.0.0.1:{llm_port}/health")
    port = free_port()
    docdb = start_docdb(tmp_path, port, f"http://127.0.0.1:{llm_port}/v1", "docdb1.log")
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            client.post(DS, json={"name": "notes"})
            text = " ".join(f"Sentence {i} mentions Grace Hopper and the Harvard Mark I." for i in range(200))
            client.post(f"{DS}/notes/files", files={"files": ("notes.txt", text.encode())})
            client.post(KB, json={"name": "kb"})
            task_id = client.post(f"{KB}/kb/parse", json={"datasets": ["notes"]}).json()["data"]["tasks"][0][
                "task_id"
            ]
            task = wait_status(client, task_id, {"running"})
            deadline = time.monotonic() + 30
            while task["stage"] != "graph" and time.monotonic() < deadline:
                time.sleep(0.05)
                task = client.get(f"{TASKS}/{task_id}").json()
            assert task["stage"] == "graph" and task["status"] == "running"
        os.killpg(docdb.pid, signal.SIGKILL)  # the whole process group, as when a container dies
        docdb.process.wait(10)

        docdb = start_docdb(tmp_path, port, f"http://127.0.0.1:{llm_port}/v1", "docdb2.log")
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            task = client.get(f"{TASKS}/{task_id}").json()
            assert task["status"] == "failed"
            assert "interrupted" in task["error"]
            detail = client.get(f"{KB}/kb").json()
            assert detail["datasets"][0]["parsed"] is False
            overview = client.get(f"{KB}/kb/overview").json()["overview"]
            assert overview["chunk_count"] == 0  # the interrupted task's chunks were rolled back
            httpx.post(f"http://127.0.0.1:{llm_port}/_latency", json={"ms": 0})
            again = client.post(f"{KB}/kb/parse", json={"datasets": ["notes"], "force": True})
            assert again.status_code == 200, again.text
            new_id = again.json()["data"]["tasks"][0]["task_id"]
            done = wait_status(client, new_id, {"completed", "failed"}, timeout=120)
            assert done["status"] == "completed", done
            assert client.get(f"{KB}/kb").json()["datasets"][0]["parsed"] is True
    finally:
        docdb.stop()
        llm.stop()
