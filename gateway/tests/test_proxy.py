from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import httpx
import pytest

from lore_common.testing.processes import ServerProcess, free_port

HERE = Path(__file__).parent
MIB = 1024 * 1024


@dataclass
class Running:
    gateway: ServerProcess
    sink: ServerProcess
    url: str
    dead_port: int


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """A sink downstream for docdb and gen, a closed port for mem, and a real gateway in front."""
    tmp = tmp_path_factory.mktemp("gw")
    sink_port, gateway_port, dead_port = free_port(), free_port(), free_port()
    sink = ServerProcess(
        [sys.executable, "-m", "granian", "--interface", "asgi", "--port", str(sink_port), "sink_app:app"],
        env={"PYTHONPATH": str(HERE)},
        log_path=tmp / "sink.log",
    )
    sink_url = f"http://127.0.0.1:{sink_port}"
    gateway = ServerProcess(
        [sys.executable, "-m", "lore_gateway"],
        env={
            "LORE_CONFIG_DIR": str(tmp),
            "LORE__GATEWAY__PORT": str(gateway_port),
            "LORE__GATEWAY__DOCDB_URL": sink_url,
            "LORE__GATEWAY__GEN_URL": sink_url,
            "LORE__GATEWAY__MEM_URL": f"http://127.0.0.1:{dead_port}",
        },
        log_path=tmp / "gateway.log",
    )
    try:
        sink.wait_healthy(f"{sink_url}/health")
        gateway.wait_healthy(f"http://127.0.0.1:{gateway_port}/")
        yield Running(gateway, sink, f"http://127.0.0.1:{gateway_port}", dead_port)
    finally:
        gateway.stop()
        sink.stop()


def test_root_names_the_service_and_version(running: Running) -> None:
    response = httpx.get(f"{running.url}/")
    assert response.status_code == 200
    assert response.json()["name"] == "lore"
    assert response.json()["version"]


def test_health_is_503_naming_the_downstream_that_is_down(running: Running) -> None:
    response = httpx.get(f"{running.url}/health", timeout=10)
    assert response.status_code == 503
    body = response.json()
    assert body["failing"] == ["mem"]
    assert body["services"]["docdb"]["status"] == "up"
    assert body["services"]["docdb"]["latency_ms"] >= 0
    assert body["services"]["mem"]["status"] == "down"


def test_stopped_downstream_answers_502_naming_it_within_two_seconds(running: Running) -> None:
    started = time.perf_counter()
    response = httpx.get(f"{running.url}/api/v1/mem/vg?user_id=u1", timeout=10)
    elapsed = time.perf_counter() - started
    assert response.status_code == 502
    assert "mem" in response.json()["message"]
    assert response.json()["detail"] == {"service": "mem"}
    assert elapsed < 2.0


def test_request_id_travels_gateway_to_service_and_back(running: Running) -> None:
    response = httpx.get(
        f"{running.url}/api/v1/docdb/echo-headers", headers={"x-request-id": "req-abc-123"}, timeout=10
    )
    assert response.headers["x-request-id"] == "req-abc-123"
    assert response.json()["headers"]["x-request-id"] == "req-abc-123"
    assert response.json()["headers"]["x-forwarded-proto"] == "http"


def test_path_query_and_headers_reach_the_service(running: Running) -> None:
    response = httpx.get(
        f"{running.url}/api/v1/gen/big", params={"size": "5"}, headers={"x-request-id": "rid-7"}, timeout=10
    )
    assert response.status_code == 200
    assert response.content == b"xxxxx"
    assert response.headers["x-request-id"] == "rid-7"


def test_generated_request_id_is_returned(running: Running) -> None:
    response = httpx.get(f"{running.url}/api/v1/gen/big", params={"size": "1"}, timeout=10)
    assert len(response.headers["x-request-id"]) == 36


def test_large_download_streams_through(running: Running) -> None:
    size = 50 * MIB
    with httpx.stream("GET", f"{running.url}/api/v1/gen/big", params={"size": str(size)}, timeout=60) as r:
        assert r.status_code == 200
        received = sum(len(chunk) for chunk in r.iter_raw())
    assert received == size


