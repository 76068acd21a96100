"""Isolation: two keys limited to their own knowledge bases, datasets and memories never see the other's.

`lore-up` starts the stack with two limited keys and an admin key, and its own internal credential.
Each key plants a secret word in its documents (and so its graph's entities), its memories and its
workspace of the knowledge-graph memory (mem kb). Then every route of the merged OpenAPI
document, the table WebSocket, every MCP tool and the OpenAI-compatible routes are called by the other
key with the first key's names and ids: no answer carries the first key's secret. A route missing from
`REQUESTS` (a new one) fails the walk until it is given a request here. Afterwards the first key's data
is all still there, and writes made at once under both keys stay apart.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from lore_common.testing.processes import TEST_INTERNAL_TOKEN, ServerProcess, free_port

ROOT = Path(__file__).resolve().parents[2]
DS = "/api/v1/docdb/files/raw-files/datasets"
KB = "/api/v1/docdb/files/knowledge-bases"
TASKS = "/api/v1/docdb/files/processing/tasks"
ADMIN_KEY = "isolation-admin-key"


@dataclass
class Tenant:
    """One key and everything it planted."""

    name: str
    key: str
    secret: str
    user: str
    kb: str = ""
    dataset: str = ""
    workspace: str = ""  # its workspace of the memory graph (the gateway gives it)
    ids: dict[str, str] = field(default_factory=dict)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


@dataclass
class Stack:
    url: str
    services: dict[str, str]
    log: Path
    a: Tenant
    b: Tenant
    env: dict[str, str] = field(default_factory=dict)


def _keys(a: Tenant, b: Tenant) -> list[dict[str, Any]]:
    from lore_gateway.access import key_hash

    return [
        {"name": "admin", "key_sha256": key_hash(ADMIN_KEY), "scopes": ["admin"]},
        {
            "name": "team-a",
            "key_sha256": key_hash(a.key),
            "scopes": ["admin"],
            "knowledge_bases": ["team-a-*"],
            "datasets": ["team-a-*"],
            # A pattern: each request names its user, within alice-*; the memory graph in its own workspace.
            "memory": {"user_id": "alice-*", "kb": True},
        },
        {
            "name": "team-b",
            "key_sha256": key_hash(b.key),
            "scopes": ["admin"],
            "knowledge_bases": ["team-b-*"],
            "datasets": ["team-b-*"],
            # A fixed value: the gateway puts user_id bob on every memory call of this key.
            "memory": {"user_id": "bob", "kb": True},
        },
    ]


def _status(http: httpx.Client, path: str, owner: Tenant) -> Any:
    return http.get(path, headers=owner.headers).json()["status"]


def _wait_for(read: Callable[[], Any], done: tuple[str, ...], limit: float = 60.0) -> Any:
    """Poll `read` until it returns one of `done`; that value."""
    deadline = time.monotonic() + limit
    while (value := read()) not in done:
        assert time.monotonic() < deadline, f"still {value!r} after {limit:.0f} s"
        time.sleep(0.05)
    return value


def _plant(http: httpx.Client, t: Tenant) -> None:
    text = (
        f"The vault of {t.name} is guarded by Captain {t.secret}. Captain {t.secret} keeps the "
        f"ledger {t.secret} in the northern archive."
    )
    h = t.headers
    assert http.post(DS, json={"name": t.dataset}, headers=h).status_code in (200, 201)
    r = http.post(f"{DS}/{t.dataset}/files", files={"files": ("notes.md", text.encode())}, headers=h)
    assert r.status_code == 200, r.text
    r = http.post(
        f"{DS}/{t.dataset}/upload/init",
        json={"filename": "part.md", "total_chunks": 2, "total_size": 10},
        headers=h,
    )
    assert r.status_code == 200, r.text
    t.ids["upload_id"] = r.json()["upload_id"] if "upload_id" in r.json() else r.json()["data"]["upload_id"]
    assert http.post(KB, json={"name": t.kb}, headers=h).status_code in (200, 201)
    r = http.post(f"{KB}/{t.kb}/parse", json={"datasets": [t.dataset]}, headers=h)
    assert r.status_code == 200, r.text
    t.ids["task_id"] = r.json()["data"]["tasks"][0]["task_id"]
    r = http.post(
        "/api/v1/mem/vg/add",
        json={
            "messages": [{"role": "user", "content": f"My locker code word is {t.secret}."}],
            "user_id": t.user,
            "infer": False,
        },
        headers=h,
    )
    assert r.status_code == 200, r.text
    t.ids["memory_id"] = r.json()["results"][0]["id"]
    r = http.post("/api/v1/mem/kb/insert", data={"query": text}, headers=h)
    assert r.status_code == 202, r.text
    t.ids["job_id"] = r.json()["id"]
    r = http.post(
        "/api/v1/gen/pipeline/submit", json={"question": f"Who guards {t.name}?", "kb_name": t.kb}, headers=h
    )
    assert r.status_code in (200, 202), r.text
    t.ids["table_task_id"] = r.json()["task_id"]
    r = http.post(
        "/api/v1/gen/tag-tree/generate", json={"topic": "vaults", "mode": "kb", "kb_name": t.kb}, headers=h
    )
    assert r.status_code in (200, 202), r.text
    t.ids["tree_task_id"] = r.json()["task_id"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    work = tmp_path_factory.mktemp("isolation")
    a = Tenant(
        "team-a", "key-of-team-a", "Quorvalith", "alice-1", "team-a-kb", "team-a-docs", "user_id=alice-*"
    )
    b = Tenant("team-b", "key-of-team-b", "Zembrathine", "bob", "team-b-kb", "team-b-docs", "user_id=bob")
    ports = {name: free_port() for name in ("gateway", "docdb", "gen", "mem")}
    env = {
        "LORE_CONFIG_DIR": str(ROOT / "config"),
        "LORE__LOGGING__FORMAT": "json",
        "LORE__GATEWAY__PORT": str(ports["gateway"]),
        "LORE__GATEWAY__API_KEYS": json.dumps(_keys(a, b)),
        "LORE__DOCDB__EMBEDDING_API__PROVIDER": "hashing",
        "LORE__MEM__EMBEDDING_API__PROVIDER": "hashing",
        "LORE__MEM__MEMORYKB__EMBEDDING__PROVIDER": "hashing",
        "LORE__MEM__MEMORYVG__EMBEDDER__PROVIDER": "hashing",
        # Known, so that a second gateway (a replica) can be put in front of the same services.
        "LORE__SECURITY__INTERNAL_TOKEN": TEST_INTERNAL_TOKEN,
    }
    for name in ("docdb", "gen", "mem"):
        env[f"LORE__{name.upper()}__SERVER__PORT"] = str(ports[name])
        env[f"LORE__{name.upper()}__SERVER__DATA_DIR"] = str(work / "data" / name)
        env[f"LORE__GATEWAY__{name.upper()}_URL"] = f"http://127.0.0.1:{ports[name]}"
    env["LORE__GEN__DOCDB_URL"] = f"http://127.0.0.1:{ports['docdb']}"
    log = work / "lore.log"
    launcher = ServerProcess([sys.executable, "-m", "lore_gateway.launch"], env=env, cwd=work, log_path=log)
    url = f"http://127.0.0.1:{ports['gateway']}"
    try:
        launcher.wait_healthy(f"{url}/health", timeout=120)
        with httpx.Client(base_url=url, timeout=60) as http:
            _plant(http, a)
            _plant(http, b)
            for t in (a, b):
                task = f"{TASKS}/{t.ids['task_id']}"
                status = _wait_for(partial(_status, http, task, t), ("completed", "failed"))
                assert status == "completed", f"{t.name}'s parse: {status}"
                job = f"/api/v1/mem/kb/insert/{t.ids['job_id']}"
                status = _wait_for(partial(_status, http, job, t), ("done", "failed"))
                assert status == "done", f"{t.name}'s memory graph insert: {status}"
        services = {n: f"http://127.0.0.1:{ports[n]}" for n in ("docdb", "gen", "mem")}
        yield Stack(url, services, log, a, b, env)
    finally:
        launcher.stop()


# ------------------------------------------------------------------ what each route is asked


def _path_values(owner: Tenant, module: str) -> dict[str, str]:
    return {
        "dataset": owner.dataset,
        "dataset_name": owner.dataset,
        "kb_name": owner.kb,
        "filename": "notes.md",
        "path": "notes.md",
        "upload_id": owner.ids["upload_id"],
        "task_id": owner.ids["table_task_id"] if module == "gen" else owner.ids["task_id"],
        "memory_id": owner.ids["memory_id"],
        "job_id": owner.ids.get("job_id", "no-job"),
        "section": "llm",
        "name": "no-such-schema",
    }


def _json(body: Callable[[Tenant], Any]) -> Callable[[Tenant], dict[str, Any]]:
    return lambda owner: {"json": body(owner)}


def _query(params: Callable[[Tenant], dict[str, Any]]) -> Callable[[Tenant], dict[str, Any]]:
    return lambda owner: {"params": params(owner)}


def _none(owner: Tenant) -> dict[str, Any]:
    return {}


def _ask(owner: Tenant) -> str:
    """A question about the owner's planted text that does not itself hold the secret (answers echo it)."""
    return f"Who guards the vault of {owner.name}? Which Captain keeps the ledger?"


