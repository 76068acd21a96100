"""The client's models say what the services' OpenAPI documents say.

Each model of `lore_client.models` mirrors one place in one route's reply. A field the client reads must
be one the server sends, with a compatible type; a field the server sends must be in the client's model
or named below as deliberately left out. So renaming or retyping a reply field on a service, or adding
one, fails here until the client follows."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import msgspec.inspect as mi
import pytest

from lore_client import models as m

D = "/api/v1/docdb"
DS = f"{D}/files/raw-files/datasets"
KBS = f"{D}/files/knowledge-bases"
TASKS = f"{D}/files/processing/tasks"

# (model, service, method, path, where in the reply: dotted fields, `[]` for an array's items)
MIRRORS: list[tuple[type[m.Model], str, str, str, str]] = [
    (m.FileInfo, "docdb", "get", f"{DS}/{{dataset}}/files", "files[]"),
    (m.PutFileResult, "docdb", "put", f"{DS}/{{dataset}}/files", "data"),
    (m.SourceInfo, "docdb", "put", f"{DS}/{{dataset}}/source", ""),
    (m.SourceInfo, "docdb", "get", f"{DS}/{{dataset}}/source", ""),
    (m.SourceInfo, "docdb", "get", f"{D}/files/raw-files/sources", "data[]"),
    (m.SyncTask, "docdb", "post", f"{DS}/{{dataset}}/sync", "data"),
    (m.SyncTask, "docdb", "get", f"{DS}/{{dataset}}/syncs/{{task_id}}", "data"),
    (m.SyncTask, "docdb", "get", f"{DS}/{{dataset}}/syncs", "data[]"),
    (m.UploadedFile, "docdb", "post", f"{DS}/{{dataset}}/files", "files[]"),
    (m.UploadedFile, "docdb", "post", f"{DS}/{{dataset}}/upload/{{upload_id}}/complete", "data"),
    (m.UploadSession, "docdb", "post", f"{DS}/{{dataset}}/upload/init", "data"),
    (m.UploadProgress, "docdb", "get", f"{DS}/{{dataset}}/upload/{{upload_id}}", "data"),
    (m.KnowledgeBaseSummary, "docdb", "get", KBS, "data[]"),
    (m.KnowledgeBaseSummary, "docdb", "post", KBS, "data"),
    (m.KnowledgeBase, "docdb", "get", f"{KBS}/{{kb_name}}", ""),
    (m.Overview, "docdb", "get", f"{KBS}/{{kb_name}}/overview", "overview"),
    (m.GraphPage, "docdb", "get", f"{KBS}/{{kb_name}}/graph", ""),
    (m.ParseResult, "docdb", "post", f"{KBS}/{{kb_name}}/parse", "data"),
    (m.Task, "docdb", "get", f"{TASKS}/{{task_id}}", ""),
    (m.Task, "docdb", "get", TASKS, "[]"),
    (m.CancelResult, "docdb", "post", f"{TASKS}/{{task_id}}/cancel", "data"),
    (m.SchemaSummary, "docdb", "get", f"{D}/schemas", "[]"),
    (m.SchemaSummary, "docdb", "post", f"{D}/schemas", "data"),
    (m.Schema, "docdb", "get", f"{D}/schemas/{{name}}", ""),
    (m.ChatResult, "docdb", "post", f"{D}/chat", ""),
    (m.RetrieveResult, "docdb", "post", f"{D}/retrieve", ""),
    (m.TableTask, "gen", "get", "/api/v1/gen/pipeline/status/{task_id}", ""),
    (m.TreeTask, "gen", "get", "/api/v1/gen/tag-tree/status/{task_id}", ""),
    (m.TreeTask, "gen", "post", "/api/v1/gen/tag-tree/submit", ""),
    (m.Memory, "mem", "get", "/api/v1/mem/vg/{memory_id}", ""),
    (m.Memory, "mem", "get", "/api/v1/mem/vg", "results[]"),
    (m.AddResult, "mem", "post", "/api/v1/mem/vg/add", ""),
    (m.SearchResult, "mem", "post", "/api/v1/mem/vg/search", ""),
    (m.UpdateResult, "mem", "put", "/api/v1/mem/vg/{memory_id}", ""),
    (m.HistoryRecord, "mem", "get", "/api/v1/mem/vg/{memory_id}/history", "[]"),
    (m.InsertJob, "mem", "get", "/api/v1/mem/kb/insert/{job_id}", ""),
    (m.KbAnswer, "mem", "post", "/api/v1/mem/kb/query", ""),
    (m.KeySelf, "gateway", "get", "/api/v1/keys/self", ""),
]

# Fields a model shares between routes that one of those routes does not send: (model, path) -> fields.
NOT_SENT_BY: dict[tuple[str, str], set[str]] = {
    ("KnowledgeBaseSummary", KBS): {"embedding_model"},  # listings leave each KB's embedder out
    ("TreeTask", "/api/v1/gen/tag-tree/status/{task_id}"): {"node_count"},  # counted in `result`
    # A spreadsheet's tree is built during the request: the reply is `{task_id, status, node_count}`.
    ("TreeTask", "/api/v1/gen/tag-tree/submit"): {
        "result",
        "error",
        "step",
        "step_name",
        "progress",
        "created_at",
        "updated_at",
    },
}

# Reply fields the client leaves out on purpose, by model (the envelope's `success` everywhere).
LEFT_OUT: dict[str, set[str]] = {
    "*": {"success"},
}


def _documents() -> Iterator[tuple[str, dict[str, Any]]]:
    from litestar import Litestar

    from lore_common.testing.service_checks import settings_in
    from lore_core.settings import Settings
    from lore_docdb.app import create_app as docdb
    from lore_gen.app import create_app as gen
    from lore_mem.app import create_app as mem

    factories: dict[str, Callable[[Settings], Litestar]] = {"docdb": docdb, "gen": gen, "mem": mem}
    with tempfile.TemporaryDirectory() as tmp:
        for name, create_app in factories.items():
            app = create_app(settings_in(Path(tmp) / name, name))
            yield name, app.openapi_schema.to_schema()
    # The gateway's own routes, as the merged document lists them.
    from lore_gateway.app import gateway_openapi

    paths, schemas = gateway_openapi()
    yield "gateway", {"paths": paths, "components": {"schemas": schemas}}


@pytest.fixture(scope="module")
def documents() -> dict[str, dict[str, Any]]:
    return dict(_documents())


class Schemas:
    """A service's OpenAPI schemas, with `$ref`s and nullable unions looked through."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.components: dict[str, Any] = document.get("components", {}).get("schemas", {})

    def resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            schema = self.components[schema["$ref"].rsplit("/", 1)[-1]]
        return schema

    def alternatives(self, schema: dict[str, Any]) -> list[dict[str, Any]]:
        """The non-null shapes a value may take."""
        schema = self.resolve(schema)
        options = schema.get("oneOf") or schema.get("anyOf")
        if options:
            return [a for option in options for a in self.alternatives(option)]
        if schema.get("type") == "null":
            return []
        return [schema]

    def reply(self, method: str, path: str) -> dict[str, Any]:
        operation = self.document["paths"][path][method]
        for status, response in operation["responses"].items():
            if status.startswith("2"):
                schema: dict[str, Any] = response["content"]["application/json"]["schema"]
                return schema
        raise AssertionError(f"{method.upper()} {path} has no 2xx reply")

    def at(self, schema: dict[str, Any], where: str) -> dict[str, Any]:
        """The schema at `where` (`data.tasks[]`, `[]`, `` for the reply itself)."""
        for step in [s for s in where.replace("[]", ".[]").split(".") if s]:
            (shape,) = self.alternatives(schema)
            schema = shape["items"] if step == "[]" else shape["properties"][step]
        return schema