def _chunks(total: int, seed: bytes) -> Iterator[bytes]:
    block = hashlib.sha256(seed).digest() * (MIB // 32)
    sent = 0
    while sent < total:
        piece = block[: min(MIB, total - sent)]
        sent += len(piece)
        yield piece


def test_200_mb_upload_streams_through_with_small_gateway_memory(running: Running) -> None:
    total = 200 * MIB
    expected = hashlib.sha256()
    for piece in _chunks(total, b"seed"):
        expected.update(piece)
    baseline = running.gateway.rss_bytes()
    peak = baseline
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, running.gateway.rss_bytes())
            time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        response = httpx.post(
            f"{running.url}/api/v1/docdb/sink",
            content=_chunks(total, b"seed"),
            headers={"content-type": "application/octet-stream"},
            timeout=120,
        )
    finally:
        done.set()
        sampler.join()
    assert response.status_code == 200, response.text
    assert response.json() == {"size": total, "sha256": expected.hexdigest()}
    growth_mb = (peak - baseline) / MIB
    assert growth_mb < 50, f"gateway RSS grew {growth_mb:.1f} MB during a 200 MB upload"


async def test_websocket_round_trip_through_the_gateway(running: Running) -> None:
    ws_url = running.url.replace("http", "ws") + "/api/v1/gen/pipeline/stream"
    async with aiohttp.ClientSession() as session, session.ws_connect(ws_url) as ws:
        await ws.send_str("hello")
        reply = await ws.receive(timeout=5)
        assert reply.data == "echo:hello"
        await ws.send_str("again")
        assert (await ws.receive(timeout=5)).data == "echo:again"
        await ws.send_str("bye")
        closing = await ws.receive(timeout=5)
        assert closing.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)


async def test_websocket_to_a_stopped_downstream_closes_with_a_reason(running: Running) -> None:
    ws_url = running.url.replace("http", "ws") + "/api/v1/mem/anything"
    async with aiohttp.ClientSession() as session, session.ws_connect(ws_url) as ws:
        message = await ws.receive(timeout=5)
        assert message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
        assert ws.close_code == 1011


def test_unknown_module_is_404_from_the_gateway(running: Running) -> None:
    response = httpx.get(f"{running.url}/api/v1/nothing/here", timeout=10)
    assert response.status_code == 404
    assert response.json()["success"] is False and "no route" in response.json()["message"]
    assert os.environ.get("LORE__GATEWAY__PORT") is None  # the fixture never leaks into this process


@contextlib.contextmanager
def keyed_gateway(tmp: Path, running: Running, **env: str) -> Iterator[str]:
    """A second gateway in front of the same sink (mem: a closed port), with the given key settings."""
    port = free_port()
    gateway = ServerProcess(
        [sys.executable, "-m", "lore_gateway"],
        env={
            "LORE_CONFIG_DIR": str(tmp),
            "LORE__GATEWAY__PORT": str(port),
            "LORE__GATEWAY__DOCDB_URL": running_sink_url(running),
            "LORE__GATEWAY__GEN_URL": running_sink_url(running),
            "LORE__GATEWAY__MEM_URL": f"http://127.0.0.1:{running.dead_port}",
            **env,
        },
        log_path=tmp / "gateway.log",
    )
    try:
        gateway.wait_healthy(f"http://127.0.0.1:{port}/")
        yield f"http://127.0.0.1:{port}"
    finally:
        gateway.stop()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory, running: Running) -> Iterator[str]:
    """A gateway with API keys configured."""
    tmp = tmp_path_factory.mktemp("gw-auth")
    with keyed_gateway(tmp, running, LORE__GATEWAY__API_KEYS='["key-one-secret", "key-two-secret"]') as url:
        yield url
    assert "key-one-secret" not in (tmp / "gateway.log").read_text()


def running_sink_url(running: Running) -> str:
    health = httpx.get(f"{running.url}/health", timeout=10).json()
    return str(health["services"]["docdb"]["url"])


async def test_api_keys_guard_the_api_but_not_health(guarded: str) -> None:
    path = f"{guarded}/api/v1/docdb/echo-headers"
    refused = httpx.get(path, timeout=10)
    assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer")
    assert "Authorization: Bearer" in refused.json()["message"]
    assert httpx.get(path, headers={"Authorization": "Bearer wrong"}, timeout=10).status_code == 401
    assert httpx.get(path, headers={"Authorization": "Basic key-one-secret"}, timeout=10).status_code == 401
    for key in ("key-one-secret", "key-two-secret"):
        assert httpx.get(path, headers={"Authorization": f"Bearer {key}"}, timeout=10).status_code == 200
    assert httpx.get(f"{guarded}/", timeout=10).status_code == 200
    assert httpx.get(f"{guarded}/health", timeout=10).status_code in (200, 503)  # open to probes
    ws = guarded.replace("http", "ws") + "/api/v1/gen/pipeline/stream"
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.WSServerHandshakeError):
            await session.ws_connect(ws)
        async with session.ws_connect(ws, headers={"Authorization": "Bearer key-two-secret"}) as socket:
            await socket.send_str("ping")
            assert (await socket.receive(timeout=10)).data
        # A browser cannot set headers on a WebSocket: the key may come as `access_token`, which the
        # gateway checks and removes before the service sees the URL.
        with pytest.raises(aiohttp.WSServerHandshakeError):
            await session.ws_connect(ws + "?access_token=wrong")
        async with session.ws_connect(ws + "?x=1&access_token=key-one-secret&y=2") as socket:
            await socket.send_str("query")
            assert (await socket.receive(timeout=10)).data == "x=1&y=2"
    assert httpx.get(f"{path}?access_token=key-one-secret", timeout=10).status_code == 401  # not for HTTP


