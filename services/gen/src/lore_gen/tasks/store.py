"""gen task records in gen's relational store (`lore_common.jobs`), so that every replica reads every
task, plus the import of what earlier versions kept elsewhere."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import msgspec
import structlog
from sqlalchemy import inspect, text
from sqlalchemy.ext.asyncio import AsyncEngine

from lore_common.jobs import JobStore, Lifecycle
from lore_core.errors import NotFound
from lore_gen.tasks.models import TaskKind, TaskRecord

log = structlog.get_logger("lore.gen.tasks")

LIFECYCLE = Lifecycle(submitted="pending", running="running", done="completed", id_field="task_id")
# Not `gen_…`: that prefix names the generated tables, which generated SQL may read.
TABLE = "lore_gen_jobs"
# The table of the previous layout (one column per field), imported once and renamed.
OLD_TABLE = "lore_gen_tasks"
OLD_ROWS = (
    "SELECT task_id, kind, status, step, step_name, progress, result, error, request, created_at, "
    "updated_at FROM lore_gen_tasks"
)


class TaskStore(JobStore[TaskRecord]):
    def __init__(self, engine: AsyncEngine) -> None:
        super().__init__(engine, TABLE, TaskRecord, LIFECYCLE, kind_of=lambda record: record.kind)

    async def find(self, kind: TaskKind, task_id: str) -> TaskRecord:
        record = await self.get(task_id)
        if record is None or record.kind != kind:
            raise NotFound(f"task {task_id!r} does not exist")
        return record

    async def import_files(self, root: Path) -> int:
        """Task records that earlier versions kept as JSON files under `data_dir/tasks/` move into the
        store (the folder is renamed `tasks.imported` afterwards, so nothing is read twice)."""
        if not await asyncio.to_thread(root.is_dir):
            return 0
        records = []
        for path in sorted(await asyncio.to_thread(lambda: list(root.glob("*/*.json")))):
            try:
                records.append(msgspec.json.decode(await asyncio.to_thread(path.read_bytes), type=TaskRecord))
            except (OSError, msgspec.DecodeError, msgspec.ValidationError):
                log.warning("task_record_unreadable", path=str(path))
        imported = await self.add_missing(records)
        with contextlib.suppress(FileNotFoundError):  # another replica renamed the folder first
            await asyncio.to_thread(root.rename, root.with_name(f"{root.name}.imported"))
        return imported

    async def import_table(self) -> int:
        """Rows of the previous table layout move into this one; the old table is renamed
        `lore_gen_tasks_imported` in the same transaction, so a second replica finds nothing to do."""
        async with self.engine.begin() as connection:
            names = await connection.run_sync(lambda sync: inspect(sync).get_table_names())
            if OLD_TABLE not in names:
                return 0
            rows = (await connection.execute(text(OLD_ROWS))).mappings()
            records = [msgspec.convert(_decoded(dict(row)), TaskRecord) for row in rows]
            await connection.execute(text("ALTER TABLE lore_gen_tasks RENAME TO lore_gen_tasks_imported"))
        return await self.add_missing(records)


def _decoded(row: dict[str, object]) -> dict[str, object]:
    """JSON columns read back through plain SQL are strings on SQLite."""
    for key in ("progress", "result", "request"):
        value = row.get(key)
        if isinstance(value, str):
            row[key] = msgspec.json.decode(value)
    row = {k: v for k, v in row.items() if v is not None}
    return row