JSON_TYPES: dict[type[Any], set[str]] = {
    mi.StrType: {"string"},
    mi.IntType: {"integer"},
    mi.FloatType: {"number", "integer"},
    mi.BoolType: {"boolean"},
    mi.LiteralType: {"string", "integer"},
}


def mismatches(
    client: mi.Type,
    schema: dict[str, Any],
    schemas: Schemas,
    where: str,
    not_sent: frozenset[str] = frozenset(),
) -> list[str]:
    """What the client expects at `where` that the server's schema does not give."""
    if isinstance(client, mi.AnyType | mi.DictType):
        return []
    if isinstance(client, mi.UnionType):
        kinds = [t for t in client.types if not isinstance(t, mi.NoneType)]
        if len(kinds) == 1:
            return mismatches(kinds[0], schema, schemas, where)
        return []
    shapes = schemas.alternatives(schema)
    if not shapes or any(not shape.get("type") and "properties" not in shape for shape in shapes):
        return []  # free-form on the server: anything the client reads is allowed
    if isinstance(client, mi.ListType):
        arrays = [s for s in shapes if s.get("type") == "array"]
        if not arrays:
            return [f"{where}: the client reads a list, the server sends {[s.get('type') for s in shapes]}"]
        return mismatches(client.item_type, arrays[0].get("items", {}), schemas, f"{where}[]")
    if isinstance(client, mi.StructType):
        objects = [s for s in shapes if s.get("type") == "object" or "properties" in s]
        if not objects:
            return [
                f"{where}: the client reads an object, the server sends {[s.get('type') for s in shapes]}"
            ]
        return struct_mismatches(client, objects[0], schemas, where, not_sent)
    expected = next((kinds for kind, kinds in JSON_TYPES.items() if isinstance(client, kind)), None)
    if expected is None:
        return []
    sent = {s.get("type") for s in shapes}
    if not sent & expected:
        return [f"{where}: the client reads {sorted(expected)}, the server sends {sorted(map(str, sent))}"]
    return []


