"""Routes of entity schemas: create, list, detail with the prompt it injects, delete."""

from __future__ import annotations

import msgspec
from litestar import Controller, delete, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody

from lore_core.clock import iso
from lore_core.web import from_state
from lore_docdb.envelope import Message
from lore_docdb.schemas.models import CreateSchema, SchemaCreated, SchemaDetail, SchemaSummary
from lore_docdb.schemas.service import SchemaService, extraction_prompt


class SchemaController(Controller):
    path = "/api/v1/docdb/schemas"
    tags = ["schemas"]
    dependencies = {"schemas": from_state("schemas")}

    @post("/", status_code=201, summary="Create an entity schema; 409 if it exists, 422 for an invalid type")
    async def create(
        self, schemas: NamedDependency[SchemaService], data: JSONBody[CreateSchema]
    ) -> SchemaCreated:
        row = await schemas.create(data)
        return SchemaCreated(
            message=f"schema {row.name!r} created",
            data=SchemaSummary(
                name=row.name, created_at=iso(row.created_at), entity_count=len(data.entities)
            ),
        )

    @get("/", summary="List entity schemas")
    async def list_schemas(self, schemas: NamedDependency[SchemaService]) -> list[SchemaSummary]:
        return [
            SchemaSummary(
                name=r.name,
                created_at=iso(r.created_at),
                entity_count=len(msgspec.json.decode(r.entities)),
            )
            for r in await schemas.list_all()
        ]

    @get("/{name:str}", summary="An entity schema with the prompt it injects")
    async def detail(self, schemas: NamedDependency[SchemaService], name: FromPath[str]) -> SchemaDetail:
        row, entities = await schemas.get(name)
        return SchemaDetail(
            name=row.name,
            created_at=iso(row.created_at),
            entity_count=len(entities),
            entities=entities,
            prompt_preview=extraction_prompt(entities),
        )

    @delete("/{name:str}", status_code=200, summary="Delete a schema; KBs parsed with it are unaffected")
    async def remove(self, schemas: NamedDependency[SchemaService], name: FromPath[str]) -> Message:
        await schemas.delete(name)
        return Message(message=f"schema {name!r} deleted")
