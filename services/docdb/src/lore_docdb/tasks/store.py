"""Task storage: parse tasks are jobs of the shared job store (`lore_common.jobs`), table
`lore_docdb_jobs`, claimed from it as from a queue by any replica."""

from __future__ import annotations

from datetime import datetime

import msgspec
from sqlalchemy import inspect, text
from sqlalchemy.ext.asyncio import AsyncEngine

from lore_common.jobs import JobStore
from lore_docdb.tasks.models import ACTIVE_STATES, LIFECYCLE, Task

TABLE = "lore_docdb_jobs"
OLD_TABLE = "tasks"  # the layout before the shared job store


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

    async def import_table(self) -> int:
        """Rows of the table earlier versions kept (`tasks`) move into the job store; the old table is
        renamed `tasks_imported` in the same transaction, so a second replica finds nothing to do."""
        async with self.engine.begin() as connection:
            names = await connection.run_sync(lambda sync: inspect(sync).get_table_names())
            if OLD_TABLE not in names:
                return 0
            rows = (await connection.execute(text("SELECT * FROM tasks"))).mappings().all()
            tasks = [_from_row(dict(row)) for row in rows]
            await connection.execute(text("ALTER TABLE tasks RENAME TO tasks_imported"))
        return await self.add_missing(tasks)


def _from_row(row: dict[str, object]) -> Task:
    for key in ("created_at", "updated_at"):
        value = row.get(key)
        if isinstance(value, datetime):
            row[key] = value.replace(tzinfo=None).isoformat(timespec="microseconds")
        elif isinstance(value, str):
            row[key] = value.replace(" ", "T")
    row.pop("heartbeat_at", None)
    fields = {name for name in Task.__struct_fields__}
    return msgspec.convert({k: v for k, v in row.items() if k in fields and v is not None}, Task)
