"""The extraction cache: structured model results kept in a service's relational store.

A result is keyed by (prompt version, model, the hash of the messages — the chunk and its prompt —,
the hash of the reply's schema), see `chat.cache_key`. A re-parse, a second knowledge base over the
same files, or another replica (they share the store) asks the model nothing it was asked before.
Each service has its own table (`lore_<service>_model_cache`), created by its migrations.
"""

from __future__ import annotations

from sqlalchemy import Column, String, Table, Text, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel import SQLModel

from lore_core.clock import utc_iso


def model_cache_table(name: str) -> Table:
    """The table `name` (created once per process in SQLModel's metadata)."""
    existing = SQLModel.metadata.tables.get(name)
    if existing is not None:
        return existing
    return Table(
        name,
        SQLModel.metadata,
        Column("key", String(512), primary_key=True),
        Column("value", Text, nullable=False),
        Column("created_at", String(40), nullable=False),
    )


class ModelCache:
    """`StructuredCache` over one table; a write that meets a row of the same key keeps the first."""

    def __init__(self, engine: AsyncEngine, table: str) -> None:
        self.engine = engine
        self.table = model_cache_table(table)

    async def get(self, key: str) -> bytes | None:
        async with self.engine.connect() as connection:
            row = (
                await connection.execute(select(self.table.c.value).where(self.table.c.key == key))
            ).first()
        return None if row is None else str(row[0]).encode()

    async def put(self, key: str, value: bytes) -> None:
        dialect = postgresql if self.engine.dialect.name == "postgresql" else sqlite
        statement = (
            dialect.insert(self.table)
            .values(key=key, value=value.decode(), created_at=utc_iso())
            .on_conflict_do_nothing(index_elements=["key"])
        )
        async with self.engine.begin() as connection:
            await connection.execute(statement)

    async def count(self) -> int:
        async with self.engine.connect() as connection:
            return int((await connection.execute(select(func.count()).select_from(self.table))).scalar_one())
