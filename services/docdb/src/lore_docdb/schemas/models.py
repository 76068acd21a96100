"""Entity schemas: wire shapes and the stored row (see docs/docdb.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec
from sqlmodel import Field, SQLModel

from lore_core.clock import utcnow
from lore_core.naming import NAME_PATTERN
from lore_docdb.envelope import Success

EntityType = Literal["客观实体", "抽象实体", "事件实体", "文献实体"]
ENTITY_TYPES: tuple[str, ...] = ("客观实体", "抽象实体", "事件实体", "文献实体")


class EntityDefinition(msgspec.Struct, forbid_unknown_fields=True):
    type: str
    subtype: Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
    attributes: list[Annotated[str, msgspec.Meta(min_length=1, max_length=128)]] = []


class CreateSchema(msgspec.Struct, forbid_unknown_fields=True):
    name: Annotated[str, msgspec.Meta(pattern=NAME_PATTERN, min_length=1, max_length=255)]
    entities: Annotated[list[EntityDefinition], msgspec.Meta(min_length=1)]


class SchemaSummary(msgspec.Struct, kw_only=True):
    """A schema in the list, and in the reply that created it."""

    name: str
    created_at: str
    entity_count: int


class SchemaCreated(Success, kw_only=True):
    message: str
    data: SchemaSummary


class SchemaDetail(Success, kw_only=True):
    name: str
    created_at: str
    entity_count: int
    entities: list[EntityDefinition]
    prompt_preview: str  # the extraction prompt with this schema injected


class SchemaRow(SQLModel, table=True):
    __tablename__ = "entity_schemas"

    name: str = Field(primary_key=True, max_length=255)
    entities: str  # JSON array of EntityDefinition
    created_at: datetime = Field(default_factory=utcnow)
