"""The whole product as a user starts it: `lore-up` on embedded stores, driven through the gateway."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import httpx
import psutil
import pytest

from lore_common.testing.processes import ServerProcess, free_port, wait_http

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-e2e-secret-value"


@dataclass
class Lore:
    launcher: ServerProcess
    url: str
    log: Path
    data: Path


@pytest.fixture(scope="module")
def lore(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lore]:
    work = tmp_path_factory.mktemp("lore")
    ports = {name: free_port() for name in ("gateway", "docdb", "gen", "mem")}
    env = {
        "LORE_CONFIG_DIR": str(ROOT / "config"),
        "LORE__LOGGING__FORMAT": "json",
        "LORE__GATEWAY__PORT": str(ports["gateway"]),
        "LORE__DOCDB__LLM__API_KEY": SECRET,
        "LORE__DOCDB__DATABASE__URL": "postgresql://lore:hunter2@127.0.0.1:1/lore",
    }
    for name in ("docdb", "gen", "mem"):
        env[f"LORE__{name.upper()}__SERVER__PORT"] = str(ports[name])
        env[f"LORE__{name.upper()}__SERVER__DATA_DIR"] = str(work / "data" / name)
        env[f"LORE__GATEWAY__{name.upper()}_URL"] = f"http://127.0.0.1:{ports[name]}"
    # docdb must not try the fake PostgreSQL URL above for real: it only proves redaction.
    env.pop("LORE__DOCDB__DATABASE__URL")
    env["LORE__DOCDB__OBJECT_STORAGE__SECRET_KEY"] = "s3-secret-e2e"
    log = work / "lore.log"
    launcher = ServerProcess([sys.executable, "-m", "lore_gateway.launch"], env=env, cwd=work, log_path=log)
    url = f"http://127.0.0.1:{ports['gateway']}"
    try:
        launcher.wait_healthy(f"{url}/health", timeout=120)
        yield Lore(launcher, url, log, work / "data")
    finally:
        launcher.stop()


def test_health_reports_every_service_and_its_stores(lore: Lore) -> None:
    body = httpx.get(f"{lore.url}/health", timeout=10).json()
    assert body["status"] == "ok"
    assert {name: item["status"] for name, item in body["services"].items()} == {
        "docdb": "up",
        "gen": "up",
        "mem": "up",
    }
    assert set(body["services"]["docdb"]["checks"]) == {"relational", "vector", "graph"}
    assert (lore.data / "docdb" / "docdb.db").exists()
    assert (lore.data / "docdb" / "falkordb").is_dir()


def test_kb_memory_through_the_gateway_with_the_local_embedder(lore: Lore) -> None:
    base = f"{lore.url}/api/v1/mem/kb"
    fact = "The orchard behind the old mill grows forty quince trees."
    job = httpx.post(f"{base}/insert", files={"query": (None, fact)}, timeout=30)
    assert job.status_code == 202
    deadline = time.monotonic() + 10
    while (status := httpx.get(f"{base}/insert/{job.json()['id']}", timeout=10).json())["status"] != "done":
        assert status["status"] in ("accepted", "processing") and time.monotonic() < deadline, status
        time.sleep(0.1)
    answer = httpx.post(
        f"{base}/query", json={"query": "How many quince trees grow in the orchard?"}, timeout=30
    )
    assert answer.status_code == 200
    assert fact in answer.json()["rag_memory"] and "forty quince" in answer.json()["final_answer"]


def test_vg_memory_through_the_gateway(lore: Lore) -> None:
    base = f"{lore.url}/api/v1/mem/vg"
    added = httpx.post(
        f"{base}/add",
        json={
            "messages": [{"role": "user", "content": "I live in Lisbon and I love surfing."}],
            "user_id": "e2e",
        },
        timeout=30,
    ).json()
    assert added["results"][0]["event"] == "ADD"
    found = httpx.post(
        f"{base}/search", json={"query": "Lisbon surfing", "user_id": "e2e"}, timeout=30
    ).json()
    assert found["results"][0]["memory"] == added["results"][0]["memory"]
    assert httpx.post(f"{base}/search", json={"query": "Lisbon"}, timeout=10).status_code == 422


def test_docdb_through_the_gateway(lore: Lore) -> None:
    base = f"{lore.url}/api/v1/docdb"
    assert httpx.post(f"{base}/files/raw-files/datasets", json={"name": "e2e"}, timeout=10).status_code == 200
    files = {"files": ("note.txt", b"Grace Hopper developed the first compiler in 1952.")}
    assert (
        httpx.post(f"{base}/files/raw-files/datasets/e2e/files", files=files, timeout=10).status_code == 200
    )
    assert httpx.post(f"{base}/files/knowledge-bases", json={"name": "e2e"}, timeout=10).status_code == 200
    parse = httpx.post(f"{base}/files/knowledge-bases/e2e/parse", json={"datasets": ["e2e"]}, timeout=10)
    task_id = parse.json()["data"]["tasks"][0]["task_id"]
    deadline = time.monotonic() + 60
    while (task := httpx.get(f"{base}/files/processing/tasks/{task_id}", timeout=10).json())[
        "status"
    ] != "completed":
        assert task["status"] in ("pending", "running") and time.monotonic() < deadline, task
        time.sleep(0.2)
    answer = httpx.post(
        f"{base}/chat",
        json={"query": "Who developed the first compiler?", "kb_id": "e2e", "user_id": "u"},
        timeout=30,
    ).json()
    assert answer["code"] == 200 and "Grace Hopper" in answer["response"]
    assert answer["citations"][0]["source_file"] == "note.txt"
    unknown = httpx.post(f"{base}/chat", json={"query": "q", "kb_id": "ghost", "user_id": "u"}, timeout=10)
    assert unknown.status_code == 200 and unknown.json()["code"] == 400


def test_config_through_the_gateway_never_shows_secrets(lore: Lore) -> None:
    r = httpx.get(f"{lore.url}/api/v1/docdb/config", timeout=10)
    assert r.status_code == 200
    assert SECRET not in r.text and "s3-secret-e2e" not in r.text
    assert r.json()["data"]["docdb"]["llm"]["api_key"] == "***"
    r = httpx.get(f"{lore.url}/api/v1/docdb/config/chunk_config", timeout=10)
    assert r.json()["data"] == {"chunk_size": 1024, "overlap": 50, "max_workers": 16}
    r = httpx.get(f"{lore.url}/api/v1/docdb/config/nope", timeout=10)
    assert r.status_code == 404 and "nope" in r.json()["message"]


def test_request_id_reaches_the_service_log_and_comes_back(lore: Lore) -> None:
    r = httpx.get(f"{lore.url}/api/v1/docdb/config/llm", headers={"x-request-id": "e2e-rid-1"}, timeout=10)
    assert r.headers["x-request-id"] == "e2e-rid-1"
    deadline = time.monotonic() + 5
    found = []
    while time.monotonic() < deadline and not found:
        lines = [json.loads(x) for x in lore.log.read_text().splitlines() if x.startswith("{")]
        found = [x for x in lines if x.get("request_id") == "e2e-rid-1" and x.get("service") == "docdb"]
        time.sleep(0.1)
    assert found and found[0]["path"] == "/api/v1/docdb/config/llm"


def test_openapi_document_merges_the_three_services(lore: Lore) -> None:
    paths = httpx.get(f"{lore.url}/schema/openapi.json", timeout=10).json()["paths"]
    assert "/api/v1/docdb/chat" in paths
    assert "/api/v1/gen/pipeline/submit" in paths
    assert "/api/v1/mem/vg/add" in paths


async def test_gen_table_stream_through_the_gateway_grounds_rows_in_docdb(lore: Lore) -> None:
    """Runs after the docdb test built KB `e2e`; gen reaches docdb over HTTP (offline model)."""
    ws_url = lore.url.replace("http", "ws") + "/api/v1/gen/pipeline/stream"
    body = {"question": "What did Grace Hopper develop?", "kb_name": "e2e", "threshold": 0.0}
    async with aiohttp.ClientSession() as session, session.ws_connect(ws_url) as ws:
        await ws.send_json(body)
        events = []
        while not events or events[-1]["type"] == "progress":
            events.append(await ws.receive_json(timeout=30))
        closing = await ws.receive(timeout=10)
        assert closing.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
    steps = [e["step"] for e in events if e["type"] == "progress"]
    assert set(steps) == {1, 2, 3, 4} and steps == sorted(steps)
    assert events[-1]["type"] == "result", events[-1]
    data = events[-1]["data"]
    assert data["csv_data"] == data["query_results"]
    assert data["csv_data"][0]["name"] == "Grace Hopper"
    assert "first compiler" in data["csv_data"][0]["evidence"]
    status = httpx.get(f"{lore.url}/api/v1/gen/pipeline/status/{events[0]['task_id']}", timeout=10).json()
    assert status["status"] == "completed" and status["result"] == data

    async with aiohttp.ClientSession() as session, session.ws_connect(ws_url) as ws:
        await ws.send_str("not json")
        message = await ws.receive_json(timeout=10)
        assert message["type"] == "error" and "invalid submit message" in message["message"]


def test_gen_kb_tag_tree_uses_the_real_docdb_overview(lore: Lore) -> None:
    """Runs after the docdb test built KB `e2e`: the tree groups that KB's entities (offline model)."""
    base = f"{lore.url}/api/v1/gen/tag-tree"
    task = httpx.post(
        f"{base}/generate", json={"topic": "computing", "mode": "kb", "kb_name": "e2e"}, timeout=10
    )
    assert task.status_code == 200
    deadline = time.monotonic() + 30
    while (status := httpx.get(f"{base}/status/{task.json()['task_id']}", timeout=10).json())[
        "status"
    ] != "completed":
        assert status["status"] in ("pending", "running") and time.monotonic() < deadline, status
        time.sleep(0.1)
    result = status["result"]
    names = json.dumps(result["nodes"])
    assert "Grace Hopper" in names and result["kb_entity_nodes"] >= 1
    assert (
        httpx.post(
            f"{base}/generate", json={"topic": "x", "mode": "kb", "kb_name": "ghost"}, timeout=10
        ).status_code
        == 404
    )


