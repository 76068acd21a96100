"""The vector side of a KB: one collection per KB, points tagged with dataset/file/chunk/task."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import structlog

from lore_common.stores.vector import VectorStore
from lore_common.workers import Worker
from lore_core.errors import LoreError
from lore_core.metrics import timed

_NAMESPACE = uuid.UUID("6f0b8a3c-4b5d-4a8e-9f61-2c1d7e3b9a10")
# Indexed payload keys: the filters that deletes and counts use.
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
    """With a Qdrant server or pgvector, searches use the store's HNSW index. Qdrant local mode scans
    every point in Python (about 25 ms per query at 10k chunks), so there each KB is mirrored (loaded
    on first use) in a child process, `lore_common.vector_worker`, which searches it with one matrix
    product per batch of queries; Qdrant stays the durable copy. Local mode allows one process per
    store, so the mirror cannot go stale. The payloads stay here: the child answers with point ids and
    scores.

    Why a process: see `lore_common.workers`. If the child dies, its searches fail, and the next one
    starts a new child and reloads the mirrors from Qdrant."""

    def __init__(self, store: VectorStore) -> None:
        self.store = store
        self.mirrored = store.local
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
            size = await self.store.dimension(name)
            if size is None:
                return None
            payloads: dict[str, dict[str, Any]] = {}
            await worker.call("drop", kb)
            async for batch in self.store.pages(name):
                await worker.call("put", kb, size, batch.ids, batch.vectors.tobytes())
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
        # Under the KB's loading lock, so that a mirror being loaded cannot miss this write.
        async with self._loading.setdefault(kb, asyncio.Lock()):
            await self.store.upsert(collection_name(kb), ids, matrix, payloads)
            mirror = self._mirrors.get(kb)
            if mirror is not None:
                mirror.update((i, dict(p)) for i, p in zip(ids, payloads, strict=True))
                await self._change(kb, "put", matrix.shape[1], ids, matrix.tobytes())

    @timed("vector", "delete_where")
    async def delete_where(self, kb: str, key: str, value: str) -> None:
        async with self._loading.setdefault(kb, asyncio.Lock()):
            await self.store.delete_where(collection_name(kb), {key: value})
            mirror = self._mirrors.get(kb)
            if mirror is not None:
                gone = [i for i, payload in mirror.items() if payload.get(key) == value]
                for i in gone:
                    del mirror[i]
                await self._change(kb, "remove", gone)

    @timed("vector", "count")
    async def count(self, kb: str, key: str | None = None, value: str | None = None) -> int:
        where = {key: str(value)} if key is not None else None
        return await self.store.count(collection_name(kb), where)

    async def drop(self, kb: str) -> None:
        # Under the loading lock: a mirror being loaded now must not outlive the collection.
        async with self._loading.setdefault(kb, asyncio.Lock()):
            if self._mirrors.pop(kb, None) is not None:
                await self._change(kb, "drop")
            await self.store.drop(collection_name(kb))

    @timed("vector", "search")
    async def search(
        self, kb: str, query: np.ndarray[Any, Any], top_k: int, threshold: float, hnsw_ef: int
    ) -> list[VectorHit]:
        limit = threshold if threshold > 0 else None
        if self.mirrored:
            worker = self._search_worker()
            mirror = await self._mirror(kb, worker)
            if mirror is None:
                return []
            ids, scores = await worker.call(
                "search", kb, np.asarray(query, np.float32).tobytes(), top_k, limit
            )
            # A point removed while the search ran is left out.
            return [VectorHit(score, mirror[i]) for i, score in zip(ids, scores, strict=True) if i in mirror]
        points = await self.store.search(collection_name(kb), query, top_k, threshold=limit, ef=hnsw_ef)
        return [VectorHit(p.score, p.payload) for p in points]

    async def close(self) -> None:
        worker, self._worker = self._worker, None
        self._mirrors.clear()
        if worker is not None:
            await worker.close()
