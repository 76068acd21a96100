"""Vectors in a Qdrant server; Qdrant local mode only as the source of a migration to the embedded store
(`lore_common.stores.edge`)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from qdrant_client import AsyncQdrantClient, models

from lore_common.stores.vector import (
    MirrorBatch,
    Point,
    VectorStore,
    Where,
    check_collection,
    check_keys,
)
from lore_core.settings import VectorStoreConfig


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


class QdrantStore(VectorStore):
    def __init__(self, client: AsyncQdrantClient, *, local: bool = False) -> None:
        self.client = client
        self.local = local

    @classmethod
    def local_mode(cls, path: Path) -> QdrantStore:
        """A Qdrant local-mode folder (the embedded store before Qdrant Edge), opened to be migrated."""
        return cls(AsyncQdrantClient(path=str(path)), local=True)

    async def collections(self) -> list[str]:
        return [c.name for c in (await self.client.get_collections()).collections]

    @staticmethod
    def _filter(where: Where | None) -> models.Filter | None:
        if not where:
            return None
        return models.Filter(
            must=[models.FieldCondition(key=k, match=models.MatchValue(value=v)) for k, v in where.items()]
        )

    async def ping(self) -> None:
        await self.client.get_collections()

    async def close(self) -> None:
        await self.client.close()

    async def dimension(self, collection: str) -> int | None:
        if not await self.client.collection_exists(collection):
            return None
        params = (await self.client.get_collection(collection)).config.params.vectors
        return params.size if isinstance(params, models.VectorParams) else None

    async def create(self, collection: str, dim: int, keys: Sequence[str]) -> None:
        check_collection(collection)
        check_keys(keys)
        if await self.client.collection_exists(collection):
            return
        await self.client.create_collection(
            collection, vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE)
        )
        if not self.local:  # local mode ignores payload indexes (and warns)
            for key in keys:
                await self.client.create_payload_index(collection, key, models.PayloadSchemaType.KEYWORD)

    async def drop(self, collection: str) -> None:
        if await self.client.collection_exists(collection):
            await self.client.delete_collection(collection)

    async def upsert(
        self,
        collection: str,
        ids: Sequence[str],
        vectors: np.ndarray[Any, Any],
        payloads: Sequence[dict[str, Any]],
    ) -> None:
        rows = np.asarray(vectors, dtype=np.float32).reshape(len(ids), -1)
        points = [
            models.PointStruct(id=i, vector=v.tolist(), payload=dict(p))
            for i, v, p in zip(ids, rows, payloads, strict=True)
        ]
        await self.client.upsert(collection, points=points, wait=True)

    async def delete(self, collection: str, ids: Sequence[str]) -> None:
        if ids:
            selector = models.PointIdsList(points=list(ids))
            await self.client.delete(collection, points_selector=selector, wait=True)

    async def delete_where(self, collection: str, where: Where) -> None:
        flt = self._filter(where)
        if flt is None or not await self.client.collection_exists(collection):
            return
        await self.client.delete(collection, points_selector=models.FilterSelector(filter=flt), wait=True)

    async def count(self, collection: str, where: Where | None = None) -> int:
        if not await self.client.collection_exists(collection):
            return 0
        return (await self.client.count(collection, count_filter=self._filter(where), exact=True)).count

    async def search(
        self,
        collection: str,
        vector: np.ndarray[Any, Any] | Sequence[float],
        limit: int,
        *,
        threshold: float | None = None,
        where: Where | None = None,
        ef: int | None = None,
    ) -> list[Point]:
        if not await self.client.collection_exists(collection):
            return []
        result = await self.client.query_points(
            collection,
            query=np.asarray(vector, dtype=np.float32).tolist(),
            query_filter=self._filter(where),
            limit=limit,
            score_threshold=threshold,
            # Local mode searches exactly and ignores (with a warning) any search params.
            search_params=models.SearchParams(hnsw_ef=ef) if ef and not self.local else None,
            with_payload=True,
        )
        return [Point(str(p.id), p.payload or {}, float(p.score)) for p in result.points]

    async def scroll(self, collection: str, where: Where, limit: int) -> list[Point]:
        points, _ = await self.client.scroll(
            collection, scroll_filter=self._filter(where), limit=limit, with_payload=True
        )
        return [Point(str(p.id), p.payload or {}) for p in points]

    async def retrieve(self, collection: str, ids: Sequence[str]) -> list[Point]:
        wanted = [i for i in ids if _is_uuid(i)]  # an id that is not a UUID is simply not there
        if not wanted:
            return []
        points = await self.client.retrieve(collection, ids=wanted, with_payload=True)
        return [Point(str(p.id), p.payload or {}) for p in points]

    async def pages(self, collection: str, page: int = 2000) -> AsyncIterator[MirrorBatch]:
        offset: Any = None
        while True:
            points, offset = await self.client.scroll(
                collection, limit=page, offset=offset, with_payload=True, with_vectors=True
            )
            if points:
                yield MirrorBatch(
                    [str(p.id) for p in points],
                    np.asarray([p.vector for p in points], dtype=np.float32),
                    [p.payload or {} for p in points],
                )
            if offset is None:
                return


def open_qdrant(config: VectorStoreConfig) -> QdrantStore:
    """The Qdrant server at `vector_store.url`."""
    client = AsyncQdrantClient(url=config.url, api_key=config.api_key, prefer_grpc=config.prefer_grpc)
    return QdrantStore(client)
