"""kill -9 in the middle of model work, then restart (issue #43): docdb in a graph-mode parse, mem in
a kb insert and gen in a table task each resume and complete, and the fake model server's log shows
that no chunk whose result was stored (in the service's extraction cache, read from its SQLite file
after the kill; a table's design in its task's checkpoint) was asked again. The fake model names each
extraction (and notes each table row) after the chunk it was asked about, so the cache tells which
chunks it holds."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lore_common.testing.fake_llm import chunk_key
from lore_common.testing.processes import ServerProcess, free_port, model_env, poll_status, start_service
from lore_common.testing.responders import kb, table

DS = "/api/v1/docdb/files/raw-files/datasets"
KB = "/api/v1/docdb/files/knowledge-bases"
TASKS = "/api/v1/docdb/files/processing/tasks"
INSERT = "/api/v1/mem/kb/insert"
PIPELINE = "/api/v1/gen/pipeline"
MARK = re.compile(r"Chunk ([0-9a-f]{16})")
# Enough chunks that the kill lands with some stored and some not, few enough to stay quick.
TEXT = " ".join(
    f"Harbour master Keeper{i:02d} logged ship {i} arriving at pier {i % 7} in the year {1900 + i}."
    for i in range(24)
)


def respond(body: dict[str, Any]) -> str:
    """The fake model's answers (`--responder test_model_resume:respond`): an extraction names one
    entity after the chunk it was asked about, and a gen table row notes the call it came from; other
    prompts get mem kb's usual answers."""
    messages = body.get("messages") or [{}]
    if str(messages[0].get("content", "")).startswith(("You design", "You fill", "You write")):
        answer = json.loads(table(body))
        if "row" in answer:
            answer["row"]["note"] = f"Chunk {chunk_key(body)}"
        return json.dumps(answer)
    if (body.get("response_format") or {}).get("type") in ("json_object", "json_schema"):
        entity = {"name": f"Chunk {chunk_key(body)}", "type": "客观实体", "description": "a chunk"}
        return json.dumps({"entities": [entity], "relations": []}, ensure_ascii=False)
    return kb(body)


@pytest.fixture(scope="module")
def fake_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The fake OpenAI-compatible server, 100 ms a call, answering with `respond`; its root URL."""
    work = tmp_path_factory.mktemp("model")
    port = free_port()
    server = ServerProcess(
        [
            sys.executable,
            "-m",
            "lore_common.testing.fake_llm",
            "--port",
            str(port),
            "--latency-ms",
            "100",
            "--responder",
            "test_model_resume:respond",
        ],
        env={"PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])},
        log_path=work / "llm.log",
    )
    server.wait_healthy(f"http://127.0.0.1:{port}/health")
    yield f"http://127.0.0.1:{port}"
    server.stop()


def extractions_asked(model: str) -> list[str]:
    """The chunk keys of the extraction calls in the fake server's log, in order."""
    calls = httpx.get(f"{model}/_faults", timeout=10).json()["calls"]
    return [call["key"] for call in calls if call["kind"] == "json"]


def kill9_when(process: ServerProcess, ready: Callable[[], bool], limit: float = 60) -> None:
    """SIGKILL to the whole process group (as when a container dies) once `ready()` holds."""
    deadline = time.monotonic() + limit
    while not ready():
        assert time.monotonic() < deadline, process.log_tail()
        time.sleep(0.02)
    os.killpg(process.pid, signal.SIGKILL)
    process.process.wait(10)


def stored_chunks(database: Path, table: str) -> set[str]:
    """The chunk keys whose extraction the killed service's cache holds."""
    with contextlib.closing(sqlite3.connect(database)) as connection:
        values = [row[0] for row in connection.execute(f"SELECT value FROM {table}")]
    return {key for value in values for key in MARK.findall(value)}


def check_log(model: str, before: list[str], stored: set[str]) -> list[str]:
    """The acceptance, from the fake server's log: no stored chunk was asked after the kill, every
    chunk was extracted, and none twice after the restart. Returns the calls after the restart."""
    after = extractions_asked(model)[len(before) :]
    assert stored and set(stored) <= set(before)
    assert not stored & set(after), "a chunk whose result was stored was asked again"
    assert len(after) == len(set(after))
    assert set(before) | set(after) == stored | set(after)  # nothing asked before is left unasked
    return after


def test_docdb_killed_mid_graph_parse_resumes_and_asks_no_stored_chunk_again(
    tmp_path: Path, fake_model: str
) -> None:
    httpx.post(f"{fake_model}/_reset", timeout=10)
    (tmp_path / "config").mkdir()
    env = {
        **model_env("LORE__DOCDB__LLM", f"{fake_model}/v1"),
        "LORE__DOCDB__EMBEDDING_API__PROVIDER": "hashing",
        "LORE__DOCDB__LLM__MAX_CONCURRENT_REQUESTS": "1",
        "LORE__PARAMETER__GRAPH_CONFIG__MAX_WORKERS": "1",
        "LORE__PARAMETER__CHUNK_CONFIG__CHUNK_SIZE": "24",
    }
    docdb, url = start_service("docdb", tmp_path, env)
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            client.post(DS, json={"name": "logs"})
            client.post(f"{DS}/logs/files", files={"files": ("logs.txt", TEXT.encode())})
            client.post(KB, json={"name": "harbour"})
            parse = client.post(f"{KB}/harbour/parse", json={"datasets": ["logs"]}).json()
            task_id = parse["data"]["tasks"][0]["task_id"]
        kill9_when(docdb, lambda: len(extractions_asked(fake_model)) >= 6)
        before = extractions_asked(fake_model)
        stored = stored_chunks(tmp_path / "docdb" / "docdb.db", "lore_docdb_model_cache")

        docdb, url = start_service("docdb", tmp_path, env, port=int(url.rsplit(":", 1)[1]))
        with httpx.Client(base_url=url, timeout=30) as client:
            task = poll_status(client, f"{TASKS}/{task_id}", {"completed", "failed", "cancelled"})
            assert task["status"] == "completed", task
            assert task["metadata"]["usage"]["cache_hits"] == len(stored)
            after = check_log(fake_model, before, stored)
            # Every chunk's entity is in the graph: each extraction counted once, none lost.
            overview = client.get(f"{KB}/harbour/overview").json()["overview"]
            assert overview["chunk_count"] == len(stored | set(after))
    finally:
        docdb.stop()


