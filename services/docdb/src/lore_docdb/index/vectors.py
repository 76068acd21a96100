"""The vector side of a KB: one Qdrant collection per KB, points tagged with dataset/file/chunk/task."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np
from qdrant_client import AsyncQdrantClient, models

from lore_common.errors import LoreError

_NAMESPACE = uuid.UUID("6f0b8a3c-4b5d-4a8e-9f61-2c1d7e3b9a10")
PAYLOAD_KEYS = ("dataset", "task_id", "file")


class DimensionMismatch(LoreError):
    status_code = 500


def collection_name(kb: str) -> str:
    return f"kb_{kb}"


def point_id(chunk_id: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, chunk_id))


class VectorIndex:
    def __init__(self, client: AsyncQdrantClient, server: bool = True) -> None:
        self.client = client
        # Qdrant local mode ignores payload indexes and search params (and warns); a server uses both.
        self.payload_indexes = server

    async def ensure(self, kb: str, dim: int) -> None:
        """Create the KB's collection, or check that the existing one has the embedder's dimension."""
        name = collection_name(kb)
        if await self.client.collection_exists(name):
            info = await self.client.get_collection(name)
            params = info.config.params.vectors
            size = params.size if isinstance(params, models.VectorParams) else None
            if size is not None and size != dim:
                raise DimensionMismatch(
                    f"knowledge base {kb!r} holds {size}-d vectors but the embedder makes {dim}-d ones; "
                    "use the embedder the KB was built with, or re-parse it into a new KB"
                )
            return
        await self.client.create_collection(
            name, vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE)
        )
        if self.payload_indexes:
            for key in PAYLOAD_KEYS:
                await self.client.create_payload_index(name, key, models.PayloadSchemaType.KEYWORD)

    async def upsert(
        self, kb: str, vectors: np.ndarray[Any, Any], payloads: Sequence[dict[str, Any]]
    ) -> None:
        points = [
            models.PointStruct(id=point_id(str(p["chunk_id"])), vector=v.tolist(), payload=dict(p))
            for v, p in zip(vectors, payloads, strict=True)
        ]
        await self.client.upsert(collection_name(kb), points=points, wait=True)

    async def delete_where(self, kb: str, key: str, value: str) -> None:
        name = collection_name(kb)
        if not await self.client.collection_exists(name):
            return
        await self.client.delete(
            name,
            points_selector=models.FilterSelector(
                filter=models.Filter(
                    must=[models.FieldCondition(key=key, match=models.MatchValue(value=value))]
                )
            ),
            wait=True,
        )

    async def count(self, kb: str, key: str | None = None, value: str | None = None) -> int:
        name = collection_name(kb)
        if not await self.client.collection_exists(name):
            return 0
        flt = None
        if key is not None:
            match = models.MatchValue(value=str(value))
            flt = models.Filter(must=[models.FieldCondition(key=key, match=match)])
        return (await self.client.count(name, count_filter=flt, exact=True)).count

    async def drop(self, kb: str) -> None:
        name = collection_name(kb)
        if await self.client.collection_exists(name):
            await self.client.delete_collection(name)

    async def search(
        self, kb: str, query: np.ndarray[Any, Any], top_k: int, threshold: float, hnsw_ef: int
    ) -> list[models.ScoredPoint]:
        name = collection_name(kb)
        if not await self.client.collection_exists(name):
            return []
        result = await self.client.query_points(
            name,
            query=query.tolist(),
            limit=top_k,
            score_threshold=threshold if threshold > 0 else None,
            # Qdrant local mode searches exactly and ignores (with a warning) any search params.
            search_params=models.SearchParams(hnsw_ef=hnsw_ef) if self.payload_indexes else None,
            with_payload=True,
        )
        return list(result.points)
