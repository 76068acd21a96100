"""The vector side of a KB: one collection per KB, points tagged with dataset/file/chunk/task."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lore_common.stores.vector import VectorStore
from lore_core.errors import LoreError
from lore_core.metrics import timed

_NAMESPACE = uuid.UUID("6f0b8a3c-4b5d-4a8e-9f61-2c1d7e3b9a10")
# Indexed payload keys: the filters that deletes and counts use.
PAYLOAD_KEYS = ("dataset", "task_id", "file")


class DimensionMismatch(LoreError):
    status_code = 500


def collection_name(kb: str) -> str:
    return f"kb_{kb}"


def point_id(chunk_id: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, chunk_id))


@dataclass
class VectorHit:
    score: float
    payload: dict[str, Any]


class VectorIndex:
    """A KB's chunks in the vector store. Every backend searches with its own HNSW index: the embedded
    Qdrant Edge engine (in a process of its own), a Qdrant server, or pgvector."""

    def __init__(self, store: VectorStore) -> None:
        self.store = store

    async def ensure(self, kb: str, dim: int) -> None:
        """Create the KB's collection, or check that the existing one has the embedder's dimension."""
        name = collection_name(kb)
        size = await self.store.dimension(name)
        if size is None:
            await self.store.create(name, dim, PAYLOAD_KEYS)
        elif size != dim:
            raise DimensionMismatch(
                f"knowledge base {kb!r} holds {size}-d vectors but the embedder makes {dim}-d ones; "
                "use the embedder the KB was built with, or re-parse it into a new KB"
            )

    @timed("vector", "upsert")
    async def upsert(
        self, kb: str, vectors: np.ndarray[Any, Any], payloads: Sequence[dict[str, Any]]
    ) -> None:
        ids = [point_id(str(p["chunk_id"])) for p in payloads]
        matrix = np.asarray(vectors, dtype=np.float32).reshape(len(ids), -1)
        await self.store.upsert(collection_name(kb), ids, matrix, payloads)

    @timed("vector", "delete_where")
    async def delete_where(self, kb: str, key: str, value: str) -> None:
        await self.store.delete_where(collection_name(kb), {key: value})

    @timed("vector", "delete")
    async def delete_chunks(self, kb: str, chunk_ids: Sequence[str]) -> None:
        """Remove the points of these chunks (a changed or deleted file's old chunks)."""
        ids = [point_id(c) for c in chunk_ids]
        for start in range(0, len(ids), 1000):
            await self.store.delete(collection_name(kb), ids[start : start + 1000])

    @timed("vector", "count")
    async def count(self, kb: str, key: str | None = None, value: str | None = None) -> int:
        where = {key: str(value)} if key is not None else None
        return await self.store.count(collection_name(kb), where)

    async def drop(self, kb: str) -> None:
        await self.store.drop(collection_name(kb))

    @timed("vector", "search")
    async def search(
        self, kb: str, query: np.ndarray[Any, Any], top_k: int, threshold: float, hnsw_ef: int
    ) -> list[VectorHit]:
        limit = threshold if threshold > 0 else None
        points = await self.store.search(collection_name(kb), query, top_k, threshold=limit, ef=hnsw_ef)
        return [VectorHit(p.score, p.payload) for p in points]

    async def close(self) -> None:
        """The store is closed with the service's stores; nothing of its own to release."""