def test_mem_killed_mid_kb_insert_resumes_and_asks_no_stored_chunk_again(
    tmp_path: Path, fake_model: str
) -> None:
    httpx.post(f"{fake_model}/_reset", timeout=10)
    (tmp_path / "config").mkdir()
    env = {
        **model_env("LORE__MEM__MEMORYKB__LLM", f"{fake_model}/v1"),
        "LORE__MEM__MEMORYKB__EMBEDDING__PROVIDER": "hashing",
        "LORE__MEM__EMBEDDING_API__PROVIDER": "hashing",
        "LORE__MEM__MEMORYKB__LLM__MAX_CONCURRENT_REQUESTS": "1",
        "LORE__PARAMETER__CHUNK_CONFIG__CHUNK_SIZE": "24",
        "LORE__PARAMETER__CHUNK_CONFIG__OVERLAP": "0",
    }
    mem, url = start_service("mem", tmp_path, env)
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            job_id = client.post(INSERT, files={"query": (None, TEXT)}).json()["id"]
        kill9_when(mem, lambda: len(extractions_asked(fake_model)) >= 6)
        before = extractions_asked(fake_model)
        stored = stored_chunks(tmp_path / "mem" / "mem.db", "lore_mem_model_cache")

        mem, url = start_service("mem", tmp_path, env, port=int(url.rsplit(":", 1)[1]))
        with httpx.Client(base_url=url, timeout=30) as client:
            job = poll_status(client, f"{INSERT}/{job_id}", {"done", "failed"})
            assert job["status"] == "done", job
            assert job["usage"]["cache_hits"] == len(stored)
            after = check_log(fake_model, before, stored)
            assert job["chunks"] == len(stored | set(after))
            # A chunk extracted before the kill is remembered after it.
            first = sorted(stored)[0]
            answer = client.post("/api/v1/mem/kb/query", json={"query": f"Chunk {first}", "mode": "local"})
            assert f"Chunk {first}" in answer.json()["rag_memory"]
    finally:
        mem.stop()


def test_gen_killed_mid_table_rows_resumes_and_asks_no_stored_row_again(
    tmp_path: Path, fake_model: str
) -> None:
    httpx.post(f"{fake_model}/_reset", timeout=10)
    (tmp_path / "config").mkdir()
    env = {
        **model_env("LORE__GEN__LLM", f"{fake_model}/v1"),
        "LORE__GEN__LLM__MAX_CONCURRENT_REQUESTS": "1",
        "LORE__GEN__DOCDB_URL": f"http://127.0.0.1:{free_port()}",  # ungrounded: no docdb call
    }
    harbours = [f"Harbour{i:02d}" for i in range(16)]
    question = "Compare: " + ", ".join(harbours)
    gen, url = start_service("gen", tmp_path, env)
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            submitted = client.post(f"{PIPELINE}/submit", json={"question": question, "max_workers": 1})
            task_id = submitted.json()["task_id"]
        # The design, then five rows asked (the fifth in flight when the process dies).
        kill9_when(gen, lambda: len(extractions_asked(fake_model)) >= 6)
        before = extractions_asked(fake_model)
        database = tmp_path / "gen" / "gen.db"
        rows = stored_chunks(database, "lore_gen_model_cache")
        # The design is stored with the task (its checkpoint), the rows in the extraction cache.
        with contextlib.closing(sqlite3.connect(database)) as connection:
            (record,) = connection.execute(
                "SELECT record FROM lore_gen_jobs WHERE id = ?", (task_id,)
            ).fetchone()
        assert json.loads(record)["checkpoint"]["design"]["schema"]["entities"] == harbours
        stored = rows | {before[0]}

        gen, url = start_service("gen", tmp_path, env, port=int(url.rsplit(":", 1)[1]))
        with httpx.Client(base_url=url, timeout=30) as client:
            task = poll_status(client, f"{PIPELINE}/status/{task_id}", {"completed", "failed"})
            assert task["status"] == "completed", task
            result = task["result"]
            assert result["usage"]["cache_hits"] == len(rows)
            after = check_log(fake_model, before, stored)
            assert len(after) == len(harbours) - len(rows) + 1  # the rows left, then the SQL
            # Every harbour has its row, each from one model call, and the SQL answered over all of them.
            assert [row["name"] for row in result["csv_data"]] == harbours
            notes = {row["note"] for row in result["csv_data"]}
            assert len(notes) == len(harbours) and {note[6:] for note in notes} == rows | set(after[:-1])
            assert result["query_results"][0]["n"] == len(harbours)
    finally:
        gen.stop()
