"""Streaming answers, MCP tools, metrics and traces, through the gateway of a real `lore-up` stack
whose models are a fake OpenAI-compatible server (streaming one word at a time) and whose spans go
to a fake OTLP collector in this test."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from prometheus_client.parser import text_string_to_metric_families

from lore_common.testing.processes import ServerProcess, free_port, start_fake_llm

ROOT = Path(__file__).resolve().parents[2]
TOKEN_MS = 20
INTERNAL_TOKEN = "telemetry-internal-token"
FACTS = (
    "Grace Hopper developed the first compiler, the A-0 system, in 1952. "
    "She later led the design of COBOL. The quince orchard behind the old mill grows forty trees."
)


@dataclass
class Span:
    service: str
    name: str
    trace_id: str
    attributes: dict[str, Any]


@dataclass
class Collector:
    """An OTLP/HTTP endpoint that keeps every span it is sent."""

    url: str
    spans: list[Span] = field(default_factory=list)


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


@pytest.fixture(scope="module")
def collector() -> Iterator[Collector]:
    port = free_port()
    found = Collector(f"http://127.0.0.1:{port}")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            for resource_spans in request.resource_spans:
                resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        found.spans.append(
                            Span(
                                str(resource.get("service.name")),
                                span.name,
                                span.trace_id.hex(),
                                {a.key: _value(a.value) for a in span.attributes},
                            )
                        )
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield found
    server.shutdown()


@dataclass
class Stack:
    url: str
    llm: str
    services: dict[str, str]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, collector: Collector) -> Iterator[Stack]:
    work = tmp_path_factory.mktemp("telemetry")
    llm, llm_url = start_fake_llm(work, "--token-ms", str(TOKEN_MS))
    ports = {name: free_port() for name in ("gateway", "docdb", "gen", "mem")}
    env = {
        "LORE_CONFIG_DIR": str(ROOT / "config"),
        "LORE__GATEWAY__PORT": str(ports["gateway"]),
        # Known here, so the second gateway below may call the same services.
        "LORE__SECURITY__INTERNAL_TOKEN": INTERNAL_TOKEN,
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
        "OTEL_BSP_SCHEDULE_DELAY": "200",
    }
    for prefix in ("LORE__DOCDB__LLM__", "LORE__MEM__MEMORYKB__LLM__"):
        env |= {
            f"{prefix}PROVIDER": "openai",
            f"{prefix}BASE_URL": llm_url,
            f"{prefix}MODEL": "fake-gpt",
            f"{prefix}API_KEY": "sk-fake",
        }
    for name in ("docdb", "gen", "mem"):
        env[f"LORE__{name.upper()}__SERVER__PORT"] = str(ports[name])
        env[f"LORE__{name.upper()}__SERVER__DATA_DIR"] = str(work / "data" / name)
        env[f"LORE__GATEWAY__{name.upper()}_URL"] = f"http://127.0.0.1:{ports[name]}"
    launcher = ServerProcess(
        [sys.executable, "-m", "lore_gateway.launch"], env=env, cwd=work, log_path=work / "lore.log"
    )
    url = f"http://127.0.0.1:{ports['gateway']}"
    try:
        launcher.wait_healthy(f"{url}/health", timeout=120)
        _knowledge(url)
        yield Stack(url, llm_url.removesuffix("/v1"), {n: f"http://127.0.0.1:{ports[n]}" for n in ports})
    finally:
        launcher.stop()
        llm.stop()


def _knowledge(url: str) -> None:
    """A parsed KB `facts` and the same text in the knowledge-graph memory."""
    api = f"{url}/api/v1"
    with httpx.Client(timeout=60) as client:
        client.post(f"{api}/docdb/files/raw-files/datasets", json={"name": "facts"}).raise_for_status()
        client.post(
            f"{api}/docdb/files/raw-files/datasets/facts/files",
            files={"files": ("facts.txt", FACTS.encode())},
        ).raise_for_status()
        client.post(f"{api}/docdb/files/knowledge-bases", json={"name": "facts"}).raise_for_status()
        client.post(f"{api}/docdb/files/knowledge-bases/facts/parse", json={"datasets": ["facts"]})
        job = client.post(f"{api}/mem/kb/insert", data={"query": FACTS}).json()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            tasks = client.get(f"{api}/docdb/files/processing/tasks").json()
            inserted = client.get(f"{api}/mem/kb/insert/{job['id']}").json()
            if all(t["status"] == "completed" for t in tasks) and tasks and inserted["status"] == "done":
                return
            assert not any(t["status"] == "failed" for t in tasks), tasks
            time.sleep(0.3)
        raise AssertionError(f"knowledge not ready: {tasks} {inserted}")


def events(response: httpx.Response) -> list[tuple[str, Any, float]]:
    """The server-sent events of a response as (name, payload, seconds since the request)."""
    started = time.monotonic()
    found: list[tuple[str, Any, float]] = []
    name, data = "", ""
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            data = line[6:]
        elif not line and name:
            found.append((name, json.loads(data), time.monotonic() - started))
            name, data = "", ""
    return found


def stream(url: str, path: str, body: dict[str, Any]) -> list[tuple[str, Any, float]]:
    with httpx.stream("POST", f"{url}/api/v1{path}", json={**body, "stream": True}, timeout=60) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        return events(response)


def _steady(body: dict[str, Any]) -> dict[str, Any]:
    """A chat body without what differs between two calls (timings, request id)."""
    info = {k: v for k, v in body["query_info"].items() if k != "timings_ms"}
    return {**body, "query_info": info, "request_id": None}


def test_streamed_docdb_chat_ends_with_the_non_streamed_body(stack: Stack) -> None:
    ask = {"query": "Who developed the first compiler?", "kb_id": "facts", "user_id": "u1"}
    got = stream(stack.url, "/docdb/chat", ask)
    names = [name for name, _, _ in got]
    assert names[0] == "passages" and names[-2:] == ["citations", "done"]
    assert set(names[1:-2]) == {"delta"} and len(names) > 8
    deltas = [payload["text"] for name, payload, _ in got if name == "delta"]
    done = got[-1][1]
    assert done["success"] is True and "".join(deltas) == done["response"]
    assert got[0][1]["data"] == done["data"] and got[-2][1]["citations"] == done["citations"]
    # Events arrive as the model writes: the first delta well before the last one.
    times = [at for name, _, at in got if name == "delta"]
    assert times[-1] - times[0] > (len(times) - 2) * TOKEN_MS / 1000 * 0.5
    plain = httpx.post(f"{stack.url}/api/v1/docdb/chat", json=ask, timeout=60).json()
    assert _steady(plain) == _steady(done)


def test_streamed_chat_error_is_an_error_event_then_the_failed_body(stack: Stack) -> None:
    got = stream(stack.url, "/docdb/chat", {"query": "x", "kb_id": "missing", "user_id": "u1"})
    assert [name for name, _, _ in got] == ["error", "done"]
    assert got[0][1]["code"] == 400 and "does not exist" in got[0][1]["message"]
    assert got[1][1]["success"] is False and got[1][1]["code"] == 400


def test_streamed_kb_query_ends_with_the_non_streamed_body(stack: Stack) -> None:
    ask = {"query": "How many quince trees grow behind the mill?", "mode": "naive"}
    got = stream(stack.url, "/mem/kb/query", ask)
    names = [name for name, _, _ in got]
    assert names[0] == "passages" and names[-2:] == ["citations", "done"] and "delta" in names
    done = got[-1][1]
    assert "".join(p["text"] for n, p, _ in got if n == "delta") == done["final_answer"]
    assert got[0][1]["rag_memory"] == done["rag_memory"] and "quince" in done["rag_memory"]
    plain = httpx.post(f"{stack.url}/api/v1/mem/kb/query", json=ask, timeout=60).json()
    assert plain == done
    bad = httpx.post(f"{stack.url}/api/v1/mem/kb/query", json={"query": " ", "stream": True}, timeout=10)
    assert bad.status_code == 400 and "empty" in bad.json()["message"]


def test_a_client_that_leaves_mid_stream_stops_the_model_call(stack: Stack) -> None:
    httpx.post(f"{stack.llm}/_latency", json={"ms": 0, "token_ms": 300}).raise_for_status()
    before = httpx.get(f"{stack.llm}/_stats").json()["streams_cancelled"]
    try:
        ask = {"query": "What did Grace Hopper design?", "kb_id": "facts", "user_id": "u1", "stream": True}
        with httpx.stream("POST", f"{stack.url}/api/v1/docdb/chat", json=ask, timeout=30) as response:
            for line in response.iter_lines():
                if line == "event: delta":
                    break  # the model is mid-answer: hang up
        deadline = time.monotonic() + 10
        while httpx.get(f"{stack.llm}/_stats").json()["streams_cancelled"] == before:
            assert time.monotonic() < deadline, "the model server never saw the stream closed"
            time.sleep(0.1)
    finally:
        httpx.post(f"{stack.llm}/_latency", json={"ms": 0, "token_ms": TOKEN_MS}).raise_for_status()


def scrape(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    response = httpx.get(f"{url}/metrics", timeout=10)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def test_metrics_of_every_process_parse_and_move_after_a_chat(stack: Stack) -> None:
    for name in ("gateway", "gen", "mem"):
        assert scrape(stack.services[name] if name != "gateway" else stack.url)
    chat = (
        "lore_http_requests_total",
        frozenset({("method", "POST"), ("route", "/api/v1/docdb/chat"), ("status", "200")}),
    )
    model = (
        "lore_model_calls_total",
        frozenset({("provider", "openai"), ("model", "fake-gpt"), ("outcome", "ok")}),
    )
    proxied = (
        "lore_http_requests_total",
        frozenset({("method", "POST"), ("route", "/api/v1/docdb/chat"), ("status", "200")}),
    )
    before, gateway_before = scrape(stack.services["docdb"]), scrape(stack.url)
    ask = {"query": "Who developed the first compiler?", "kb_id": "facts", "user_id": "u1"}
    assert httpx.post(f"{stack.url}/api/v1/docdb/chat", json=ask, timeout=60).json()["success"]
    after, gateway_after = scrape(stack.services["docdb"]), scrape(stack.url)
    assert after[chat] == before.get(chat, 0) + 1
    assert after[model] == before.get(model, 0) + 1
    assert gateway_after[proxied] == gateway_before.get(proxied, 0) + 1
    latency = (
        "lore_model_call_duration_seconds_count",
        frozenset({("provider", "openai"), ("model", "fake-gpt")}),
    )
    assert after[latency] == before.get(latency, 0) + 1
    stores = {
        dict(labels)["store"] for name, labels in after if name == "lore_store_call_duration_seconds_count"
    }
    assert {"relational", "vector"} <= stores
    assert any(name == "lore_embedder_duration_seconds_count" for name, _ in after)
    assert not any("facts" in dict(labels).values() for _, labels in after)  # no ids in labels
    # The parse queue's depth: nothing waits once the knowledge base is built.
    queued = {dict(k[1])["state"]: value for k, value in after.items() if k[0] == "lore_jobs_unfinished"}
    assert queued.get("pending") == 0 and "running" in queued, queued


def test_one_chat_is_one_trace_across_gateway_service_model_and_stores(
    stack: Stack, collector: Collector
) -> None:
    request_id = f"trace-{time.time_ns()}"
    ask = {"query": "Who led the design of COBOL?", "kb_id": "facts", "user_id": "u1"}
    headers = {"x-request-id": request_id}
    assert httpx.post(f"{stack.url}/api/v1/docdb/chat", json=ask, headers=headers, timeout=60).json()[
        "success"
    ]
    deadline = time.monotonic() + 15
    while True:
        tagged = {s.trace_id for s in collector.spans if s.attributes.get("lore.request_id") == request_id}
        spans = [s for s in collector.spans if s.trace_id in tagged]
        services = {s.service for s in spans}
        names = {s.name for s in spans}
        if {"lore-gateway", "lore-docdb"} <= services and any(n.startswith("model.") for n in names):
            break
        assert time.monotonic() < deadline, (services, names)
        time.sleep(0.2)
    assert len(tagged) == 1, "the gateway's and the service's spans share one trace"
    assert any(n.startswith(("vector.", "graph.")) or n.split()[0] in {"SELECT", "INSERT"} for n in names), (
        names
    )


async def test_an_mcp_client_lists_the_tools_and_uses_memory_and_knowledge(stack: Stack) -> None:
    from mcp import Client

    async with Client(f"{stack.url}/mcp") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert {
            "knowledge_search",
            "knowledge_ask",
            "knowledge_bases",
            "memory_add",
            "memory_search",
            "memory_list",
            "memory_update",
            "memory_delete",
            "memory_history",
            "kb_memory_insert",
            "kb_memory_query",
            "generate_table",
        } <= set(tools)
        assert tools["memory_search"].input_schema["properties"]["limit"]["type"] == "integer"
        assert "kb" in tools["generate_table"].input_schema["properties"]
        # A list tool answers one JSON array, not one text block per object.
        listed = await client.call_tool("knowledge_bases", {})
        bases = json.loads(listed.content[0].text)
        assert (
            len(listed.content) == 1 and isinstance(bases, list) and "facts" in {kb["name"] for kb in bases}
        )
        added = await client.call_tool(
            "memory_add", {"text": "I am allergic to peanuts.", "user_id": "mcp-alice"}
        )
        assert not added.is_error, added.content
        found = await client.call_tool("memory_search", {"query": "peanut allergy", "user_id": "mcp-alice"})
        assert not found.is_error and "peanut" in json.dumps(found.structured_content).lower()
        await client.call_tool("memory_add", {"text": "I live in Lisbon.", "user_id": "mcp-alice"})
        remembered = await client.call_tool("memory_list", {"user_id": "mcp-alice"})
        memories = json.loads(remembered.content[0].text)  # two objects: one array in one block
        assert len(remembered.content) == 1 and isinstance(memories, list) and len(memories) == 2
        asked = await client.call_tool(
            "knowledge_ask", {"kb": "facts", "question": "Who developed the first compiler?"}
        )
        assert not asked.is_error and asked.structured_content["citations"][0]["source_file"] == "facts.txt"
        missing = await client.call_tool("knowledge_ask", {"kb": "nope", "question": "anything?"})
        assert missing.is_error and "does not exist" in missing.content[0].text
        unscoped = await client.call_tool("memory_list", {})
        assert unscoped.is_error and "user_id" in unscoped.content[0].text


# ------------------------------------------------------------ OpenAI-compatible routes (openai SDK)

READER_KEY, MEMORY_ONLY_KEY = "openai-reader-key", "openai-memory-only-key"


@pytest.fixture(scope="module")
def keyed(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A second gateway in front of the same services, with a reader key and one limited to mem."""
    from lore_gateway.access import key_hash

    work = tmp_path_factory.mktemp("keyed")
    keys = [
        {"name": "reader", "key_sha256": key_hash(READER_KEY), "scopes": ["read"]},
        {
            "name": "memory-only",
            "key_sha256": key_hash(MEMORY_ONLY_KEY),
            "scopes": ["read"],
            "modules": ["mem"],
        },
    ]
    port = free_port()
    env = {
        "LORE_CONFIG_DIR": str(ROOT / "config"),
        "LORE__GATEWAY__PORT": str(port),
        "LORE__GATEWAY__API_KEYS": json.dumps(keys),
        "LORE__SECURITY__INTERNAL_TOKEN": INTERNAL_TOKEN,
        **{f"LORE__GATEWAY__{n.upper()}_URL": stack.services[n] for n in ("docdb", "gen", "mem")},
    }
    gateway = ServerProcess([sys.executable, "-m", "lore_gateway"], env=env, log_path=work / "gateway.log")
    try:
        gateway.wait_healthy(f"http://127.0.0.1:{port}/", timeout=60)
        yield f"http://127.0.0.1:{port}"
    finally:
        gateway.stop()


