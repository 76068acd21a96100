"""Task records in gen's relational store, so that every replica reads every task.

A running task belongs to one replica (`owner`) and carries its last heartbeat. A task whose replica
died is failed by the sweep once its heartbeat is stale; a replica that restarts fails its own
leftovers at once. Finished records never change again, so they are also cached in memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

import msgspec
import structlog
from sqlalchemy import JSON, Column, Text, or_, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel import Field, SQLModel, col
from sqlmodel.ext.asyncio.session import AsyncSession

from lore_common.stores.sql import create_tables
from lore_core.clock import utc_iso
from lore_core.errors import NotFound
from lore_gen.tasks.models import TaskKind, TaskRecord

log = structlog.get_logger("lore.gen.tasks")

MEMORY_CAPACITY = 1000
_TASK_ID = re.compile(r"^[A-Za-z0-9\-]{1,64}$")
UNFINISHED = ("pending", "running")


class TaskRow(SQLModel, table=True):
    # Not `gen_…`: that prefix names the generated tables, which generated SQL may read.
    __tablename__ = "lore_gen_tasks"

    task_id: str = Field(primary_key=True, max_length=64)
    kind: str = Field(max_length=16, index=True)
    status: str = Field(max_length=16, index=True)
    step: int = 0
    step_name: str | None = Field(default=None, max_length=64)
    progress: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    result: Any = Field(default=None, sa_column=Column(JSON, nullable=True))
    error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    request: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    created_at: str = Field(max_length=40)
    updated_at: str = Field(max_length=40)
    owner: str | None = Field(default=None, max_length=200, index=True)
    # Seconds since the epoch of the owner's last sign of life (while pending or running).
    heartbeat_at: float | None = None

    def record(self) -> TaskRecord:
        return TaskRecord(
            task_id=self.task_id,
            kind=self.kind,  # type: ignore[arg-type]
            status=self.status,  # type: ignore[arg-type]
            step=self.step,
            step_name=self.step_name,
            progress=dict(self.progress or {}),
            result=self.result,
            error=self.error,
            request=dict(self.request or {}),
            created_at=self.created_at,
            updated_at=self.updated_at,
        )


class TaskStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._finished: OrderedDict[str, TaskRecord] = OrderedDict()

    async def create_tables(self) -> None:
        await create_tables(self.engine, [TaskRow])

    async def save(self, record: TaskRecord, owner: str | None = None) -> None:
        """Durable first, visible second: a reader never sees a state the store does not hold."""
        record.updated_at = utc_iso()
        unfinished = record.status in UNFINISHED
        row = TaskRow(
            **msgspec.structs.asdict(record),
            owner=owner if unfinished else None,
            heartbeat_at=time.time() if unfinished else None,
        )
        async with AsyncSession(self.engine) as session:
            await session.merge(row)
            await session.commit()
        if not unfinished:
            self._remember(record)

    def _remember(self, record: TaskRecord) -> None:
        self._finished[record.task_id] = record
        self._finished.move_to_end(record.task_id)
        while len(self._finished) > MEMORY_CAPACITY:
            self._finished.popitem(last=False)

    async def get(self, kind: TaskKind, task_id: str) -> TaskRecord:
        cached = self._finished.get(task_id)
        if cached is not None and cached.kind == kind:
            return cached
        if not _TASK_ID.match(task_id):
            raise NotFound(f"task {task_id!r} does not exist")
        async with AsyncSession(self.engine) as session:
            row = await session.get(TaskRow, task_id)
        if row is None or row.kind != kind:
            raise NotFound(f"task {task_id!r} does not exist")
        record = row.record()
        if record.status not in UNFINISHED:
            self._remember(record)
        return record

    async def beat(self, records: list[TaskRecord], owner: str) -> None:
        """Write each running task's progress with a fresh heartbeat: other replicas read both."""
        now, stamp = time.time(), utc_iso()
        async with self.engine.begin() as connection:
            for record in records:
                await connection.execute(
                    update(TaskRow)
                    .where(col(TaskRow.task_id) == record.task_id, col(TaskRow.owner) == owner)
                    .where(col(TaskRow.status).in_(UNFINISHED))
                    .values(
                        step=record.step,
                        step_name=record.step_name,
                        progress=record.progress,
                        updated_at=stamp,
                        heartbeat_at=now,
                    )
                )

    async def fail_unfinished(
        self, reason: str, *, owner: str | None = None, before: float | None = None
    ) -> int:
        """Fail the unfinished tasks of `owner`, or those whose heartbeat is older than `before`, or
        (neither given) all of them."""
        statement = update(TaskRow).where(col(TaskRow.status).in_(UNFINISHED))
        if owner is not None:
            statement = statement.where(col(TaskRow.owner) == owner)
        if before is not None:
            statement = statement.where(
                or_(col(TaskRow.heartbeat_at) < before, col(TaskRow.heartbeat_at).is_(None))
            )
        values = {
            "status": "failed",
            "error": reason,
            "updated_at": utc_iso(),
            "owner": None,
            "heartbeat_at": None,
        }
        async with self.engine.begin() as connection:
            result = await connection.execute(statement.values(**values))
        return int(result.rowcount or 0)

    async def import_files(self, root: Path) -> int:
        """Task records that earlier versions kept as JSON files under `data_dir/tasks/` move into the
        store (the folder is renamed `tasks.imported` afterwards, so nothing is read twice)."""
        if not await asyncio.to_thread(root.is_dir):
            return 0
        imported = 0
        for path in sorted(await asyncio.to_thread(lambda: list(root.glob("*/*.json")))):
            try:
                record = msgspec.json.decode(await asyncio.to_thread(path.read_bytes), type=TaskRecord)
            except (OSError, msgspec.DecodeError, msgspec.ValidationError):
                log.warning("task_record_unreadable", path=str(path))
                continue
            async with AsyncSession(self.engine) as session:
                if await session.get(TaskRow, record.task_id) is None:
                    session.add(TaskRow(**msgspec.structs.asdict(record)))
                    try:
                        await session.commit()
                        imported += 1
                    except IntegrityError:  # another replica imported it at the same moment
                        await session.rollback()
        with contextlib.suppress(FileNotFoundError):  # ...or renamed the folder first
            await asyncio.to_thread(root.rename, root.with_name(f"{root.name}.imported"))
        return imported