async def test_the_console_is_served_without_a_key_and_asks_for_one(guarded: str) -> None:
    page = httpx.get(f"{guarded}/console/", timeout=10)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "/console/vendor/alpine.min.js" in page.text and "/console/vendor/cytoscape.min.js" in page.text
    for asset, kind in (
        ("console.js", "javascript"),
        ("console.css", "text/css"),
        ("vendor/alpine.min.js", "javascript"),
    ):
        response = httpx.get(f"{guarded}/console/{asset}", timeout=10)
        assert response.status_code == 200 and kind in response.headers["content-type"] and response.content
    assert (
        "Bearer" in httpx.get(f"{guarded}/console/console.js", timeout=10).text
    )  # it sends the key it is given
    assert httpx.get(f"{guarded}/console/../app.py", timeout=10).status_code == 404
    assert httpx.get(f"{guarded}/console/%2e%2e/app.py", timeout=10).status_code == 404
    assert httpx.get(f"{guarded}/console/nothing.js", timeout=10).status_code == 404


async def test_api_keys_guard_the_mcp_endpoint(guarded: str) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    accept = {"accept": "application/json, text/event-stream"}
    refused = httpx.post(f"{guarded}/mcp", json=hello, headers=accept, timeout=10)
    assert refused.status_code == 401 and "Bearer" in refused.json()["message"]
    keyed = {"authorization": "Bearer key-one-secret"}
    async with (
        httpx2.AsyncClient(headers=keyed, timeout=30) as http,
        Client(streamable_http_client(f"{guarded}/mcp", http_client=http)) as client,
    ):
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert "knowledge_ask" in names and "memory_add" in names
        # mem is down behind this gateway: the tool says so instead of failing the session.
        down = await client.call_tool("memory_list", {"user_id": "alice"})
        assert down.is_error and "mem service could not be reached" in down.content[0].text


def test_close_codes_that_only_describe_a_closure_are_never_sent_on() -> None:
    from lore_gateway.proxy import sendable_close_code

    assert [sendable_close_code(c) for c in (None, 1000, 1005, 1006, 1008, 1015, 4001, 999)] == [
        1000,
        1000,
        1000,
        1011,
        1008,
        1011,
        4001,
        1011,
    ]


READER, WRITER, ADMIN, DOCDB_ONLY, LIMITED = (
    "reader-key-1",
    "writer-key-2",
    "admin-key-3",
    "docdb-key-4",
    "slow-key-5",
)


@pytest.fixture(scope="module")
def scoped(tmp_path_factory: pytest.TempPathFactory, running: Running) -> Iterator[str]:
    """A gateway whose keys have scopes, module limits and a rate limit: one in the config (hashed, as
    the environment gives it), the rest in a key file."""
    from lore_gateway.access import key_hash

    tmp = tmp_path_factory.mktemp("gw-scoped")
    keys = tmp / "keys.yaml"
    keys.write_text(
        f"""
- {{name: writer, key_sha256: {key_hash(WRITER)}, scopes: [write]}}
- {{name: admin, key_sha256: {key_hash(ADMIN)}, scopes: [admin]}}
- {{name: docdb-only, key_sha256: {key_hash(DOCDB_ONLY)}, scopes: [admin], modules: [docdb]}}
- {{name: slow, key_sha256: {key_hash(LIMITED)}, scopes: [read], rate_per_second: 1, burst: 3}}
"""
    )
    keyed = {
        "LORE__GATEWAY__API_KEYS": json.dumps([{"name": "reader", "key_sha256": key_hash(READER)}]),
        "LORE__GATEWAY__API_KEYS_FILE": str(keys),
    }
    with keyed_gateway(tmp, running, **keyed) as url:
        yield url
    log = (tmp / "gateway.log").read_text()
    assert all(key not in log for key in (READER, WRITER, ADMIN, DOCDB_ONLY, LIMITED))


