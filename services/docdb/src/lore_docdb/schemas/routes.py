"""Routes of contract 4.7."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Controller, delete, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody

from lore_core.web import from_state
from lore_docdb.envelope import ok
from lore_docdb.schemas.models import CreateSchema
from lore_docdb.schemas.service import SchemaService, extraction_prompt


class SchemaController(Controller):
    path = "/api/v1/docdb/schemas"
    tags = ["schemas"]
    dependencies = {"schemas": from_state("schemas")}

    @post("/", status_code=201, summary="Create an entity schema; 409 if it exists, 422 for an invalid type")
    async def create(
        self, schemas: NamedDependency[SchemaService], data: JSONBody[CreateSchema]
    ) -> dict[str, Any]:
        row = await schemas.create(data)
        return ok(
            message=f"schema {row.name!r} created",
            data={
                "name": row.name,
                "created_at": row.created_at.isoformat(),
                "entity_count": len(data.entities),
            },
        )

    @get("/", summary="List entity schemas")
    async def list_schemas(self, schemas: NamedDependency[SchemaService]) -> list[dict[str, Any]]:
        rows = await schemas.list_all()
        return [
            {
                "name": r.name,
                "created_at": r.created_at.isoformat(),
                "entity_count": len(msgspec.json.decode(r.entities)),
            }
            for r in rows
        ]

    @get("/{name:str}", summary="An entity schema with the prompt it injects")
    async def detail(self, schemas: NamedDependency[SchemaService], name: FromPath[str]) -> dict[str, Any]:
        row, entities = await schemas.get(name)
        return ok(
            name=row.name,
            created_at=row.created_at.isoformat(),
            entity_count=len(entities),
            entities=msgspec.to_builtins(entities),
            prompt_preview=extraction_prompt(entities),
        )

    @delete("/{name:str}", status_code=200, summary="Delete a schema; KBs parsed with it are unaffected")
    async def remove(self, schemas: NamedDependency[SchemaService], name: FromPath[str]) -> dict[str, Any]:
        await schemas.delete(name)
        return ok(message=f"schema {name!r} deleted")
