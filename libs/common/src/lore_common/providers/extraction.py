"""The entity/relation extraction reply every Lore graph builder decodes (docdb KBs, mem `kb`)."""

from __future__ import annotations

import msgspec


class ExtractedEntity(msgspec.Struct):
    name: str
    type: str = "客观实体"
    description: str = ""
    subtype: str | None = None


class ExtractedRelation(msgspec.Struct):
    source: str
    target: str
    description: str = ""
    weight: float = 1.0


class Extraction(msgspec.Struct):
    entities: list[ExtractedEntity] = []
    relations: list[ExtractedRelation] = []
