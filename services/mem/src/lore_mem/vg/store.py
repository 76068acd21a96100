"""Store access of `vg`: memories in a vector-store collection, their history in the relational store."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from lore_common.matrix import PointMirror
from lore_common.stores.sql import create_tables
from lore_common.stores.vector import Point, VectorStore
from lore_core.clock import utcnow
from lore_mem.vg.models import HistoryRow

SCOPE_KEYS = ("user_id", "agent_id", "run_id")
# Indexed payload keys: the scope, and the hash that finds an exact duplicate.
INDEXED_KEYS = (*SCOPE_KEYS, "hash")


def _record(point: Point) -> dict[str, Any]:
    return {"id": point.id, **point.payload}


class MemoryStore:
    """Memories in one collection. With Qdrant local mode, which scans every point for a filtered
    search, reads go to an in-process `PointMirror` rebuilt at start-up; Qdrant stays the durable store.
    Qdrant servers and pgvector answer every read themselves."""

    def __init__(self, store: VectorStore, collection: str) -> None:
        self.store = store
        self.collection = collection
        self.mirror: PointMirror | None = None

    async def ensure(self, dim: int) -> None:
        if await self.store.dimension(self.collection) is None:
            await self.store.create(self.collection, dim, INDEXED_KEYS)
        if self.store.local:
            self.mirror = PointMirror(dim, SCOPE_KEYS)
            async for batch in self.store.pages(self.collection):
                for point_id, vector, payload in zip(batch.ids, batch.vectors, batch.payloads, strict=True):
                    self.mirror.put(point_id, vector, payload)

    async def upsert(self, memory_id: str, vector: list[float], payload: dict[str, Any]) -> None:
        await self.store.upsert(self.collection, [memory_id], np.asarray([vector], np.float32), [payload])
        if self.mirror is not None:
            self.mirror.put(memory_id, vector, payload)

    async def get(self, memory_id: str) -> dict[str, Any] | None:
        if self.mirror is not None:
            index = self.mirror.rows.get(memory_id)
            return None if index is None else {"id": memory_id, **self.mirror.payloads[index]}
        points = await self.store.retrieve(self.collection, [memory_id])
        return _record(points[0]) if points else None

    async def delete(self, memory_ids: Sequence[str]) -> None:
        if memory_ids:
            await self.store.delete(self.collection, memory_ids)
            if self.mirror is not None:
                for memory_id in memory_ids:
                    self.mirror.remove(memory_id)

    async def search(
        self, vector: list[float], scope: dict[str, str], limit: int, threshold: float | None
    ) -> list[tuple[dict[str, Any], float]]:
        if self.mirror is not None:
            mirror = self.mirror
            return [
                ({"id": mirror.ids[i], **mirror.payloads[i]}, score)
                for i, score in mirror.search(vector, limit, threshold, where=scope)
            ]
        points = await self.store.search(self.collection, vector, limit, threshold=threshold, where=scope)
        return [(_record(p), p.score) for p in points]

    async def list_scope(self, scope: dict[str, str], limit: int) -> list[dict[str, Any]]:
        if self.mirror is not None:
            mirror = self.mirror
            rows = [{"id": mirror.ids[i], **mirror.payloads[i]} for i in mirror.rows_where(scope)]
        else:
            rows = [_record(p) for p in await self.store.scroll(self.collection, scope, limit)]
        return sorted(rows, key=lambda r: str(r.get("created_at", "")))[:limit]

    async def find_hash(self, scope: dict[str, str], digest: str) -> dict[str, Any] | None:
        if self.mirror is not None:
            for i in self.mirror.rows_where(scope):
                if self.mirror.payloads[i].get("hash") == digest:
                    return {"id": self.mirror.ids[i], **self.mirror.payloads[i]}
            return None
        points = await self.store.scroll(self.collection, {**scope, "hash": digest}, 1)
        return _record(points[0]) if points else None


class HistoryStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def create_tables(self) -> None:
        await create_tables(self.engine, [HistoryRow])

    async def record(
        self, memory_id: str, event: str, old: str | None, new: str | None, is_deleted: bool = False
    ) -> None:
        async with AsyncSession(self.engine) as session:
            session.add(
                HistoryRow(
                    id=str(uuid.uuid4()),
                    memory_id=memory_id,
                    event=event,
                    old_memory=old,
                    new_memory=new,
                    created_at=utcnow(),
                    is_deleted=is_deleted,
                )
            )
            await session.commit()

    async def of(self, memory_id: str) -> list[HistoryRow]:
        async with AsyncSession(self.engine) as session:
            rows = await session.exec(
                select(HistoryRow)
                .where(HistoryRow.memory_id == memory_id)
                .order_by(col(HistoryRow.created_at))
            )
            return list(rows.all())
