"""Entity schemas in the relational store: the only SQL of the schemas domain."""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel import select
from sqlmodel.ext.asyncio.session import AsyncSession

from lore_docdb.schemas.models import SchemaRow


class SchemaStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def add(self, row: SchemaRow) -> bool:
        """Store a new schema; False when the name is taken."""
        try:
            async with AsyncSession(self.engine, expire_on_commit=False) as session:
                session.add(row)
                await session.commit()
        except IntegrityError:
            return False
        return True

    async def list_all(self) -> list[SchemaRow]:
        async with AsyncSession(self.engine) as session:
            return list((await session.exec(select(SchemaRow).order_by(SchemaRow.name))).all())

    async def get(self, name: str) -> SchemaRow | None:
        async with AsyncSession(self.engine) as session:
            return await session.get(SchemaRow, name)

    async def delete(self, name: str) -> bool:
        """Delete a schema; False when there was none."""
        async with AsyncSession(self.engine) as session:
            row = await session.get(SchemaRow, name)
            if row is None:
                return False
            await session.delete(row)
            await session.commit()
        return True