# Every route of the three modules, and the request another key sends it, aimed at `owner`'s things.
# A list holds several variants (streamed and not, with and without the scope).
REQUESTS: dict[tuple[str, str], list[Callable[[Tenant], dict[str, Any]]]] = {
    ("GET", "/api/v1/docdb/config"): [_none],
    ("GET", "/api/v1/docdb/config/{section}"): [_none],
    ("POST", "/api/v1/docdb/config/reload"): [_none],
    ("GET", DS): [_none],
    ("POST", DS): [_json(lambda o: {"name": f"{o.name}-more"})],
    ("DELETE", DS + "/{dataset}"): [_none],
    ("DELETE", DS + "/{dataset}/files/{filename}"): [_none],
    ("GET", DS + "/{dataset}/files"): [_none],
    ("GET", DS + "/{dataset}/files/{filename}"): [_none],
    ("POST", DS + "/{dataset}/files"): [
        lambda o: {"files": {"files": ("x.md", b"planted by the other key")}}
    ],
    ("PUT", DS + "/{dataset}/files/{path}"): [lambda o: {"content": b"overwritten by the other key"}],
    ("PUT", DS + "/{dataset}/files"): [
        lambda o: {"params": {"path": "notes.md"}, "content": b"overwritten by the other key"}
    ],
    ("GET", DS + "/{dataset}/upload/{upload_id}"): [_none],
    ("PUT", DS + "/{dataset}/source"): [_json(lambda o: {"kind": "folder", "path": "/etc"})],
    ("GET", DS + "/{dataset}/source"): [_none],
    ("DELETE", DS + "/{dataset}/source"): [_none],
    ("POST", DS + "/{dataset}/sync"): [_none],
    ("GET", DS + "/{dataset}/syncs"): [_none],
    ("GET", DS + "/{dataset}/syncs/{task_id}"): [_none],
    ("GET", "/api/v1/docdb/files/raw-files/sources"): [_none],
    ("DELETE", DS + "/{dataset}/upload/{upload_id}"): [_none],
    ("POST", DS + "/{dataset}/upload/{upload_id}/chunk"): [
        lambda o: {"params": {"chunk_index": 0}, "content": b"12345"}
    ],
    ("POST", DS + "/{dataset}/upload/{upload_id}/complete"): [_none],
    ("POST", DS + "/{dataset}/upload/init"): [
        _json(lambda o: {"filename": "y.md", "total_chunks": 1, "total_size": 3})
    ],
    ("GET", "/api/v1/docdb/schemas"): [_none],
    ("POST", "/api/v1/docdb/schemas"): [
        _json(lambda o: {"name": "probe", "entities": [{"name": "Person", "type": "客观实体"}]})
    ],
    ("GET", "/api/v1/docdb/schemas/{name}"): [_none],
    ("DELETE", "/api/v1/docdb/schemas/{name}"): [_none],
    ("GET", KB): [_none],
    ("POST", KB): [_json(lambda o: {"name": f"{o.name}-kb2"})],
    ("GET", KB + "/{kb_name}"): [_none],
    ("DELETE", KB + "/{kb_name}"): [_none],
    ("GET", KB + "/{kb_name}/graph"): [_none],
    ("GET", KB + "/{kb_name}/files"): [_none],
    ("GET", KB + "/{kb_name}/overview"): [_none],
    ("POST", KB + "/{kb_name}/parse"): [_json(lambda o: {"datasets": [o.dataset], "force": True})],
    ("DELETE", KB + "/{kb_name}/datasets/{dataset_name}"): [_none],
    ("POST", TASKS + "/{task_id}/cancel"): [_none],
    ("GET", "/api/v1/docdb/files/processing/config"): [_none],
    ("GET", TASKS + "/{task_id}"): [_none],
    ("GET", TASKS): [_none],
    ("POST", "/api/v1/docdb/chat"): [
        _json(lambda o: {"query": _ask(o), "kb_id": o.kb, "user_id": "u"}),
        _json(lambda o: {"query": _ask(o), "kb_id": o.kb, "user_id": "u", "stream": True}),
    ],
    ("POST", "/api/v1/docdb/retrieve"): [_json(lambda o: {"query": _ask(o), "kb_id": o.kb})],
    ("GET", "/api/v1/gen/pipeline/status/{task_id}"): [_none],
    ("POST", "/api/v1/gen/pipeline/submit"): [
        _json(lambda o: {"question": _ask(o), "kb_name": o.kb}),
        _json(lambda o: {"question": _ask(o)}),
    ],
    ("POST", "/api/v1/gen/tag-tree/generate"): [
        _json(lambda o: {"topic": "vaults", "mode": "kb", "kb_name": o.kb})
    ],
    ("GET", "/api/v1/gen/tag-tree/status/{task_id}"): [
        lambda o: {"path": f"/api/v1/gen/tag-tree/status/{o.ids['tree_task_id']}"}
    ],
    ("POST", "/api/v1/gen/tag-tree/submit"): [lambda o: {"files": {"file": ("t.csv", b"a,b\n")}}],
    ("POST", "/api/v1/mem/vg/add"): [
        _json(lambda o: {"messages": [{"role": "user", "content": "hi"}], "user_id": o.user, "infer": False})
    ],
    ("GET", "/api/v1/mem/vg"): [_query(lambda o: {"user_id": o.user}), _none],
    ("DELETE", "/api/v1/mem/vg"): [_query(lambda o: {"user_id": o.user})],
    ("GET", "/api/v1/mem/vg/{memory_id}"): [_none],
    ("PUT", "/api/v1/mem/vg/{memory_id}"): [_json(lambda o: {"data": "overwritten by the other key"})],
    ("DELETE", "/api/v1/mem/vg/{memory_id}"): [_none],
    ("GET", "/api/v1/mem/vg/{memory_id}/history"): [_none],
    ("POST", "/api/v1/mem/vg/search"): [
        _json(lambda o: {"query": "locker code word", "user_id": o.user}),
        _json(lambda o: {"query": "locker code word"}),
    ],
    ("POST", "/api/v1/mem/kb/insert"): [
        lambda o: {"data": {"query": _planted(o)}},
        # Naming the owner's workspace is refused (and plants nothing there).
        lambda o: {"data": {"query": _planted(o)}, "params": {"workspace": o.workspace}},
    ],
    ("GET", "/api/v1/mem/kb/insert/{job_id}"): [_none, _query(lambda o: {"workspace": o.workspace})],
    ("GET", "/api/v1/mem/kb/inserts"): [_none, _query(lambda o: {"workspace": o.workspace})],
    # Forgetting the owner's insert: in the caller's own workspace it is not there; naming the owner's
    # workspace is refused. The owner's memory graph still answers below.
    ("DELETE", "/api/v1/mem/kb/insert/{job_id}"): [_none, _query(lambda o: {"workspace": o.workspace})],
    ("POST", "/api/v1/mem/kb/query"): [
        _json(lambda o, mode=mode, stream=stream: {"query": _ask(o), "mode": mode, "stream": stream})
        for mode in ("naive", "local", "global", "hybrid")
        for stream in (False, True)
    ]
    + [
        lambda o: {"json": {"query": _ask(o), "mode": "hybrid"}, "params": {"workspace": o.workspace}},
        lambda o: {"json": {"query": _ask(o), "stream": True}, "params": {"workspace": o.workspace}},
    ],
}