def struct_mismatches(
    client: mi.StructType, schema: dict[str, Any], schemas: Schemas, where: str, not_sent: frozenset[str]
) -> list[str]:
    properties: dict[str, Any] = schema.get("properties", {})
    problems: list[str] = []
    read = {field.encode_name for field in client.fields}
    for field in client.fields:
        if field.encode_name in not_sent and field.encode_name not in properties:
            continue
        if field.encode_name not in properties:
            problems.append(f"{where}.{field.encode_name}: the client reads it, the server never sends it")
            continue
        problems += mismatches(
            field.type, properties[field.encode_name], schemas, f"{where}.{field.encode_name}"
        )
    left_out = LEFT_OUT["*"] | LEFT_OUT.get(client.cls.__name__, set())
    for name in sorted(set(properties) - read - left_out):
        problems.append(f"{where}.{name}: the server sends it, {client.cls.__name__} has no field for it")
    return problems


@pytest.mark.parametrize(
    ("model", "service", "method", "path", "where"),
    MIRRORS,
    ids=[f"{model.__name__}:{method}:{path}:{where}" for model, _, method, path, where in MIRRORS],
)
def test_the_client_model_matches_the_reply(
    documents: dict[str, dict[str, Any]],
    model: type[m.Model],
    service: str,
    method: str,
    path: str,
    where: str,
) -> None:
    schemas = Schemas(documents[service])
    schema = schemas.at(schemas.reply(method, path), where)
    info = mi.type_info(model)
    assert isinstance(info, mi.StructType)
    not_sent = frozenset(NOT_SENT_BY.get((model.__name__, path), set()))
    problems = mismatches(info, schema, schemas, model.__name__, not_sent)
    assert not problems, "\n".join(problems)


def test_a_drifted_model_is_caught() -> None:
    """A client field the server does not send, a retyped one and a new server field are all named."""

    class Reply(msgspec.Struct):
        name: str
        count: int

    class Drifted(m.Model):
        name: int
        colour: str = ""

    (reply,), components = msgspec.json.schema_components([Reply], ref_template="#/components/schemas/{name}")
    schemas = Schemas({"components": {"schemas": components}, "paths": {}})
    info = mi.type_info(Drifted)
    assert isinstance(info, mi.StructType)
    problems = mismatches(info, reply, schemas, "Drifted")
    assert problems == [
        "Drifted.name: the client reads ['integer'], the server sends ['string']",
        "Drifted.colour: the client reads it, the server never sends it",
        "Drifted.count: the server sends it, Drifted has no field for it",
    ]
