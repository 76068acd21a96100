"""Store access of `vg`: memories in a Qdrant collection, their history in the relational store."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from qdrant_client import AsyncQdrantClient, models
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel import SQLModel, col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from lore_common.matrix import PointMirror
from lore_common.stores.vector import mirror_pages
from lore_core.clock import utcnow
from lore_mem.vg.models import HistoryRow

SCOPE_KEYS = ("user_id", "agent_id", "run_id")


def scope_filter(scope: dict[str, str], extra: Sequence[models.FieldCondition] = ()) -> models.Filter:
    return models.Filter(
        must=[
            *(models.FieldCondition(key=k, match=models.MatchValue(value=v)) for k, v in scope.items()),
            *extra,
        ]
    )


class MemoryStore:
    """Memories in a Qdrant collection. With Qdrant local mode, which scans every point for a filtered
    search, reads go to an in-process `PointMirror` rebuilt at start-up; Qdrant stays the durable store."""

    def __init__(self, client: AsyncQdrantClient, collection: str, server: bool) -> None:
        self.client = client
        self.collection = collection
        self.server = server
        self.mirror: PointMirror | None = None

    async def ensure(self, dim: int) -> None:
        if not await self.client.collection_exists(self.collection):
            await self.client.create_collection(
                self.collection, vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE)
            )
            if self.server:  # Qdrant local mode ignores payload indexes
                for key in (*SCOPE_KEYS, "hash"):
                    await self.client.create_payload_index(
                        self.collection, key, models.PayloadSchemaType.KEYWORD
                    )
        if not self.server:
            self.mirror = PointMirror(dim, SCOPE_KEYS)
            async for batch in mirror_pages(self.client, self.collection):
                for point_id, vector, payload in zip(batch.ids, batch.vectors, batch.payloads, strict=True):
                    self.mirror.put(point_id, vector, payload)

    async def upsert(self, memory_id: str, vector: list[float], payload: dict[str, Any]) -> None:
        await self.client.upsert(
            self.collection,
            points=[models.PointStruct(id=memory_id, vector=vector, payload=payload)],
            wait=True,
        )
        if self.mirror is not None:
            self.mirror.put(memory_id, vector, payload)

    async def get(self, memory_id: str) -> dict[str, Any] | None:
        if self.mirror is not None:
            index = self.mirror.rows.get(memory_id)
            return None if index is None else {"id": memory_id, **self.mirror.payloads[index]}
        try:
            points = await self.client.retrieve(self.collection, ids=[memory_id], with_payload=True)
        except Exception:  # an id that is not a UUID is simply not there
            return None
        if not points or points[0].payload is None:
            return None
        return {"id": str(points[0].id), **points[0].payload}

    async def delete(self, memory_ids: Sequence[str]) -> None:
        if memory_ids:
            await self.client.delete(
                self.collection, points_selector=models.PointIdsList(points=list(memory_ids)), wait=True
            )
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
        result = await self.client.query_points(
            self.collection,
            query=vector,
            query_filter=scope_filter(scope),
            limit=limit,
            score_threshold=threshold,
            with_payload=True,
        )
        return [({"id": str(p.id), **(p.payload or {})}, float(p.score)) for p in result.points]

    async def list_scope(self, scope: dict[str, str], limit: int) -> list[dict[str, Any]]:
        if self.mirror is not None:
            mirror = self.mirror
            rows = [{"id": mirror.ids[i], **mirror.payloads[i]} for i in mirror.rows_where(scope)]
        else:
            points, _ = await self.client.scroll(
                self.collection, scroll_filter=scope_filter(scope), limit=limit, with_payload=True
            )
            rows = [{"id": str(p.id), **(p.payload or {})} for p in points]
        return sorted(rows, key=lambda r: str(r.get("created_at", "")))[:limit]

    async def find_hash(self, scope: dict[str, str], digest: str) -> dict[str, Any] | None:
        if self.mirror is not None:
            for i in self.mirror.rows_where(scope):
                if self.mirror.payloads[i].get("hash") == digest:
                    return {"id": self.mirror.ids[i], **self.mirror.payloads[i]}
            return None
        points, _ = await self.client.scroll(
            self.collection,
            scroll_filter=scope_filter(
                scope, [models.FieldCondition(key="hash", match=models.MatchValue(value=digest))]
            ),
            limit=1,
            with_payload=True,
        )
        return {"id": str(points[0].id), **(points[0].payload or {})} if points else None


class HistoryStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def create_tables(self) -> None:
        async with self.engine.begin() as connection:
            await connection.run_sync(
                SQLModel.metadata.create_all, tables=[SQLModel.metadata.tables["memory_history"]]
            )

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