def _planted(owner: Tenant) -> str:
    """What the other key inserts into the memory graph, aimed at `owner`: it lands in its own workspace."""
    return f"Planted by the other key: the Moonlit Heron archive of {owner.name}."


MODULES = ("/api/v1/docdb/", "/api/v1/gen/", "/api/v1/mem/")


def _routes(http: httpx.Client) -> list[tuple[str, str]]:
    document = http.get("/schema/openapi.json").json()
    assert "x-missing-services" not in document["info"], document["info"]
    return sorted(
        (method.upper(), path)
        for path, item in document["paths"].items()
        if path.startswith(MODULES)
        for method in item
        if method in ("get", "post", "put", "delete", "patch")
    )


def _call(
    http: httpx.Client,
    caller: Tenant,
    owner: Tenant,
    method: str,
    template: str,
    how: Callable[[Tenant], dict[str, Any]],
) -> httpx.Response:
    module = template.split("/")[3]
    request = how(owner)
    path = request.pop("path", None) or template.format(**_path_values(owner, module))
    return http.request(method, path, headers=caller.headers, **request)


def _leaks(text: str, owner: Tenant) -> bool:
    return owner.secret.lower() in text.lower()


# ------------------------------------------------------------------ the tests


@pytest.mark.parametrize("tenant", ["a", "b"])
def test_each_key_sees_its_own_secret_where_it_planted_it(stack: Stack, tenant: str) -> None:
    """The control: the walk below could not pass by finding nothing anywhere."""
    t = stack.a if tenant == "a" else stack.b
    with httpx.Client(base_url=stack.url, timeout=60, headers=t.headers) as http:
        found = http.post("/api/v1/docdb/retrieve", json={"query": _ask(t), "kb_id": t.kb}).text
        graph = http.get(f"{KB}/{t.kb}/graph").text
        memories = http.get("/api/v1/mem/vg", params={"user_id": t.user}).text
        texts = [found, graph, memories]
        for mode in ("naive", "local", "hybrid"):
            for stream in (False, True):
                ask = {"query": _ask(t), "mode": mode, "stream": stream}
                texts.append(http.post("/api/v1/mem/kb/query", json=ask).text)
        job = http.get(f"/api/v1/mem/kb/insert/{t.ids['job_id']}").json()
        assert job["status"] == "done" and job["workspace"] == t.workspace, job
    for text in texts:
        assert _leaks(text, t), text[:500]


