"""One vector-store collection as a service reads and writes it, mirrored in memory on Qdrant local mode.

Qdrant local mode scans every point in Python on each search, and only one process may open it, so
there the collection is loaded at start-up into a `PointMirror` that answers reads, and the store is
the durable copy. Qdrant servers and pgvector are shared by replicas and answer every read themselves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from lore_common.matrix import PointMirror
from lore_common.stores.vector import Point, VectorStore, Where
from lore_core.metrics import timed

Record = dict[str, Any]


def _record(point: Point) -> Record:
    return {"id": point.id, **point.payload}


class Collection:
    def __init__(self, store: VectorStore, name: str, keys: Sequence[str]) -> None:
        self.store = store
        self.name = name
        self.keys = tuple(keys)
        self.mirror: PointMirror | None = None

    async def ensure(self, dim: int) -> None:
        """Create the collection when missing; on local mode, load it into the mirror."""
        if await self.store.dimension(self.name) is None:
            await self.store.create(self.name, dim, self.keys)
        if self.store.local:
            mirror = PointMirror(dim, self.keys)
            async for batch in self.store.pages(self.name):
                for point_id, vector, payload in zip(batch.ids, batch.vectors, batch.payloads, strict=True):
                    mirror.put(point_id, vector, payload)
            self.mirror = mirror

    @timed("vector", "upsert")
    async def upsert(
        self,
        ids: Sequence[str],
        vectors: np.ndarray[Any, Any] | Sequence[Sequence[float]],
        payloads: Sequence[Record],
    ) -> None:
        if not ids:
            return
        rows = np.asarray(vectors, dtype=np.float32).reshape(len(ids), -1)
        await self.store.upsert(self.name, ids, rows, payloads)
        if self.mirror is not None:
            for point_id, row, payload in zip(ids, rows, payloads, strict=True):
                self.mirror.put(point_id, row, dict(payload))

    @timed("vector", "get")
    async def get(self, point_id: str) -> Record | None:
        if self.mirror is not None:
            index = self.mirror.rows.get(point_id)
            return None if index is None else {"id": point_id, **self.mirror.payloads[index]}
        points = await self.store.retrieve(self.name, [point_id])
        return _record(points[0]) if points else None

    @timed("vector", "delete")
    async def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        await self.store.delete(self.name, ids)
        if self.mirror is not None:
            for point_id in ids:
                self.mirror.remove(point_id)

    @timed("vector", "delete_where")
    async def delete_where(self, where: Where) -> None:
        await self.store.delete_where(self.name, where)
        if self.mirror is not None:
            for index in sorted(self.mirror.rows_where(dict(where)).tolist(), reverse=True):
                self.mirror.remove(self.mirror.ids[index])

    @timed("vector", "search")
    async def search(
        self,
        vector: Sequence[float] | np.ndarray[Any, Any],
        limit: int,
        *,
        threshold: float | None = None,
        where: Mapping[str, str] | None = None,
    ) -> list[tuple[Record, float]]:
        """The nearest points as `{id, **payload}` with their cosine, best first."""
        if limit <= 0:
            return []
        if self.mirror is not None:
            mirror = self.mirror
            return [
                ({"id": mirror.ids[i], **mirror.payloads[i]}, score)
                for i, score in mirror.search(vector, limit, threshold, where=dict(where) if where else None)
            ]
        points = await self.store.search(self.name, vector, limit, threshold=threshold, where=where)
        return [(_record(p), p.score) for p in points]

    @timed("vector", "scroll")
    async def scroll(self, where: Where, limit: int) -> list[Record]:
        """Up to `limit` points matching `where`, payloads only."""
        if self.mirror is not None:
            mirror = self.mirror
            return [
                {"id": mirror.ids[i], **mirror.payloads[i]} for i in mirror.rows_where(dict(where))[:limit]
            ]
        return [_record(p) for p in await self.store.scroll(self.name, where, limit)]
