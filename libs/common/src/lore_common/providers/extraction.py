"""The entity/relation extraction reply every Lore graph builder decodes (docdb KBs, mem `kb`)."""

from __future__ import annotations

import msgspec

# Part of the extraction cache's key (see providers.cache): raise it when the reading of a reply changes
# in a way the prompt's text does not show (the prompt's text and the schema are in the key already).
EXTRACTION_PROMPT_VERSION = "1"


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
