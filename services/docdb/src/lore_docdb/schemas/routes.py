"""Routes of contract 4.7."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Controller, Request, delete, get, post
from litestar.params import FromPath, JSONBody

from lore_docdb.schemas.models import CreateSchema
from lore_docdb.schemas.service import SchemaService, extraction_prompt


def schemas_of(request: Request[Any, Any, Any]) -> SchemaService:
    service: SchemaService = request.app.state.schemas
    return service


class SchemaController(Controller):
    path = "/api/v1/docdb/schemas"
    tags = ["schemas"]

    @post("/", status_code=201, summary="Create an entity schema; 409 if it exists, 422 for an invalid type")
    async def create(self, request: Request[Any, Any, Any], data: JSONBody[CreateSchema]) -> dict[str, Any]:
        row = await schemas_of(request).create(data)
        return {
            "success": True,
            "message": f"schema {row.name!r} created",
            "data": {
                "name": row.name,
                "created_at": row.created_at.isoformat(),
                "entity_count": len(data.entities),
            },
        }

    @get("/", summary="List entity schemas")
    async def list_schemas(self, request: Request[Any, Any, Any]) -> list[dict[str, Any]]:
        rows = await schemas_of(request).list_all()
        return [
            {
                "name": r.name,
                "created_at": r.created_at.isoformat(),
                "entity_count": len(msgspec.json.decode(r.entities)),
            }
            for r in rows
        ]

    @get("/{name:str}", summary="An entity schema with the prompt it injects")
    async def detail(self, request: Request[Any, Any, Any], name: FromPath[str]) -> dict[str, Any]:
        row, entities = await schemas_of(request).get(name)
        return {
            "success": True,
            "name": row.name,
            "created_at": row.created_at.isoformat(),
            "entity_count": len(entities),
            "entities": msgspec.to_builtins(entities),
            "prompt_preview": extraction_prompt(entities),
        }

    @delete("/{name:str}", status_code=200, summary="Delete a schema; KBs parsed with it are unaffected")
    async def remove(self, request: Request[Any, Any, Any], name: FromPath[str]) -> dict[str, Any]:
        await schemas_of(request).delete(name)
        return {"success": True, "message": f"schema {name!r} deleted"}
