"""Store access of `vg`: memories in a vector-store collection, their history in the relational store."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from lore_common.stores.collection import Collection
from lore_common.stores.vector import VectorStore
from lore_core.clock import utcnow
from lore_mem.vg.models import CollectionRow, HistoryRow

SCOPE_KEYS = ("user_id", "agent_id", "run_id")
# Indexed payload keys: the scope, and the hash that finds an exact duplicate.
INDEXED_KEYS = (*SCOPE_KEYS, "hash")


class VgStore(Collection):
    """Memories in one collection."""

    def __init__(self, store: VectorStore, collection: str) -> None:
        super().__init__(store, collection, INDEXED_KEYS)

    async def put(self, memory_id: str, vector: list[float], payload: dict[str, Any]) -> None:
        await self.upsert([memory_id], [vector], [payload])

    async def list_scope(self, scope: dict[str, str], limit: int) -> list[dict[str, Any]]:
        # The embedded store reads the whole scope (the oldest first, exactly); a server is asked for
        # at most `limit` rows, then sorted.
        wanted = max(limit, await self.store.count(self.name, scope)) if self.embedded else limit
        rows = await self.scroll(scope, wanted)
        return sorted(rows, key=lambda r: str(r.get("created_at", "")))[:limit]

    async def find_hash(self, scope: dict[str, str], digest: str) -> dict[str, Any] | None:
        found = await self.scroll({**scope, "hash": digest}, 1)
        return found[0] if found else None


class VgHistoryStore:
    """Every change of every memory (ADD, UPDATE, DELETE), in the relational store."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

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


async def collection_model(engine: AsyncEngine, name: str, proposal: str) -> str:
    """The embedder recorded for the collection, recording `proposal` when it has none yet (replicas
    starting at once: the first insert wins and the others read it)."""
    async with AsyncSession(engine) as session:
        row = await session.get(CollectionRow, name)
        if row is not None:
            return row.embedding_model
        session.add(CollectionRow(name=name, embedding_model=proposal))
        try:
            await session.commit()
        except IntegrityError:
            await session.rollback()
            row = await session.get(CollectionRow, name)
            if row is None:
                raise
            return row.embedding_model
    return proposal