@pytest.mark.parametrize("direction", ["b_reads_a", "a_reads_b"])
def test_every_route_called_by_the_other_key_never_returns_the_secret(stack: Stack, direction: str) -> None:
    caller, owner = (stack.b, stack.a) if direction == "b_reads_a" else (stack.a, stack.b)
    with httpx.Client(base_url=stack.url, timeout=60) as http:
        routes = _routes(http)
        missing = [route for route in routes if route not in REQUESTS]
        assert not missing, f"routes with no isolation request in tests/e2e/test_isolation.py: {missing}"
        for method, template in routes:
            for how in REQUESTS[(method, template)]:
                response = _call(http, caller, owner, method, template, how)
                assert not _leaks(response.text, owner), (
                    method,
                    template,
                    response.status_code,
                    response.text[:300],
                )
                assert response.status_code != 500, (method, template, response.text[:300])
        # Nothing the other key did reached the owner's things.
        h = owner.headers
        assert http.get(f"{KB}/{owner.kb}", headers=h).status_code == 200
        assert http.get(f"{DS}/{owner.dataset}/files", headers=h).json()["files"]
        assert _leaks(
            http.post(
                "/api/v1/docdb/retrieve", json={"query": _ask(owner), "kb_id": owner.kb}, headers=h
            ).text,
            owner,
        )
        mine = http.get(f"/api/v1/mem/vg/{owner.ids['memory_id']}", headers=h)
        assert mine.status_code == 200 and _leaks(mine.text, owner), mine.text
        assert not any(
            "other key" in str(m.get("memory"))
            for m in http.get("/api/v1/mem/vg", params={"user_id": owner.user}, headers=h).json()["results"]
        )

        # The other key's memory-graph insert went to its own workspace, never the owner's.
        def answer(t: Tenant) -> str:
            ask = {"query": "Which archive was planted by the other key?", "mode": "naive"}
            return http.post("/api/v1/mem/kb/query", json=ask, headers=t.headers).text

        _wait_for(lambda: _planted(owner) in answer(caller), (True,), limit=30)
        assert _planted(owner) not in answer(owner) and _leaks(answer(owner), owner)


