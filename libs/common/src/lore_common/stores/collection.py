"""One vector-store collection as a service reads and writes it: every read is answered by the store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

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
        self.embedded = store.embedded

    async def ensure(self, dim: int) -> None:
        """Create the collection when missing."""
        if await self.store.dimension(self.name) is None:
            await self.store.create(self.name, dim, self.keys)

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

    @timed("vector", "get")
    async def get(self, point_id: str) -> Record | None:
        points = await self.store.retrieve(self.name, [point_id])
        return _record(points[0]) if points else None

    @timed("vector", "delete")
    async def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        await self.store.delete(self.name, ids)

    @timed("vector", "delete_where")
    async def delete_where(self, where: Where) -> None:
        await self.store.delete_where(self.name, where)

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
        points = await self.store.search(self.name, vector, limit, threshold=threshold, where=where)
        return [(_record(p), p.score) for p in points]

    @timed("vector", "scroll")
    async def scroll(self, where: Where, limit: int) -> list[Record]:
        """Up to `limit` points matching `where`, payloads only."""
        return [_record(p) for p in await self.store.scroll(self.name, where, limit)]
