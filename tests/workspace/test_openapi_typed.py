"""Every reply and every request body of the three services is described in their OpenAPI documents.

A handler that returns `dict[str, Any]` shows in OpenAPI as a free-form object, so a client (ours, the
console, MCP, a generated one) learns nothing from it; this test walks each document and names every
route whose reply or body is untyped, down to the fields of its Structs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar

from lore_common.testing.service_checks import settings_in
from lore_core.settings import Settings

WRITE_METHODS = {"post", "put", "patch"}

# Write routes that take no body at all (an action on the resource named by the path).
NO_BODY = {
    ("post", "/api/v1/docdb/config/reload"),
    ("post", "/api/v1/docdb/files/raw-files/datasets/{dataset}/upload/{upload_id}/complete"),
    ("post", "/api/v1/docdb/files/processing/tasks/{task_id}/cancel"),
    ("post", "/api/v1/docdb/files/raw-files/datasets/{dataset}/sync"),
}

# Fields that hold the user's own JSON, free-form by design: memory metadata, the filters a search
# passes through, and the properties of graph nodes and relations, which follow the user's schema.
FREE_FORM_FIELDS = {"metadata", "filters", "properties", "attributes"}


def _apps(tmp_path: Path) -> Iterator[tuple[str, Litestar]]:
    from lore_docdb.app import create_app as docdb
    from lore_gen.app import create_app as gen
    from lore_mem.app import create_app as mem

    factories: dict[str, Callable[[Settings], Litestar]] = {"docdb": docdb, "gen": gen, "mem": mem}
    for name, create_app in factories.items():
        yield name, create_app(settings_in(tmp_path / name, name))


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("openapi")
    return {name: app.openapi_schema.to_schema() for name, app in _apps(tmp)}


def _resolve(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = components[schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def untyped(schema: dict[str, Any], components: dict[str, Any], where: str, seen: set[str]) -> list[str]:
    """The places under `schema` that are objects of unknown shape (`dict[str, Any]` on the wire)."""
    ref = schema.get("$ref")
    if ref is not None:
        if ref in seen:
            return []
        seen = seen | {ref}
    schema = _resolve(schema, components)
    found: list[str] = []
    for key in ("oneOf", "anyOf", "allOf"):
        for i, alternative in enumerate(schema.get(key, [])):
            found += untyped(alternative, components, f"{where}|{i}", seen)
    if "items" in schema:
        found += untyped(schema["items"], components, f"{where}[]", seen)
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        if not properties and (extra is None or extra == {} or extra is True):
            found.append(where)
        for field, sub in properties.items():
            if field in FREE_FORM_FIELDS:
                continue
            found += untyped(sub, components, f"{where}.{field}", seen)
        if isinstance(extra, dict) and extra:
            found += untyped(extra, components, f"{where}{{}}", seen)
    return found


def _operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method in {"get", "post", "put", "patch", "delete"}:
                yield method, path, operation


@pytest.mark.parametrize("service", ["docdb", "gen", "mem"])
def test_every_reply_is_typed(documents: dict[str, dict[str, Any]], service: str) -> None:
    document = documents[service]
    components = document.get("components", {}).get("schemas", {})
    problems: list[str] = []
    for method, path, operation in _operations(document):
        for status, response in operation.get("responses", {}).items():
            if not status.startswith("2"):
                continue
            content = response.get("content")
            if content is None:
                problems.append(f"{method.upper()} {path} {status}: no reply schema")
                continue
            schema = content.get("application/json", {}).get("schema")
            if schema is not None:
                problems += [
                    f"{method.upper()} {path} {status}: {spot}"
                    for spot in untyped(schema, components, "reply", set())
                ]
    assert not problems, "untyped replies:\n" + "\n".join(problems)


@pytest.mark.parametrize("service", ["docdb", "gen", "mem"])
def test_every_request_body_is_typed(documents: dict[str, dict[str, Any]], service: str) -> None:
    document = documents[service]
    components = document.get("components", {}).get("schemas", {})
    problems: list[str] = []
    for method, path, operation in _operations(document):
        if method not in WRITE_METHODS or (method, path) in NO_BODY:
            continue
        body = operation.get("requestBody")
        if body is None:
            problems.append(f"{method.upper()} {path}: body not described")
            continue
        for media_type, content in body.get("content", {}).items():
            schema = content.get("schema", {})
            if media_type == "application/octet-stream":
                continue  # raw bytes: nothing more to describe
            problems += [
                f"{method.upper()} {path} ({media_type}): {spot}"
                for spot in untyped(schema, components, "body", set())
            ]
    assert not problems, "untyped request bodies:\n" + "\n".join(problems)


def test_the_check_sees_an_untyped_reply() -> None:
    """The walk flags `dict[str, Any]` at the top and inside a Struct, and passes a typed Struct."""
    components = {
        "Typed": {"type": "object", "properties": {"name": {"type": "string"}}},
        "Loose": {"type": "object", "properties": {"data": {"type": "object", "additionalProperties": {}}}},
    }
    assert untyped({"type": "object", "additionalProperties": {}}, components, "reply", set()) == ["reply"]
    assert untyped({"$ref": "#/components/schemas/Loose"}, components, "reply", set()) == ["reply.data"]
    assert untyped({"$ref": "#/components/schemas/Typed"}, components, "reply", set()) == []
    assert (
        untyped({"type": "array", "items": {"$ref": "#/components/schemas/Typed"}}, components, "r", set())
        == []
    )
