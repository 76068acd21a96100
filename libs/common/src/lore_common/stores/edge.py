"""The embedded vector store: Qdrant Edge shards under the data dir, served by a child process
(`lore_common.vector_worker`, which says why a process). What `vector_store.provider: qdrant` opens when
no `url` is set.

Collections made by Qdrant local mode (the embedded store before Qdrant Edge: `meta.json` and
`collection/` in the same folder) are moved into Edge shards when the store opens, and the old files are
kept aside in `local-mode-migrated/` until the operator deletes them."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import structlog

from lore_common.stores.vector import (
    MirrorBatch,
    Point,
    VectorStore,
    VectorStoreError,
    Where,
    check_collection,
    check_keys,
)
from lore_common.workers import Worker

log = structlog.get_logger("lore.stores.edge")
SHARDS = "edge"
MIGRATED = "local-mode-migrated"
# Local mode kept no payload indexes, so a migrated collection indexes the keys Lore's services filter
# on (docdb's KBs: dataset, task_id, file; mem's memories: the scope and the hash) where it has them.
FILTER_KEYS = ("dataset", "task_id", "file", "user_id", "agent_id", "run_id", "hash")


class EdgeStore(VectorStore):
    """Every call is one request to the engine's process, started on first use (and again after it
    died: the shards reopen from disk, replaying their logs)."""

    embedded = True

    def __init__(self, root: Path) -> None:
        self.root = root
        self.shards = root / SHARDS
        self._worker: Worker | None = None
        self._closed = False

    def _engine(self) -> Worker:
        if self._closed:  # a call after shutdown must not start a new engine that nobody stops
            raise VectorStoreError("the vector store is closed (the service is shutting down)")
        worker = self._worker
        if worker is None or not worker.usable():
            worker = Worker(
                "vector engine", "lore_common.vector_worker", [str(self.shards)], VectorStoreError
            )
            self._worker = worker
        return worker

    async def _call(self, op: str, *args: Any) -> Any:
        return await self._engine().call(op, *args)

    async def ping(self) -> None:
        """The running engine answers; one not started yet is not down, and a health probe does not
        start it: its start (seconds on a busy machine) fell inside the probe's 2 s limit and reported
        a fresh service's store down. The first search starts it, as it would have anyway."""
        if self._closed:
            raise VectorStoreError("the vector store is closed (the service is shutting down)")
        if self._worker is None or self._worker.process is None:
            await asyncio.to_thread(self.root.stat)  # its folder is there and readable
            return
        await self._call("dimension", "lore-ping")

    async def close(self) -> None:
        self._closed = True
        worker, self._worker = self._worker, None
        if worker is not None:
            await worker.close()

    async def dimension(self, collection: str) -> int | None:
        found = await self._call("dimension", check_collection(collection))
        return None if found is None else int(found)

    async def create(self, collection: str, dim: int, keys: Sequence[str]) -> None:
        await self._call("create", check_collection(collection), int(dim), list(check_keys(keys)))

    async def drop(self, collection: str) -> None:
        await self._call("drop", check_collection(collection))

    async def upsert(
        self,
        collection: str,
        ids: Sequence[str],
        vectors: np.ndarray[Any, Any],
        payloads: Sequence[dict[str, Any]],
    ) -> None:
        if not ids:
            return
        rows = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32).reshape(len(ids), -1))
        await self._call("upsert", collection, list(ids), rows.tobytes(), [dict(p) for p in payloads])

    async def delete(self, collection: str, ids: Sequence[str]) -> None:
        if ids:
            await self._call("delete", collection, list(ids))

    async def delete_where(self, collection: str, where: Where) -> None:
        if where:
            await self._call("delete_where", collection, dict(where))

    async def count(self, collection: str, where: Where | None = None) -> int:
        return int(await self._call("count", collection, dict(where) if where else None))

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
        query = np.asarray(vector, dtype=np.float32).tobytes()
        hits = await self._call(
            "search", collection, query, int(limit), threshold, dict(where) if where else None, ef
        )
        return [Point(str(i), payload, float(score)) for i, score, payload in hits]

    async def scroll(self, collection: str, where: Where, limit: int) -> list[Point]:
        return [
            Point(str(i), payload)
            for i, payload in await self._call("scroll", collection, dict(where), limit)
        ]

    async def retrieve(self, collection: str, ids: Sequence[str]) -> list[Point]:
        if not ids:
            return []
        return [Point(str(i), payload) for i, payload in await self._call("retrieve", collection, list(ids))]

    async def optimize(self, collection: str) -> None:
        """Build the index of every point written so far (the engine does this itself every few
        thousand points; a bulk load calls it once at the end)."""
        await self._call("optimize", collection)

    async def pages(self, collection: str, page: int = 2000) -> AsyncIterator[MirrorBatch]:
        offset: str | None = None
        while True:
            ids, body, payloads, offset = await self._call("page", collection, offset, page)
            if ids:
                vectors = np.frombuffer(body, dtype=np.float32).reshape(len(ids), -1)
                yield MirrorBatch(list(ids), vectors, list(payloads))
            if offset is None:
                return


async def migrate_local_mode(root: Path, store: EdgeStore) -> list[str]:
    """Move the collections of a Qdrant local-mode folder at `root` into Edge shards, then set the old
    files aside; the names of the collections moved. A collection that fails stops the migration
    with its old files in place, so the next start tries again."""
    if not (root / "meta.json").exists():
        return []
    from lore_common.stores.qdrant import QdrantStore

    moved: list[str] = []
    source = QdrantStore.local_mode(root)
    try:
        for name in await source.collections():
            dim = await source.dimension(name)
            if dim is None:
                continue
            sample = await source.scroll(name, {}, 1000)
            keys = [k for k in FILTER_KEYS if any(k in p.payload for p in sample)]
            await store.drop(name)  # what a migration cut short left behind
            await store.create(name, dim, keys)
            async for batch in source.pages(name):
                await store.upsert(name, batch.ids, batch.vectors, batch.payloads)
            await store.optimize(name)
            if await store.count(name) != await source.count(name):
                raise VectorStoreError(f"migrating {name!r} from Qdrant local mode lost points")
            moved.append(name)
    finally:
        await source.close()
    aside = root / MIGRATED
    aside.mkdir(exist_ok=True)
    for entry in ("meta.json", "collection", ".lock"):
        if (root / entry).exists():
            await asyncio.to_thread(shutil.move, root / entry, aside / entry)
    log.info("vectors_migrated_from_local_mode", collections=moved, kept_in=str(aside))
    return moved


async def open_edge(root: Path) -> EdgeStore:
    """The embedded store at `root`, with any Qdrant local-mode collections found there moved in."""
    await asyncio.to_thread(root.mkdir, parents=True, exist_ok=True)
    store = EdgeStore(root)
    try:
        await migrate_local_mode(root, store)
    except BaseException:
        await store.close()
        raise
    return store
