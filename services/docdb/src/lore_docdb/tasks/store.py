"""Task table access: the only place that speaks SQL about tasks.

Claims are safe with several docdb replicas: on PostgreSQL the pending row is locked with
`FOR UPDATE SKIP LOCKED`; on SQLite writers are serialised and the claim is a conditional update."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from lore_core.clock import utcnow
from lore_docdb.tasks.models import ACTIVE_STATES, TaskRow


class TaskStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.postgres = engine.dialect.name == "postgresql"

    def session(self) -> AsyncSession:
        return AsyncSession(self.engine, expire_on_commit=False)

    async def add(self, task: TaskRow) -> None:
        async with self.session() as session:
            session.add(task)
            await session.commit()

    async def get(self, task_id: str) -> TaskRow | None:
        async with self.session() as session:
            return await session.get(TaskRow, task_id)

    async def list_tasks(self, status: str | None, limit: int) -> Sequence[TaskRow]:
        async with self.session() as session:
            query = select(TaskRow).order_by(col(TaskRow.created_at).desc()).limit(limit)
            if status is not None:
                query = query.where(TaskRow.status == status)
            return list((await session.exec(query)).all())

    async def active_for_dataset(self, dataset: str, kb: str | None = None) -> list[TaskRow]:
        """Tasks that are still pending, running or cancelling for this dataset (in one KB, or any)."""
        async with self.session() as session:
            query = select(TaskRow).where(TaskRow.dataset == dataset, col(TaskRow.status).in_(ACTIVE_STATES))
            if kb is not None:
                query = query.where(TaskRow.kb_name == kb)
            return list((await session.exec(query)).all())

    async def active_for_kb(self, kb: str) -> list[TaskRow]:
        async with self.session() as session:
            query = select(TaskRow).where(TaskRow.kb_name == kb, col(TaskRow.status).in_(ACTIVE_STATES))
            return list((await session.exec(query)).all())

    async def claim_next(self) -> TaskRow | None:
        """Move the oldest pending task to running and return it; None when there is none."""
        async with self.session() as session:
            query = (
                select(TaskRow).where(TaskRow.status == "pending").order_by(col(TaskRow.created_at)).limit(1)
            )
            if self.postgres:
                query = query.with_for_update(skip_locked=True)
            task = (await session.exec(query)).first()
            if task is None:
                return None
            now = utcnow()
            result = await session.exec(
                update(TaskRow)
                .where(col(TaskRow.task_id) == task.task_id, col(TaskRow.status) == "pending")
                .values(status="running", stage="extract", updated_at=now, heartbeat_at=now)
            )
            await session.commit()
            if result.rowcount != 1:
                return None
            task.status, task.stage, task.updated_at, task.heartbeat_at = "running", "extract", now, now
            return task

    async def transition(
        self,
        task_id: str,
        to: str,
        *,
        when: Sequence[str],
        error: str | None = None,
        stage: str | None = None,
    ) -> bool:
        """Set `to` only if the task is in one of the `when` states (the state machine of contract 3.1)."""
        values: dict[str, object] = {"status": to, "updated_at": utcnow()}
        if error is not None:
            values["error"] = error[:4000]
        if stage is not None:
            values["stage"] = stage
        async with self.session() as session:
            result = await session.exec(
                update(TaskRow)
                .where(col(TaskRow.task_id) == task_id, col(TaskRow.status).in_(list(when)))
                .values(**values)
            )
            await session.commit()
            return bool(result.rowcount == 1)

    async def touch(self, task_ids: Sequence[str], stage: dict[str, str] | None = None) -> None:
        """Heartbeat of running tasks: proves their process is alive."""
        if not task_ids:
            return
        now = utcnow()
        async with self.session() as session:
            await session.exec(
                update(TaskRow).where(col(TaskRow.task_id).in_(list(task_ids))).values(heartbeat_at=now)
            )
            for task_id, name in (stage or {}).items():
                await session.exec(
                    update(TaskRow).where(col(TaskRow.task_id) == task_id).values(stage=name, updated_at=now)
                )
            await session.commit()

    async def set_skipped(self, task_id: str, skipped_json: str) -> None:
        async with self.session() as session:
            await session.exec(
                update(TaskRow).where(col(TaskRow.task_id) == task_id).values(skipped_files=skipped_json)
            )
            await session.commit()

    async def stale(self, older_than: timedelta) -> list[TaskRow]:
        """Running or cancelling tasks whose process stopped sending heartbeats."""
        cutoff: datetime = utcnow() - older_than
        async with self.session() as session:
            query = select(TaskRow).where(
                col(TaskRow.status).in_(("running", "cancelling")),
                (col(TaskRow.heartbeat_at) < cutoff) | (col(TaskRow.heartbeat_at).is_(None)),
            )
            return list((await session.exec(query)).all())
