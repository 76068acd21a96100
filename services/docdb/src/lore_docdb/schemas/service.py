"""Entity schemas steer extraction: which types and subtypes to find, which attributes to fill."""

from __future__ import annotations

import msgspec

from lore_core.errors import Conflict, NotFound, Unprocessable
from lore_docdb.schemas.models import ENTITY_TYPES, CreateSchema, EntityDefinition, SchemaRow
from lore_docdb.schemas.store import SchemaStore

EXTRACTION_PROMPT = """You extract entities and relations from a text for a knowledge graph.
Entity types: {types}.
{schema_block}Return one JSON object: {{"entities": [{{"name": str, "type": one of the entity types, \
"subtype": str, "description": str, "attributes": {{name: value}}}}], "relations": [{{"source": entity name, \
"target": entity name, "description": str, "weight": number 1-10}}]}}.
Use the names exactly as written in the text. Do not invent entities that the text does not mention."""


class SchemaNotFound(NotFound):
    def __init__(self, name: str) -> None:
        super().__init__(f"entity schema {name!r} does not exist")


def schema_block(entities: list[EntityDefinition]) -> str:
    lines = ["Extract only these kinds of entities (type / subtype: attributes to fill):"]
    for item in entities:
        attributes = ", ".join(item.attributes) if item.attributes else "none"
        lines.append(f"- {item.type} / {item.subtype}: {attributes}")
    return "\n".join(lines) + "\n"


def extraction_prompt(entities: list[EntityDefinition] | None) -> str:
    """The system prompt of entity extraction, with the schema injected when there is one."""
    types = sorted({e.type for e in entities}) if entities else list(ENTITY_TYPES)
    return EXTRACTION_PROMPT.format(
        types=", ".join(types), schema_block=schema_block(entities) if entities else ""
    )


class SchemaService:
    def __init__(self, store: SchemaStore) -> None:
        self.store = store

    async def create(self, request: CreateSchema) -> SchemaRow:
        invalid = [e.type for e in request.entities if e.type not in ENTITY_TYPES]
        if invalid:
            raise Unprocessable(
                f"invalid entity type(s) {', '.join(map(repr, invalid))}: "
                f"use one of {', '.join(ENTITY_TYPES)}",
                detail={"allowed_types": list(ENTITY_TYPES)},
            )
        row = SchemaRow(name=request.name, entities=msgspec.json.encode(request.entities).decode())
        if not await self.store.add(row):
            raise Conflict(f"entity schema {request.name!r} already exists")
        return row

    async def list_all(self) -> list[SchemaRow]:
        return await self.store.list_all()

    async def get(self, name: str) -> tuple[SchemaRow, list[EntityDefinition]]:
        row = await self.store.get(name)
        if row is None:
            raise SchemaNotFound(name)
        return row, msgspec.json.decode(row.entities, type=list[EntityDefinition])

    async def delete(self, name: str) -> None:
        if not await self.store.delete(name):
            raise SchemaNotFound(name)
