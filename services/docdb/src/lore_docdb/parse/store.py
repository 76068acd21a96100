"""Task storage: parse tasks are jobs of the shared job store (`lore_common.jobs`), table
`lore_docdb_jobs`, claimed from it as from a queue by any replica. (Migration 0002 moved the rows of
the `tasks` table earlier versions used into it.)"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine

from lore_common.jobs import JobStore
from lore_docdb.parse.models import ACTIVE_STATES, LIFECYCLE, Task

TABLE = "lore_docdb_jobs"


class TaskStore(JobStore[Task]):
    def __init__(self, engine: AsyncEngine) -> None:
        super().__init__(engine, TABLE, Task, LIFECYCLE, kind_of=lambda task: task.task_type)

    async def add(self, task: Task) -> None:
        await self.save(task)

    async def list_tasks(self, status: str | None, limit: int) -> list[Task]:
        return await self.list_jobs(statuses=None if status is None else [status], limit=limit)

    async def active_for_dataset(self, dataset: str, kb: str | None = None) -> list[Task]:
        """Tasks that are still pending, running or cancelling for this dataset (in one KB, or any)."""
        fields = {"dataset": dataset} | ({"kb_name": kb} if kb is not None else {})
        return await self.list_jobs(statuses=ACTIVE_STATES, fields=fields)

    async def active_for_kb(self, kb: str) -> list[Task]:
        return await self.list_jobs(statuses=ACTIVE_STATES, fields={"kb_name": kb})
