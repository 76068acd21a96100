"""`vg` fact memory (see docs/mem.md): wire shapes and the history table. Bodies follow mem0's, which
users of this kind of API know."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType
from sqlmodel import Field, SQLModel

from lore_core.bounds import MESSAGES, Limit, LongText, QueryText, ScopeId, Score
from lore_core.clock import utcnow


class Message(msgspec.Struct):
    role: Literal["user", "assistant", "system"]
    content: LongText


class Scope(msgspec.Struct, kw_only=True):
    user_id: ScopeId | None = None
    agent_id: ScopeId | None = None
    run_id: ScopeId | None = None

    def filters(self) -> dict[str, str]:
        return {
            k: v
            for k, v in (("user_id", self.user_id), ("agent_id", self.agent_id), ("run_id", self.run_id))
            if v
        }


class AddRequest(Scope, kw_only=True):
    messages: Annotated[list[Message], msgspec.Meta(max_length=MESSAGES)]
    metadata: dict[str, Any] | None = None
    infer: bool = True
    # When the conversation took place (Unix seconds or ISO 8601), as in mem0's hosted API: its
    # memories take it as `created_at`, and searches that name a time find them by it.
    timestamp: float | str | None = None


class SearchRequest(Scope, kw_only=True):
    query: QueryText
    limit: Limit = 10
    threshold: Score | None = None


class UpdateRequest(msgspec.Struct):
    data: LongText


# ---------------------------------------------------------------- replies

MemoryEvent = Literal["ADD", "UPDATE", "DELETE"]


class MemoryItem(msgspec.Struct, omit_defaults=True):
    """One memory as every read answers it; `score` (its cosine to the query) only in a search."""

    id: str
    memory: str
    hash: str | None
    created_at: str | None
    updated_at: str | None
    user_id: str | None
    agent_id: str | None
    run_id: str | None
    metadata: dict[str, Any]
    score: float | UnsetType = UNSET


class MemoryChange(msgspec.Struct, omit_defaults=True):
    """What an add (or an update) did to one memory; `previous_memory` only for an UPDATE."""

    id: str
    memory: str
    event: MemoryEvent
    previous_memory: str | UnsetType = UNSET


class GraphRelation(msgspec.Struct):
    """A relation of the scope's graph (graph store on): `source` -- `relationship` -> `destination`."""

    source: str
    relationship: str
    destination: str


class RelationChanges(msgspec.Struct):
    """The relations an add merged into the graph, and those it removed with replaced text."""

    added_entities: list[GraphRelation]
    deleted_entities: list[GraphRelation]


class Added(msgspec.Struct):
    results: list[MemoryChange]
    relations: RelationChanges


class Found(msgspec.Struct):
    """A search: the memories best first, and the graph's relations touching the query's words."""

    results: list[MemoryItem]
    relations: list[GraphRelation]


class Listed(msgspec.Struct):
    results: list[MemoryItem]


class Updated(msgspec.Struct):
    message: str
    id: str
    memory: str
    event: MemoryEvent
    previous_memory: str


class Deleted(msgspec.Struct):
    message: str
    id: str


class ScopeDeleted(msgspec.Struct):
    message: str
    deleted: int


class HistoryEntry(msgspec.Struct):
    id: str
    memory_id: str
    event: str
    old_memory: str | None
    new_memory: str | None
    created_at: str
    is_deleted: bool


# ---------------------------------------------------------------- tables


class HistoryRow(SQLModel, table=True):
    __tablename__ = "memory_history"

    id: str = Field(primary_key=True, max_length=36)
    memory_id: str = Field(index=True, max_length=36)
    event: str = Field(max_length=8)
    old_memory: str | None = None
    new_memory: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    is_deleted: bool = False


class CollectionRow(SQLModel, table=True):
    """The embedder a vg collection's vectors come from, recorded when the collection is first used:
    mem keeps embedding into it with that model whatever `mem.embedding_api` says later."""

    __tablename__ = "vg_collections"

    name: str = Field(primary_key=True, max_length=255)
    embedding_model: str = Field(max_length=160)
    created_at: datetime = Field(default_factory=utcnow)


# The relations the model finds in a memory's text (graph store on).
class Entity(msgspec.Struct):
    name: str


class Relation(msgspec.Struct):
    source: str
    target: str
    description: str = "related to"


class Extraction(msgspec.Struct):
    entities: list[Entity] = []
    relations: list[Relation] = []
