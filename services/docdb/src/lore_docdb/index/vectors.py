"""The vector side of a KB: one Qdrant collection per KB, points tagged with dataset/file/chunk/task."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from qdrant_client import AsyncQdrantClient, models

from lore_common.batching import Batcher
from lore_common.errors import LoreError
from lore_common.matrix import PointMirror

_NAMESPACE = uuid.UUID("6f0b8a3c-4b5d-4a8e-9f61-2c1d7e3b9a10")
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
    """With a Qdrant server, searches use its HNSW index. Qdrant local mode scans every point in Python
    (about 25 ms per query at 10k chunks), so there each KB is mirrored in memory (`PointMirror`,
    loaded on first use) and searched with one matrix product; Qdrant stays the durable copy. Local
    mode allows one process per store, so the mirror cannot go stale.

    Mirrors are read and changed only on one worker thread: searches leave the event loop free (the
    product releases the GIL), and a search never sees a half-applied change. Concurrent searches of a
    KB run as one batch (`Batcher`), which reads the KB's matrix once for all of them."""

    def __init__(self, client: AsyncQdrantClient, server: bool = True) -> None:
        self.client = client
        # Qdrant local mode ignores payload indexes and search params (and warns); a server uses both.
        self.payload_indexes = server
        self.mirrored = not server
        self._mirrors: dict[str, PointMirror] = {}
        self._loading: dict[str, asyncio.Lock] = {}
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vectors")
        self._searches: Batcher[tuple[Any, int, float | None], list[VectorHit]] = Batcher(
            self._search_batch, 256, "vectors", executor=self._thread
        )

    async def _on_thread(self, fn: Callable[[], None]) -> None:
        await asyncio.get_running_loop().run_in_executor(self._thread, fn)

    async def _mirror(self, kb: str) -> PointMirror | None:
        """The KB's in-memory copy (local mode only; None when the collection does not exist)."""
        if not self.mirrored:
            return None
        mirror = self._mirrors.get(kb)
        if mirror is not None:
            return mirror
        async with self._loading.setdefault(kb, asyncio.Lock()):
            if kb in self._mirrors:
                return self._mirrors[kb]
            name = collection_name(kb)
            if not await self.client.collection_exists(name):
                return None
            info = await self.client.get_collection(name)
            params = info.config.params.vectors
            assert isinstance(params, models.VectorParams)
            mirror = PointMirror(params.size, PAYLOAD_KEYS)
            offset: Any = None
            while True:
                points, offset = await self.client.scroll(
                    name, limit=2000, offset=offset, with_payload=True, with_vectors=True
                )
                for point in points:
                    mirror.put(str(point.id), point.vector, point.payload or {})  # type: ignore[arg-type]
                if offset is None:
                    break
            self._mirrors[kb] = mirror
            return mirror

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
        # Under the KB's loading lock, so that a mirror being loaded cannot miss this write.
        async with self._loading.setdefault(kb, asyncio.Lock()):
            await self.client.upsert(collection_name(kb), points=points, wait=True)
            mirror = self._mirrors.get(kb)
            if mirror is not None:

                def put() -> None:
                    for point, vector in zip(points, vectors, strict=True):
                        mirror.put(str(point.id), vector, point.payload or {})

                await self._on_thread(put)

    async def delete_where(self, kb: str, key: str, value: str) -> None:
        name = collection_name(kb)
        if not await self.client.collection_exists(name):
            return
        selector = models.FilterSelector(
            filter=models.Filter(must=[models.FieldCondition(key=key, match=models.MatchValue(value=value))])
        )
        async with self._loading.setdefault(kb, asyncio.Lock()):
            await self.client.delete(name, points_selector=selector, wait=True)
            mirror = self._mirrors.get(kb)
            if mirror is not None:

                def remove() -> None:
                    for row in sorted(mirror.rows_where({key: value}).tolist(), reverse=True):
                        mirror.remove(mirror.ids[row])

                await self._on_thread(remove)

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
        # Under the loading lock: a mirror being loaded now must not outlive the collection.
        async with self._loading.setdefault(kb, asyncio.Lock()):
            self._mirrors.pop(kb, None)
            name = collection_name(kb)
            if await self.client.collection_exists(name):
                await self.client.delete_collection(name)

    async def search(
        self, kb: str, query: np.ndarray[Any, Any], top_k: int, threshold: float, hnsw_ef: int
    ) -> list[VectorHit]:
        if self.mirrored:
            mirror = await self._mirror(kb)
            if mirror is None:
                return []
            return await self._searches.submit(kb, (query, top_k, threshold if threshold > 0 else None))
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
        return [VectorHit(float(p.score), p.payload or {}) for p in result.points]

    def _search_batch(
        self, kb: Hashable, queries: list[tuple[Any, int, float | None]]
    ) -> list[list[VectorHit]]:
        mirror = self._mirrors.get(str(kb))
        if mirror is None:
            return [[] for _ in queries]
        found = mirror.search_many(
            np.stack([np.asarray(q[0], dtype=np.float32).reshape(-1) for q in queries]),
            [q[1] for q in queries],
            [q[2] for q in queries],
        )
        return [[VectorHit(score, mirror.payloads[row]) for row, score in hits] for hits in found]

    def close(self) -> None:
        self._searches.close()