def test_the_table_stream_refuses_another_keys_knowledge_base(stack: Stack) -> None:
    from websockets.sync.client import connect

    ws_url = stack.url.replace("http", "ws", 1) + "/api/v1/gen/pipeline/stream"
    with connect(ws_url, additional_headers=stack.b.headers) as socket:
        socket.send(json.dumps({"question": _ask(stack.a), "kb_name": stack.a.kb}))
        replies = []
        try:
            while True:
                replies.append(socket.recv(timeout=20))
        except Exception:  # closed by the gateway
            pass
    assert replies and "may not use knowledge base" in replies[0]
    assert not any(_leaks(str(r), stack.a) for r in replies)


def _mcp(http: httpx.Client, tenant: Tenant, method: str, params: dict[str, Any]) -> dict[str, Any]:
    response = http.post(
        "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
        headers={**tenant.headers, "Accept": "application/json, text/event-stream"},
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


MCP_ARGUMENTS: dict[str, Callable[[Tenant], dict[str, Any]]] = {
    "knowledge_bases": lambda o: {},
    "knowledge_search": lambda o: {"kb": o.kb, "query": _ask(o)},
    "knowledge_ask": lambda o: {"kb": o.kb, "question": _ask(o)},
    "memory_add": lambda o: {"text": "planted by the other key", "user_id": o.user},
    "memory_search": lambda o: {"query": "locker code word", "user_id": o.user},
    "memory_list": lambda o: {"user_id": o.user},
    "memory_update": lambda o: {"memory_id": o.ids["memory_id"], "text": "overwritten by the other key"},
    "memory_delete": lambda o: {"memory_id": o.ids["memory_id"]},
    "memory_history": lambda o: {"memory_id": o.ids["memory_id"]},
    "kb_memory_insert": lambda o: {"text": "planted by the other key"},
    "kb_memory_query": lambda o: {"question": _ask(o), "mode": "naive"},
    "generate_table": lambda o: {"question": _ask(o), "kb": o.kb},
}


def test_every_mcp_tool_called_by_the_other_key_never_returns_the_secret(stack: Stack) -> None:
    a, b = stack.a, stack.b
    with httpx.Client(base_url=stack.url, timeout=60) as http:
        tools = [tool["name"] for tool in _mcp(http, b, "tools/list", {})["result"]["tools"]]
        missing = [name for name in tools if name not in MCP_ARGUMENTS]
        assert not missing, f"MCP tools with no isolation call in tests/e2e/test_isolation.py: {missing}"
        for name in tools:
            reply = _mcp(http, b, "tools/call", {"name": name, "arguments": MCP_ARGUMENTS[name](a)})
            assert not _leaks(json.dumps(reply, ensure_ascii=False), a), (name, reply)
        # The control: the owner's own search through MCP finds it.
        own = _mcp(
            http,
            a,
            "tools/call",
            {"name": "knowledge_search", "arguments": MCP_ARGUMENTS["knowledge_search"](a)},
        )
        assert _leaks(json.dumps(own, ensure_ascii=False), a), own
        own = _mcp(
            http,
            a,
            "tools/call",
            {"name": "kb_memory_query", "arguments": MCP_ARGUMENTS["kb_memory_query"](a)},
        )
        assert _leaks(json.dumps(own, ensure_ascii=False), a), own
        listed = _mcp(http, b, "tools/call", {"name": "knowledge_bases", "arguments": {}})
        assert b.kb in json.dumps(listed) and a.kb not in json.dumps(listed)


def test_openai_routes_list_and_answer_only_the_keys_knowledge_bases(stack: Stack) -> None:
    a, b = stack.a, stack.b
    with httpx.Client(base_url=stack.url, timeout=60) as http:
        models = {m["id"] for m in http.get("/v1/models", headers=b.headers).json()["data"]}
        assert b.kb in models and a.kb not in models and "mem:kb" in models
        for model, stream in ((a.kb, False), (a.kb, True)):
            response = http.post(
                "/v1/chat/completions",
                json={"model": model, "messages": [{"role": "user", "content": _ask(a)}], "stream": stream},
                headers=b.headers,
            )
            assert response.status_code == 403, response.text
            assert not _leaks(response.text, a)
        # mem:kb answers each key from its own workspace of the memory graph.
        for model in ("mem:kb", "mem:kb:local", "mem:kb:global"):
            for stream in (False, True):
                ask = {"model": model, "messages": [{"role": "user", "content": _ask(a)}], "stream": stream}
                response = http.post("/v1/chat/completions", json=ask, headers=b.headers)
                assert response.status_code == 200, response.text
                assert not _leaks(response.text, a), (model, stream)
        ask = {"model": "mem:kb:naive", "messages": [{"role": "user", "content": _ask(a)}]}
        assert _leaks(http.post("/v1/chat/completions", json=ask, headers=a.headers).text, a)


def test_keys_self_shows_the_calling_keys_limits(stack: Stack) -> None:
    with httpx.Client(base_url=stack.url, timeout=10) as http:
        body = http.get("/api/v1/keys/self", headers=stack.b.headers).json()
        assert http.get("/api/v1/keys/self").status_code == 401
        document = http.get("/schema/openapi.json").json()
    reply = document["paths"]["/api/v1/keys/self"]["get"]["responses"]["200"]["content"]["application/json"]
    assert reply["schema"]["$ref"].rsplit("/", 1)[-1] in document["components"]["schemas"]
    assert body["name"] == "team-b" and body["auth"] is True
    assert body["knowledge_bases"] == ["team-b-*"] and body["datasets"] == ["team-b-*"]
    assert body["memory"] == {
        "user_id": "bob",
        "agent_id": None,
        "run_id": None,
        "kb": True,
        "workspace": "user_id=bob",
    }
    assert stack.b.key not in json.dumps(body)


def test_concurrent_writes_under_both_keys_stay_apart(stack: Stack) -> None:
    async def run() -> None:
        async with httpx.AsyncClient(base_url=stack.url, timeout=60) as http:

            async def add(t: Tenant, n: int) -> None:
                r = await http.post(
                    "/api/v1/mem/vg/add",
                    json={"messages": [{"role": "user", "content": f"{t.name} note {n}"}], "infer": False}
                    | ({"user_id": "alice-2"} if t is stack.a else {}),
                    headers=t.headers,
                )
                assert r.status_code == 200, r.text

            async def upload(t: Tenant, n: int) -> None:
                r = await http.post(
                    f"{DS}/{t.dataset}/files",
                    files={"files": (f"c{n}.md", f"{t.name} file {n}".encode())},
                    headers=t.headers,
                )
                assert r.status_code == 200, r.text

            async def remember(t: Tenant, n: int) -> str:
                text = f"Beacon {t.name}-{n} shines over the harbour of {t.name}."
                r = await http.post("/api/v1/mem/kb/insert", data={"query": text}, headers=t.headers)
                assert r.status_code == 202, r.text
                return str(r.json()["id"])

            jobs = [add(t, n) for n in range(8) for t in (stack.a, stack.b)]
            jobs += [upload(t, n) for n in range(4) for t in (stack.a, stack.b)]
            inserts = [(t, remember(t, n)) for n in range(3) for t in (stack.a, stack.b)]
            ids = await asyncio.gather(*jobs, *(insert for _, insert in inserts))
            for (t, _), job_id in zip(inserts, ids[len(jobs) :], strict=True):
                async with asyncio.timeout(60):
                    while (await http.get(f"/api/v1/mem/kb/insert/{job_id}", headers=t.headers)).json()[
                        "status"
                    ] not in ("done", "failed"):
                        await asyncio.sleep(0.05)
            for t in (stack.a, stack.b):
                other = stack.b if t is stack.a else stack.a
                ask = {"query": "Which beacon shines over the harbour?", "mode": "naive"}
                seen = (await http.post("/api/v1/mem/kb/query", json=ask, headers=t.headers)).text
                assert f"Beacon {t.name}-" in seen and f"Beacon {other.name}-" not in seen, seen[:500]
            a_list = (
                await http.get("/api/v1/mem/vg", params={"user_id": "alice-2"}, headers=stack.a.headers)
            ).json()
            b_list = (await http.get("/api/v1/mem/vg", headers=stack.b.headers)).json()
            a_notes = [m["memory"] for m in a_list["results"]]
            b_notes = [m["memory"] for m in b_list["results"] if "note" in m["memory"]]
            assert len(a_notes) == 8 and all(n.startswith("team-a") for n in a_notes), a_notes
            assert len(b_notes) == 8 and all(n.startswith("team-b") for n in b_notes), b_notes
            for t in (stack.a, stack.b):
                files = (await http.get(f"{DS}/{t.dataset}/files", headers=t.headers)).json()["files"]
                other = stack.b if t is stack.a else stack.a
                assert all(other.name not in f["name"] for f in files)

    asyncio.run(run())


def test_a_service_port_refuses_a_call_without_the_internal_credential(stack: Stack) -> None:
    for name, url in stack.services.items():
        probe = {
            "docdb": "/api/v1/docdb/files/knowledge-bases",
            "gen": "/api/v1/gen/pipeline/status/x",
            "mem": "/api/v1/mem/vg?user_id=bob",
        }[name]
        response = httpx.get(url + probe, timeout=10)
        assert response.status_code == 401, (name, response.text)
        assert response.json()["success"] is False and "internal credential" in response.json()["message"]
        assert httpx.get(url + "/health", timeout=10).status_code == 200
        assert httpx.get(url + "/livez", timeout=10).status_code == 200


def test_refused_calls_and_admin_actions_are_audited_by_key_name_never_the_key(stack: Stack) -> None:
    with httpx.Client(base_url=stack.url, timeout=10) as http:
        http.delete(f"{KB}/{stack.a.kb}", headers=stack.b.headers)  # refused: another team's
        metrics = http.get("/metrics").text
    refused = [
        line
        for line in metrics.splitlines()
        if line.startswith("lore_audit_events_total{") and 'action="refused"' in line
    ]
    assert refused and sum(float(line.rsplit(" ", 1)[1]) for line in refused) >= 1
    log = stack.log.read_text()
    audit = [json.loads(line) for line in log.splitlines() if '"audit"' in line and line.startswith("{")]
    assert any(
        e.get("action") == "refused" and e.get("key") == "team-b" and e.get("route") == f"{KB}/{stack.a.kb}"
        for e in audit
    )
    assert any(e.get("action") == "keys_loaded" for e in audit)
    assert any(e.get("action") == "internal_credential" for e in audit)
    for key in (stack.a.key, stack.b.key, ADMIN_KEY):
        assert key not in log


def test_a_second_gateway_replica_agrees_whose_gen_tasks_are_whose(stack: Stack, tmp_path: Path) -> None:
    """gen stores the key that started a task: a replica that did not take the submit agrees."""
    port = free_port()
    env = {**stack.env, "LORE__GATEWAY__PORT": str(port)}
    replica = ServerProcess([sys.executable, "-m", "lore_gateway"], env=env, log_path=tmp_path / "gw2.log")
    # A table started over the WebSocket of the first gateway is its key's as well.
    from websockets.sync.client import connect

    ws_url = stack.url.replace("http", "ws", 1) + "/api/v1/gen/pipeline/stream"
    with connect(ws_url, additional_headers=stack.a.headers) as socket:
        socket.send(json.dumps({"question": _ask(stack.a), "kb_name": stack.a.kb}))
        stack.a.ids["stream_task_id"] = json.loads(socket.recv(timeout=30))["task_id"]
    try:
        replica.wait_healthy(f"http://127.0.0.1:{port}/health", timeout=60)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as other:
            stream = f"/api/v1/gen/pipeline/status/{stack.a.ids['stream_task_id']}"
            assert other.get(stream, headers=stack.a.headers).status_code == 200
            assert other.get(stream, headers=stack.b.headers).status_code == 404
            for t, them in ((stack.a, stack.b), (stack.b, stack.a)):
                for kind, task in (("pipeline", "table_task_id"), ("tag-tree", "tree_task_id")):
                    path = f"/api/v1/gen/{kind}/status/{t.ids[task]}"
                    mine = other.get(path, headers=t.headers)
                    assert mine.status_code == 200 and mine.json()["task_id"] == t.ids[task], mine.text
                    theirs = other.get(path, headers=them.headers)
                    assert theirs.status_code == 404 and not _leaks(theirs.text, t), theirs.text
                    spoofed = other.get(path, headers={**them.headers, "x-lore-caller": t.name})
                    assert spoofed.status_code == 404, spoofed.text
    finally:
        replica.stop()