def test_the_openai_sdk_lists_knowledge_bases_and_memory_as_models(stack: Stack) -> None:
    from openai import OpenAI

    client = OpenAI(base_url=f"{stack.url}/v1", api_key="not-needed-without-keys")
    ids = {model.id for model in client.models.list()}
    assert {"facts", "mem:kb"} <= ids


def test_the_openai_sdk_gets_a_cited_answer_streamed_and_not(stack: Stack) -> None:
    from openai import OpenAI

    client = OpenAI(base_url=f"{stack.url}/v1", api_key="unused")
    ask = [{"role": "user", "content": "Who developed the first compiler?"}]
    completion = client.chat.completions.create(model="facts", messages=ask)  # type: ignore[arg-type]
    message = completion.choices[0].message
    citations = (message.model_extra or {})["citations"]
    assert citations[0]["title"] == "facts.txt" and citations[0]["dataset"] == "facts"
    assert message.content is not None and message.content.endswith("Sources:\n[1] facts.txt (facts)")
    assert completion.choices[0].finish_reason == "stop"

    chunks = list(client.chat.completions.create(model="facts", messages=ask, stream=True))  # type: ignore[arg-type]
    assert chunks[0].choices[0].delta.role == "assistant"
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert streamed == message.content and len(chunks) > 8  # one chunk per word the model wrote
    last = chunks[-1].choices[0]
    assert last.finish_reason == "stop" and (last.delta.model_extra or {})["citations"] == citations

    # Earlier turns travel as history; the memory graph is a model too, with its passages cited.
    follow_up = [
        *ask,
        {"role": "assistant", "content": message.content},
        {"role": "user", "content": "What did she design later?"},
    ]
    again = client.chat.completions.create(model="facts:rerank", messages=follow_up)  # type: ignore[arg-type]
    assert (again.choices[0].message.model_extra or {})["citations"]
    memory = client.chat.completions.create(
        model="mem:kb",
        messages=[{"role": "user", "content": "How many quince trees grow behind the mill?"}],
    )
    assert "quince" in json.dumps((memory.choices[0].message.model_extra or {})["citations"])


