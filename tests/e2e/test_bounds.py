"""Every bounded input states its range in the OpenAPI documents and a value outside it gets a 4xx that
names the field and the range (the cases a new user hit: `limit: -5` and `top_k: 100000000`)."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from lore_common.testing.asgi import AppClient, running
from lore_core.settings import load_settings

ENV = {
    "LORE__DOCDB__EMBEDDING_API__PROVIDER": "hashing",
    "LORE__DOCDB__GRAPH_STORE__ENABLED": "false",
    "LORE__MEM__EMBEDDING_API__PROVIDER": "hashing",
    "LORE__MEM__MEMORYKB__EMBEDDING__PROVIDER": "hashing",
}


@asynccontextmanager
async def service(name: str) -> AsyncIterator[AppClient]:
    from importlib import import_module

    with tempfile.TemporaryDirectory() as work:
        env = {**ENV, f"LORE__{name.upper()}__SERVER__DATA_DIR": f"{work}/{name}"}
        app = import_module(f"lore_{name}.app").create_app(load_settings(Path(work) / "config", environ=env))
        async with running(app, f"http://{name}.test") as client:
            yield client


# Every request here is refused or only reads, so the module's tests share one app per service (on one
# event loop), instead of each starting its own: 23 app starts become 3.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def services() -> AsyncIterator[dict[str, AppClient]]:
    async with service("docdb") as docdb, service("gen") as gen, service("mem") as mem:
        yield {"docdb": docdb, "gen": gen, "mem": mem}


# (service, method, path, body or query, the field, what the message must say)
OUT_OF_RANGE = [
    ("mem", "post", "/api/v1/mem/vg/search", {"query": "q", "user_id": "u", "limit": -5}, "limit", ">= 1"),
    (
        "mem",
        "post",
        "/api/v1/mem/vg/search",
        {"query": "q", "user_id": "u", "limit": 100000000},
        "limit",
        "<= 1000",
    ),
    (
        "mem",
        "post",
        "/api/v1/mem/vg/search",
        {"query": "q", "user_id": "u", "threshold": 7},
        "threshold",
        "<= 1",
    ),
    ("mem", "post", "/api/v1/mem/vg/search", {"query": "q" * 4097, "user_id": "u"}, "query", "4096"),
    ("mem", "post", "/api/v1/mem/vg/add", {"messages": [], "user_id": "u" * 256}, "user_id", "255"),
    ("mem", "get", "/api/v1/mem/vg/", {"user_id": "u", "limit": 0}, "limit", "1"),
    ("mem", "post", "/api/v1/mem/kb/query", {"query": "q" * 4097, "mode": "naive"}, "query", "4096"),
    ("gen", "post", "/api/v1/gen/pipeline/submit", {"question": "q", "top_k": 100000000}, "top_k", "<= 1000"),
    (
        "gen",
        "post",
        "/api/v1/gen/pipeline/submit",
        {"question": "q", "max_workers": 0},
        "max_workers",
        ">= 1",
    ),
    (
        "gen",
        "post",
        "/api/v1/gen/pipeline/submit",
        {"question": "q", "kb_name": "k" * 65},
        "kb_name",
        "64",
    ),
    (
        "gen",
        "post",
        "/api/v1/gen/tag-tree/generate",
        {"topic": "t" * 4097, "mode": "pure_llm"},
        "topic",
        "4096",
    ),
    (
        "docdb",
        "post",
        "/api/v1/docdb/retrieve",
        {"kb_id": "k", "query": "q", "top_k": 5000},
        "top_k",
        "<= 1000",
    ),
    (
        "docdb",
        "post",
        "/api/v1/docdb/retrieve",
        {"kb_id": "k", "query": "q", "max_results": 0},
        "max_results",
        ">= 1",
    ),
    ("docdb", "get", "/api/v1/docdb/files/processing/tasks", {"limit": 1001}, "limit", "1000"),
    ("docdb", "get", "/api/v1/docdb/files/knowledge-bases/k/overview", {"top_nodes": -1}, "top_nodes", "0"),
]


@pytest.mark.parametrize(("name", "method", "path", "payload", "field", "says"), OUT_OF_RANGE)
async def test_a_value_out_of_range_is_a_4xx_naming_the_field(
    services: dict[str, AppClient],
    name: str,
    method: str,
    path: str,
    payload: dict[str, Any],
    field: str,
    says: str,
) -> None:
    client = services[name]
    if method == "get":
        response = await client.get(path, params=payload)
    else:
        response = await client.post(path, json=payload)
    assert 400 <= response.status_code < 500, response.text
    assert field in response.text and says in response.text, response.text


async def test_docdb_chat_states_its_range_in_its_envelope(services: dict[str, AppClient]) -> None:
    """Chat answers 200 with the outcome in `code` (contract 4.2): the range is in the message."""
    body = {"query": "q", "kb_id": "k", "user_id": "u", "top_k": 100000000}
    answer = (await services["docdb"].post("/api/v1/docdb/chat", json=body)).json()
    assert answer["code"] == 400 and "top_k must be an integer from 1 to 1000" in answer["message"]


@pytest.mark.parametrize(
    ("name", "schema", "field", "bounds"),
    [
        ("mem", "SearchRequest", "limit", {"minimum": 1, "maximum": 1000}),
        # One query limit, the contract's 4,096 characters for chat, for every question and search.
        ("mem", "SearchRequest", "query", {"maxLength": 4096}),
        ("mem", "QueryRequest", "query", {"maxLength": 4096}),
        ("docdb", "RetrieveRequest", "query", {"maxLength": 4096}),
        ("docdb", "ChatRequestBody", "query", {"maxLength": 4096}),
        ("gen", "SubmitRequest", "top_k", {"minimum": 1, "maximum": 1000}),
        ("docdb", "RetrieveRequest", "max_results", {"minimum": 1, "maximum": 1000}),
    ],
)
async def test_the_openapi_documents_state_the_ranges(
    services: dict[str, AppClient], name: str, schema: str, field: str, bounds: dict[str, int]
) -> None:
    document = (await services[name].get("/schema/openapi.json")).json()
    schemas = document["components"]["schemas"]
    found = next(v for k, v in schemas.items() if k.endswith(schema))
    prop = found["properties"][field]
    options = [prop, *prop.get("oneOf", []), *prop.get("anyOf", [])]
    assert any(all(o.get(k) == v for k, v in bounds.items()) for o in options), prop
