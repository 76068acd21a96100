"""Wire structures of the memory graph (mem kb), the records an insert adds, and the tables they are
stored in."""

from __future__ import annotations

from typing import Literal

import msgspec
from sqlalchemy import JSON, Column, Float, Text
from sqlmodel import Field, SQLModel

from lore_common.providers.usage import UsageReport
from lore_core.bounds import QueryText
from lore_core.clock import utc_iso

JobStatus = Literal["accepted", "processing", "done", "failed"]
INTERRUPTED = "interrupted: the mem service stopped before this insert was stored; insert it again"
STALE = "interrupted: the mem replica running this insert stopped answering; insert it again"
# An insert whose replica died too often while running it (it may be what stops the process).
INTERRUPTED_AGAIN = (
    "interrupted {times} times: the mem service stopped each time while running this insert (the insert "
    "may be what stops it); insert it again"
)
QueryMode = Literal["hybrid", "local", "global", "naive"]
# The memory graph is partitioned by workspace: an insert, a query, an insert's status see their own
# workspace only. Without one, a call uses the default workspace (the whole graph of earlier releases).
DEFAULT_WORKSPACE = "default"
WORKSPACE_CHARS = 200


def now() -> str:
    """A job's timestamp: UTC to the millisecond, so a poll sees each step move."""
    return utc_iso("milliseconds")


class InsertJob(msgspec.Struct, kw_only=True):
    id: str
    query: str
    status: JobStatus = "accepted"
    workspace: str = DEFAULT_WORKSPACE
    videocaption: str | None = None
    audiocaption: str | None = None
    imagecaption: str | None = None
    # Why a medium got no caption (no provider, unreadable file…), by medium.
    notes: dict[str, str] = msgspec.field(default_factory=dict)
    media: dict[str, str] = msgspec.field(default_factory=dict)
    error: str | None = None
    # While `processing` waits for a store that cannot be reached: why (it then runs again).
    waiting_for: str | None = None
    chunks: int = 0
    entities: int = 0
    relations: int = 0
    # Model calls, tokens, cost, cache hits and chunks whose extraction failed (count and examples).
    usage: UsageReport | None = None
    # How many times the insert was run again after its replica died (not shown: the record only).
    resumed: int = 0
    created_at: str = msgspec.field(default_factory=now)
    updated_at: str = msgspec.field(default_factory=now)

    def accepted(self) -> InsertAccepted:
        """The insert job as the 202 answers it (see docs/mem.md)."""
        return InsertAccepted(
            id=self.id,
            query=self.query,
            status="accepted",
            videocaption=self.videocaption,
            audiocaption=self.audiocaption,
            imagecaption=self.imagecaption,
        )

    def summary(self) -> InsertSummary:
        return InsertSummary(
            id=self.id,
            status=self.status,
            created_at=self.created_at,
            preview=" ".join(self.query.split())[:PREVIEW_CHARS],
            chars=len(self.query),
            chunks=self.chunks,
            entities=self.entities,
            relations=self.relations,
            error=self.error,
        )

    def public(self) -> InsertStatus:
        """The job as its status route answers it: everything but where its media wait."""
        return InsertStatus(
            id=self.id,
            query=self.query,
            status=self.status,
            workspace=self.workspace,
            videocaption=self.videocaption,
            audiocaption=self.audiocaption,
            imagecaption=self.imagecaption,
            notes=self.notes,
            error=self.error,
            waiting_for=self.waiting_for,
            chunks=self.chunks,
            entities=self.entities,
            relations=self.relations,
            usage=self.usage,
            created_at=self.created_at,
            updated_at=self.updated_at,
        )


class InsertAccepted(msgspec.Struct, kw_only=True):
    id: str
    query: str
    status: JobStatus
    videocaption: str | None
    audiocaption: str | None
    imagecaption: str | None


class InsertStatus(msgspec.Struct, kw_only=True):
    id: str
    query: str
    status: JobStatus
    workspace: str
    videocaption: str | None
    audiocaption: str | None
    imagecaption: str | None
    # Why a medium got no caption (no provider, unreadable file…), by medium.
    notes: dict[str, str]
    error: str | None
    # While `processing` waits for a store that cannot be reached: why (it then runs again).
    waiting_for: str | None
    chunks: int
    entities: int
    relations: int
    # Once done: model calls, tokens, cost, cache hits, and chunks whose extraction failed (with why).
    usage: UsageReport | None = None
    created_at: str
    updated_at: str


PREVIEW_CHARS = 120


class InsertSummary(msgspec.Struct, kw_only=True):
    """One insert as `GET /mem/kb/inserts` lists it: its text's opening, not the whole text."""

    id: str
    status: JobStatus
    created_at: str
    preview: str  # the text's first PREVIEW_CHARS characters, whitespace runs made one space
    chars: int  # the whole text's length
    chunks: int
    entities: int
    relations: int
    error: str | None


class InsertPage(msgspec.Struct, kw_only=True):
    inserts: list[InsertSummary]
    total: int  # inserts of the workspace in all
    offset: int
    limit: int


class InsertDeleted(msgspec.Struct, kw_only=True):
    """What `DELETE /mem/kb/insert/{id}` removed."""

    id: str
    deleted: bool
    chunks: int
    entities: int  # entities no other insert mentions, removed with it
    communities: int  # communities holding an entity it touched, recomputed by the next community run


class QueryRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    query: QueryText
    mode: QueryMode = "hybrid"
    use_pm: bool = False
    # true: answer as server-sent events (see the route's description).
    stream: bool = False


class KbAnswer(msgspec.Struct, kw_only=True):
    """An answer of the memory graph: `pm_*` say whether the parametric-memory model answered first,
    `rag_memory` is the retrieved context by section, `final_answer` cites its passages as [n]."""

    query: str
    mode: QueryMode
    pm_used: bool = False
    pm_memory: str | None = None
    pm_relevant: bool = False
    rag_memory: str = ""
    final_answer: str = ""


class KbPassages(msgspec.Struct):
    """The `passages` event of a streamed query: the context by section, and the passages numbered."""

    rag_memory: str
    passages: list[str]


class KbCitation(msgspec.Struct):
    index: int
    passage: str


class QueryFailed(msgspec.Struct, kw_only=True):
    """The body of `done` after an `error` event: the error body the non-streaming call answers."""

    success: bool = False
    code: int
    message: str
    detail: str  # the message again, as every error body has it (lore_core.errors.error_body)


class ChunkRecord(msgspec.Struct, array_like=True):
    id: str
    job_id: str
    text: str


class EntityRecord(msgspec.Struct, kw_only=True):
    key: str
    name: str
    type: str
    descriptions: list[str] = []
    chunk_ids: list[str] = []


class RelationRecord(msgspec.Struct, kw_only=True):
    source: str  # entity keys
    target: str
    descriptions: list[str] = []
    weight: float = 1.0
    chunk_ids: list[str] = []


class Segment(msgspec.Struct, kw_only=True):
    """What one insert adds, committed in one transaction: stored whole or not at all."""

    seq: int
    job_id: str
    chunks: list[ChunkRecord]
    chunk_vectors: bytes  # float32, len(chunks) × dim
    entities: list[EntityRecord]
    # Vectors of the entities that were new when the insert was extracted (known ones keep theirs).
    vector_keys: list[str]
    entity_vectors: bytes  # float32, len(vector_keys) × dim
    relations: list[RelationRecord]


class Community(msgspec.Struct, kw_only=True):
    id: str
    members: list[str]  # entity keys
    title: str
    summary: str


# ---------------------------------------------------------------- tables

# Entity keys are lower-cased names; longer ones are not kept as entities.
MAX_KEY = 200


class ChunkRow(SQLModel, table=True):
    __tablename__ = "lore_kb_chunks"

    id: str = Field(primary_key=True, max_length=100)  # <job id>:<n>
    job_id: str = Field(max_length=64, index=True)
    workspace: str = Field(default=DEFAULT_WORKSPACE, max_length=WORKSPACE_CHARS)
    text: str = Field(sa_column=Column(Text, nullable=False))


class EntityRow(SQLModel, table=True):
    __tablename__ = "lore_kb_entities"

    workspace: str = Field(default=DEFAULT_WORKSPACE, max_length=WORKSPACE_CHARS, primary_key=True)
    key: str = Field(primary_key=True, max_length=MAX_KEY)
    name: str = Field(max_length=MAX_KEY)
    type: str = Field(max_length=100)
    # The form names are matched in (store.name_form); the first entity of a form answers for it.
    name_form: str = Field(max_length=MAX_KEY, index=True)
    descriptions: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    # The insert that brought it (its vector was embedded then).
    job_id: str = Field(max_length=64)


class MentionRow(SQLModel, table=True):
    """Which chunks mention which entity."""

    __tablename__ = "lore_kb_mentions"

    workspace: str = Field(default=DEFAULT_WORKSPACE, max_length=WORKSPACE_CHARS, primary_key=True)
    entity_key: str = Field(primary_key=True, max_length=MAX_KEY)
    chunk_id: str = Field(primary_key=True, max_length=100)


class RelationRow(SQLModel, table=True):
    __tablename__ = "lore_kb_relations"

    workspace: str = Field(default=DEFAULT_WORKSPACE, max_length=WORKSPACE_CHARS, primary_key=True)
    source: str = Field(primary_key=True, max_length=MAX_KEY)  # entity keys, source <= target
    target: str = Field(primary_key=True, max_length=MAX_KEY, index=True)
    descriptions: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    weight: float = Field(default=1.0, sa_column=Column(Float, nullable=False))


class CommunityRow(SQLModel, table=True):
    __tablename__ = "lore_kb_communities"

    workspace: str = Field(default=DEFAULT_WORKSPACE, max_length=WORKSPACE_CHARS, primary_key=True)
    id: str = Field(primary_key=True, max_length=32)
    position: int = 0  # largest first
    members: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    title: str = Field(sa_column=Column(Text, nullable=False))
    summary: str = Field(sa_column=Column(Text, nullable=False))


class CounterRow(SQLModel, table=True):
    """`changes` counts committed inserts; `communities_at` is the count the communities cover."""

    __tablename__ = "lore_kb_counters"

    workspace: str = Field(default=DEFAULT_WORKSPACE, max_length=WORKSPACE_CHARS, primary_key=True)
    name: str = Field(primary_key=True, max_length=40)
    value: int = 0