def test_the_openai_sdk_raises_its_own_errors_for_lore_refusals(stack: Stack) -> None:
    import openai

    client = openai.OpenAI(base_url=f"{stack.url}/v1", api_key="unused", max_retries=0)
    ask = [{"role": "user", "content": "anything?"}]
    with pytest.raises(openai.BadRequestError, match="does not exist"):
        client.chat.completions.create(model="no-such-kb", messages=ask)  # type: ignore[arg-type]
    with pytest.raises(openai.BadRequestError, match="query mode 'sideways'"):
        client.chat.completions.create(model="facts:sideways", messages=ask)  # type: ignore[arg-type]
    with pytest.raises(openai.BadRequestError, match="non-empty user message"):
        client.chat.completions.create(model="facts", messages=[{"role": "user", "content": " "}])
    with pytest.raises(openai.APIError, match="does not exist"):  # an error chunk, in a stream
        list(client.chat.completions.create(model="no-such-kb", messages=ask, stream=True))  # type: ignore[arg-type]


def test_openai_routes_need_a_key_with_the_knowledge_bases_module(keyed: str) -> None:
    import openai

    ask = [{"role": "user", "content": "Who developed the first compiler?"}]
    nobody = openai.OpenAI(base_url=f"{keyed}/v1", api_key="wrong-key", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        nobody.chat.completions.create(model="facts", messages=ask)  # type: ignore[arg-type]
    with pytest.raises(openai.AuthenticationError):
        nobody.models.list()
    memory_only = openai.OpenAI(base_url=f"{keyed}/v1", api_key=MEMORY_ONLY_KEY, max_retries=0)
    with pytest.raises(openai.PermissionDeniedError, match="limited to mem"):
        memory_only.chat.completions.create(model="facts", messages=ask)  # type: ignore[arg-type]
    assert [m.id for m in memory_only.models.list()] == ["mem:kb"]
    reader = openai.OpenAI(base_url=f"{keyed}/v1", api_key=READER_KEY, max_retries=0)
    answer = reader.chat.completions.create(model="facts", messages=ask)  # type: ignore[arg-type]
    assert (answer.choices[0].message.model_extra or {})["citations"][0]["title"] == "facts.txt"


def test_the_readme_s_api_reference_path_serves_a_rendered_reference(stack: Stack) -> None:
    readme = (ROOT / "README.md").read_text()
    assert "`/schema` on the gateway" in readme
    page = httpx.get(f"{stack.url}/schema", timeout=30)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "/api/v1/docdb/chat" in page.text and "/api/v1/mem/vg/search" in page.text
    assert "/schema/openapi.json" in page.text