def test_secrets_never_reach_the_logs(lore: Lore) -> None:
    text = lore.log.read_text()
    assert SECRET not in text and "s3-secret-e2e" not in text


def test_a_service_that_dies_is_restarted_and_the_rest_keep_serving(lore: Lore) -> None:
    said = {"messages": [{"role": "user", "content": "I keep bees in Ghent."}], "user_id": "restart"}
    assert httpx.post(f"{lore.url}/api/v1/mem/vg/add", json=said, timeout=30).status_code == 200
    [mem] = [p for p in psutil.Process(lore.launcher.pid).children() if "lore_mem" in " ".join(p.cmdline())]
    os.killpg(mem.pid, signal.SIGKILL)  # the process group, as when a container is killed
    assert httpx.get(f"{lore.url}/api/v1/docdb/config/llm", timeout=10).status_code == 200
    deadline = time.monotonic() + 60
    while httpx.get(f"{lore.url}/health", timeout=10).status_code != 200:
        assert lore.launcher.process.poll() is None, "lore-up stopped instead of restarting mem"
        assert time.monotonic() < deadline, lore.launcher.log_tail()
        time.sleep(0.5)
    assert "lore: mem exited with code -9; restarting in 1 s" in lore.log.read_text()
    found = httpx.post(
        f"{lore.url}/api/v1/mem/vg/search", json={"query": "bees Ghent", "user_id": "restart"}, timeout=30
    )
    assert found.status_code == 200  # its data survived the restart
    assert [r["memory"] for r in found.json()["results"]] == ["I keep bees in Ghent"]


def test_ctrl_c_stops_every_process(lore: Lore) -> None:
    tree = [psutil.Process(pid) for pid in lore.launcher.tree_pids()]
    names = " ".join(" ".join(p.cmdline()) for p in tree)
    assert "redis-server" in names  # the embedded FalkorDB is part of the tree
    started = time.monotonic()
    lore.launcher.signal(signal.SIGINT)
    lore.launcher.process.wait(30)
    assert lore.launcher.process.returncode == 0
    _, alive = psutil.wait_procs(tree, timeout=5)
    assert not alive, f"left behind: {[p.pid for p in alive]}"
    assert time.monotonic() - started < 30
    with pytest.raises(TimeoutError):
        wait_http(f"{lore.url}/", timeout=0.5)
    assert os.environ.get("LORE__GATEWAY__PORT") is None
