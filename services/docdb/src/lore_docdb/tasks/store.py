"""Task table access: the only place that speaks SQL about tasks."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from lore_docdb.tasks.models import ACTIVE_STATES, TaskRow


class TaskStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def active_for_dataset(self, dataset: str) -> list[TaskRow]:
        """Tasks of any KB that are still pending, running or cancelling for this dataset."""
        async with AsyncSession(self.engine) as session:
            rows = await session.exec(
                select(TaskRow).where(TaskRow.dataset == dataset, col(TaskRow.status).in_(ACTIVE_STATES))
            )
            return list(rows.all())

    async def add(self, task: TaskRow) -> None:
        async with AsyncSession(self.engine) as session:
            session.add(task)
            await session.commit()
