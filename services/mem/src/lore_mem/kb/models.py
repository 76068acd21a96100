"""Wire structures of `kb` memory and the records its file store keeps."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from lore_core.clock import utc_iso

JobStatus = Literal["accepted", "processing", "done", "failed"]
QueryMode = Literal["hybrid", "local", "global", "naive"]


def now() -> str:
    """A job's timestamp: UTC to the millisecond, so a poll sees each step move."""
    return utc_iso("milliseconds")


class InsertJob(msgspec.Struct, kw_only=True):
    id: str
    query: str
    status: JobStatus = "accepted"
    videocaption: str | None = None
    audiocaption: str | None = None
    imagecaption: str | None = None
    # Why a medium got no caption (no provider, unreadable file…), by medium.
    notes: dict[str, str] = msgspec.field(default_factory=dict)
    media: dict[str, str] = msgspec.field(default_factory=dict)
    error: str | None = None
    chunks: int = 0
    entities: int = 0
    relations: int = 0
    created_at: str = msgspec.field(default_factory=now)
    updated_at: str = msgspec.field(default_factory=now)

    def accepted(self) -> dict[str, Any]:
        """The contract's insert job (2.12), as the 202 answers it."""
        return {
            "id": self.id,
            "query": self.query,
            "status": "accepted",
            "videocaption": self.videocaption,
            "audiocaption": self.audiocaption,
            "imagecaption": self.imagecaption,
        }

    def public(self) -> dict[str, Any]:
        body = msgspec.to_builtins(self)
        body.pop("media", None)
        return dict(body)


class QueryRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    query: str
    mode: QueryMode = "hybrid"
    use_pm: bool = False


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
    """What one insert adds, written as one file: applied whole or not at all."""

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


class CommunityFile(msgspec.Struct, kw_only=True):
    version: int
    communities: list[Community]
    vectors: bytes  # float32, len(communities) × dim, of the summaries


class Snapshot(msgspec.Struct, kw_only=True):
    last_seq: int
    dim: int
    chunks: list[ChunkRecord]
    chunk_vectors: bytes
    entities: list[EntityRecord]
    entity_vectors: bytes
    relations: list[RelationRecord]
