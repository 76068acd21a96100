"""The vector side of a KB: one Qdrant collection per KB, points tagged with dataset/file/chunk/task."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import structlog
from qdrant_client import AsyncQdrantClient, models

from lore_common.stores.vector import mirror_pages
from lore_common.workers import Worker
from lore_core.errors import LoreError

_NAMESPACE = uuid.UUID("6f0b8a3c-4b5d-4a8e-9f61-2c1d7e3b9a10")
PAYLOAD_KEYS = ("dataset", "task_id", "file")
log = structlog.get_logger("lore.docdb.vectors")


class DimensionMismatch(LoreError):
    status_code = 500


class VectorSearchError(RuntimeError):
    """The vector search process failed; the message says how."""


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
    (about 25 ms per query at 10k chunks), so there each KB is mirrored (loaded on first use) in a child
    process, `lore_common.vector_worker`, which searches it with one matrix product per batch of
    queries; Qdrant stays the durable copy. Local mode allows one process per store, so the mirror
    cannot go stale. The payloads stay here: the child answers with point ids and scores.

    Why a process: see `lore_common.workers`. If the child dies, its searches fail, and the next one
    starts a new child and reloads the mirrors from Qdrant."""

    def __init__(self, client: AsyncQdrantClient, server: bool = True) -> None:
        self.client = client
        # Qdrant local mode ignores payload indexes and search params (and warns); a server uses both.
        self.payload_indexes = server
        self.mirrored = not server
        # Per mirrored KB: point id -> payload. Valid for the current worker only.
        self._mirrors: dict[str, dict[str, dict[str, Any]]] = {}
        self._loading: dict[str, asyncio.Lock] = {}
        self._worker: Worker | None = None

    def _search_worker(self) -> Worker:
        worker = self._worker
        if worker is None or not worker.usable():
            self._mirrors.clear()  # a new child knows no KB
            worker = Worker("vector search", "lore_common.vector_worker", [], VectorSearchError)
            self._worker = worker
        return worker

    async def _mirror(self, kb: str, worker: Worker) -> dict[str, dict[str, Any]] | None:
        """The KB's payloads, its vectors loaded into `worker` (None when the collection does not exist)."""
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
            payloads: dict[str, dict[str, Any]] = {}
            await worker.call("drop", kb)
            async for batch in mirror_pages(self.client, name):
                await worker.call("put", kb, params.size, batch.ids, batch.vectors.tobytes())
                payloads.update(zip(batch.ids, batch.payloads, strict=True))
            self._mirrors[kb] = payloads
            return payloads

    async def _change(self, kb: str, op: str, *args: Any) -> None:
        """Apply a write to the KB's mirror; a mirror the child could not change is dropped (reloaded
        from Qdrant on the next search), so the write that Qdrant holds is never lost."""
        worker = self._worker
        if worker is None or worker.finished:
            self._mirrors.clear()
            return
        try:
            await worker.call(op, kb, *args)
        except VectorSearchError as exc:
            log.warning("vector_mirror_dropped", kb=kb, error=str(exc))
            self._mirrors.pop(kb, None)

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
                matrix = np.asarray(vectors, dtype=np.float32).reshape(len(points), -1)
                ids = [str(point.id) for point in points]
                mirror.update((str(point.id), point.payload or {}) for point in points)
                await self._change(kb, "put", matrix.shape[1], ids, matrix.tobytes())

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
                gone = [i for i, payload in mirror.items() if payload.get(key) == value]
                for i in gone:
                    del mirror[i]
                await self._change(kb, "remove", gone)

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
            if self._mirrors.pop(kb, None) is not None:
                await self._change(kb, "drop")
            name = collection_name(kb)
            if await self.client.collection_exists(name):
                await self.client.delete_collection(name)

    async def search(
        self, kb: str, query: np.ndarray[Any, Any], top_k: int, threshold: float, hnsw_ef: int
    ) -> list[VectorHit]:
        if self.mirrored:
            worker = self._search_worker()
            mirror = await self._mirror(kb, worker)
            if mirror is None:
                return []
            limit = threshold if threshold > 0 else None
            ids, scores = await worker.call(
                "search", kb, np.asarray(query, np.float32).tobytes(), top_k, limit
            )
            # A point removed while the search ran is left out.
            return [VectorHit(score, mirror[i]) for i, score in zip(ids, scores, strict=True) if i in mirror]
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

    async def close(self) -> None:
        worker, self._worker = self._worker, None
        self._mirrors.clear()
        if worker is not None:
            await worker.close()