def test_scopes_nest_read_write_admin(scoped: str) -> None:
    def status(method: str, path: str, key: str) -> int:
        response = httpx.request(
            method, f"{scoped}{path}", headers={"Authorization": f"Bearer {key}"}, timeout=10
        )
        return response.status_code

    read, ask, write, remove = (
        ("GET", "/api/v1/docdb/echo-headers"),
        ("POST", "/api/v1/docdb/chat"),
        ("POST", "/api/v1/docdb/sink"),
        ("DELETE", "/api/v1/docdb/thing"),
    )
    assert [status(*route, READER) for route in (read, ask, write, remove)] == [200, 200, 403, 403]
    assert [status(*route, WRITER) for route in (read, ask, write, remove)] == [200, 200, 200, 403]
    assert [status(*route, ADMIN) for route in (read, ask, write, remove)] == [200, 200, 200, 200]
    refused = httpx.post(f"{scoped}/api/v1/docdb/sink", headers={"Authorization": f"Bearer {READER}"})
    assert (
        refused.json()["message"]
        == "API key 'reader' has scope 'read'; POST /api/v1/docdb/sink needs 'write'"
    )
    assert status("GET", "/api/v1/docdb/echo-headers", "unknown-key") == 401


def test_a_key_limited_to_a_module_reaches_no_other(scoped: str) -> None:
    headers = {"Authorization": f"Bearer {DOCDB_ONLY}"}
    assert httpx.get(f"{scoped}/api/v1/docdb/echo-headers", headers=headers, timeout=10).status_code == 200
    other = httpx.get(f"{scoped}/api/v1/gen/big?size=1", headers=headers, timeout=10)
    assert other.status_code == 403 and "limited to docdb" in other.json()["message"]
    mcp = httpx.post(f"{scoped}/mcp", headers=headers, json={}, timeout=10)
    assert mcp.status_code == 403 and "every module" in mcp.json()["message"]
    reader_mcp = httpx.post(
        f"{scoped}/mcp", headers={"Authorization": f"Bearer {READER}"}, json={}, timeout=10
    )
    assert reader_mcp.status_code == 403  # MCP tools write (memories, tables): it needs `write`


def test_a_rate_limited_key_gets_429_with_retry_after_then_passes_again(scoped: str) -> None:
    headers = {"Authorization": f"Bearer {LIMITED}"}
    path = f"{scoped}/api/v1/docdb/echo-headers"
    replies = [httpx.get(path, headers=headers, timeout=10) for _ in range(5)]
    codes = [r.status_code for r in replies]
    assert codes[:3] == [200, 200, 200] and 429 in codes[3:]
    # The refused reply itself (a sixth request could find the bucket refilled on a loaded machine).
    limited = next(r for r in replies if r.status_code == 429)
    assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1
    assert "1 requests a second" in limited.json()["message"]
    assert (
        httpx.get(path, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=10).status_code == 200
    )  # per key
    time.sleep(float(limited.headers["retry-after"]))
    assert httpx.get(path, headers=headers, timeout=10).status_code == 200


def test_needed_scope_and_the_bucket() -> None:
    from lore_gateway.access import Bucket, needed_scope

    assert needed_scope("GET", "/api/v1/mem/vg") == "read"
    assert needed_scope("POST", "/api/v1/mem/vg/search") == "read"
    assert needed_scope("POST", "/api/v1/mem/vg/add") == "write"
    assert needed_scope("PUT", "/api/v1/mem/vg/abc") == "write"
    assert needed_scope("DELETE", "/api/v1/mem/vg/abc") == "admin"
    assert needed_scope("POST", "/api/v1/docdb/config/reload") == "admin"
    bucket = Bucket(rate=10, burst=2)
    assert bucket.take() == 0 and bucket.take() == 0 and 0 < bucket.take() <= 0.1


def test_proxied_requests_are_counted_by_route_template_not_by_module(running: Running) -> None:
    for item in ("a-1", "b-2", "c-3"):
        answer = httpx.get(f"{running.url}/api/v1/docdb/items/{item}", timeout=10)
        assert answer.status_code == 200 and answer.json() == {"id": item}
        assert "x-lore-route" not in answer.headers  # the service's label stays between it and the gateway
    assert httpx.get(f"{running.url}/api/v1/mem/vg/m-1", timeout=10).status_code == 502
    text = httpx.get(f"{running.url}/metrics", timeout=10).text
    counted = 'lore_http_requests_total{method="GET",route="/api/v1/docdb/items/{item_id}",status="200"}'
    assert f"{counted} 3.0" in text
    assert "a-1" not in text  # ids never become labels
    # What no service answered keeps the module's prefix.
    assert 'route="/api/v1/mem",status="502"' in text
