"""Writes the API reference page (`api.md`) at build time from the services' own OpenAPI documents,
merged as the gateway merges them, so the page cannot drift from the code (mkdocs-gen-files)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import mkdocs_gen_files

from lore_core.settings import load_settings

METHODS = ("get", "post", "put", "patch", "delete")


def documents() -> dict[str, dict[str, Any]]:
    from lore_docdb.app import create_app as docdb
    from lore_gen.app import create_app as gen
    from lore_mem.app import create_app as mem

    with tempfile.TemporaryDirectory() as empty:
        settings = load_settings(Path(empty), environ={})
        return {
            name: make(settings).openapi_schema.to_schema()
            for name, make in (("docdb", docdb), ("gen", gen), ("mem", mem))
        }


def resolve(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = components.get(schema["$ref"].rsplit("/", 1)[1], {})
    return schema


def describe(schema: dict[str, Any], components: dict[str, Any]) -> str:
    schema = resolve(schema, components)
    if "oneOf" in schema or "anyOf" in schema:
        parts = [describe(s, components) for s in schema.get("oneOf", schema.get("anyOf", []))]
        return " or ".join(dict.fromkeys(parts))
    kind = schema.get("type", "object")
    if kind == "array":
        kind = f"array of {describe(schema.get('items', {}), components)}"
    if "enum" in schema:
        kind = " \\| ".join(f"`{v}`" for v in schema["enum"])
    bounds = [
        f"{label} {schema[key]}"
        for key, label in (
            ("minimum", "≥"),
            ("maximum", "≤"),
            ("exclusiveMinimum", ">"),
            ("minLength", "length ≥"),
            ("maxLength", "length ≤"),
            ("minItems", "items ≥"),
            ("maxItems", "items ≤"),
        )
        if key in schema
    ]
    if "pattern" in schema:
        bounds.append(f"pattern `{schema['pattern']}`")
    return kind + (f" ({', '.join(bounds)})" if bounds else "")


def fields(schema: dict[str, Any], components: dict[str, Any]) -> list[str]:
    schema = resolve(schema, components)
    required = set(schema.get("required", []))
    rows = []
    for name, spec in schema.get("properties", {}).items():
        rows.append(f"| `{name}` | {describe(spec, components)} | {'yes' if name in required else ''} |")
    return rows


def page() -> str:
    out = [
        "# API reference",
        "",
        "Every route the gateway serves under `/api/v1`, generated from the services' OpenAPI documents "
        "when this site is built. The gateway serves the same document, merged, at "
        "`/schema/openapi.json`; each service serves its own at `/schema`.",
    ]
    for service, document in documents().items():
        components = document.get("components", {}).get("schemas", {})
        out += ["", f"## {service}"]
        for path, item in sorted(document.get("paths", {}).items()):
            if not path.startswith("/api/"):
                continue
            for method in METHODS:
                operation = item.get(method)
                if operation is None:
                    continue
                out += ["", f"### `{method.upper()} {path}`", ""]
                if operation.get("summary"):
                    out.append(operation["summary"].rstrip(".") + ".")
                parameters = [p for p in operation.get("parameters", []) if p.get("in") in ("query", "path")]
                if parameters:
                    out += ["", "| parameter | in | type | required |", "|---|---|---|---|"]
                    for p in parameters:
                        kind = describe(p.get("schema", {}), components)
                        required = "yes" if p.get("required") else ""
                        out.append(f"| `{p['name']}` | {p['in']} | {kind} | {required} |")
                body = operation.get("requestBody", {}).get("content", {})
                json_body = body.get("application/json", {}).get("schema")
                if json_body is not None:
                    rows = fields(json_body, components)
                    if rows:
                        out += ["", "| body field | type | required |", "|---|---|---|", *rows]
                elif body:
                    out += ["", f"Body: {', '.join(f'`{kind}`' for kind in body)}."]
                codes = ", ".join(f"`{code}`" for code in operation.get("responses", {}))
                if codes:
                    out += ["", f"Responses: {codes}."]
    return "\n".join(out) + "\n"


with mkdocs_gen_files.open("api.md", "w") as target:
    target.write(page())
