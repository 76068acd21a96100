"""Store access of `vg`: memories in a Qdrant collection, their history in the relational store."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from qdrant_client import AsyncQdrantClient, models
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel import SQLModel, col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from lore_mem.vg.models import HistoryRow, utcnow

SCOPE_KEYS = ("user_id", "agent_id", "run_id")


def scope_filter(scope: dict[str, str], extra: Sequence[models.FieldCondition] = ()) -> models.Filter:
    return models.Filter(
        must=[
            *(models.FieldCondition(key=k, match=models.MatchValue(value=v)) for k, v in scope.items()),
            *extra,
        ]
    )


class MemoryStore:
    def __init__(self, client: AsyncQdrantClient, collection: str, server: bool) -> None:
        self.client = client
        self.collection = collection
        self.server = server

    async def ensure(self, dim: int) -> None:
        if await self.client.collection_exists(self.collection):
            return
        await self.client.create_collection(
            self.collection, vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE)
        )
        if self.server:  # Qdrant local mode ignores payload indexes
            for key in (*SCOPE_KEYS, "hash"):
                await self.client.create_payload_index(self.collection, key, models.PayloadSchemaType.KEYWORD)

    async def upsert(self, memory_id: str, vector: list[float], payload: dict[str, Any]) -> None:
        await self.client.upsert(
            self.collection,
            points=[models.PointStruct(id=memory_id, vector=vector, payload=payload)],
            wait=True,
        )

    async def get(self, memory_id: str) -> dict[str, Any] | None:
        try:
            points = await self.client.retrieve(self.collection, ids=[memory_id], with_payload=True)
        except (ValueError, Exception):  # an id that is not a UUID is simply not there
            return None
        if not points or points[0].payload is None:
            return None
        return {"id": str(points[0].id), **points[0].payload}

    async def delete(self, memory_ids: Sequence[str]) -> None:
        if memory_ids:
            await self.client.delete(
                self.collection, points_selector=models.PointIdsList(points=list(memory_ids)), wait=True
            )

    async def search(
        self, vector: list[float], scope: dict[str, str], limit: int, threshold: float | None
    ) -> list[tuple[dict[str, Any], float]]:
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
        points, _ = await self.client.scroll(
            self.collection, scroll_filter=scope_filter(scope), limit=limit, with_payload=True
        )
        rows = [{"id": str(p.id), **(p.payload or {})} for p in points]
        return sorted(rows, key=lambda r: str(r.get("created_at", "")))

    async def find_hash(self, scope: dict[str, str], digest: str) -> dict[str, Any] | None:
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
