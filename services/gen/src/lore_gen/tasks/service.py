"""In-process gen tasks whose every state change is written to disk, so status survives a restart.

A task is `pending` → `running` → `completed` | `failed`. Each change rewrites `<kind>/<task_id>.json`
atomically (temp file + rename). Recent tasks are also kept in memory; older ones are read back from
disk on demand (the tag-tree status contract: memory first, then the on-disk result). A task left
`pending` or `running` by a process that died becomes `failed` at the next start-up, never stuck.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import structlog

from lore_common.providers.chat import ModelError
from lore_core.clock import utc_iso
from lore_core.errors import LoreError
from lore_gen.tasks.models import Report, TaskFailure, TaskKind, TaskRecord
from lore_gen.tasks.store import TaskStore

log = structlog.get_logger("lore.gen.tasks")


class TaskRunner:
    """Runs task bodies as asyncio tasks and records every state change."""

    def __init__(self, store: TaskStore) -> None:
        self.store = store
        self._running: dict[str, asyncio.Task[None]] = {}
        self._listeners: dict[str, list[Callable[[dict[str, Any]], None]]] = {}

    async def submit(
        self,
        kind: TaskKind,
        body: Callable[[Report], Awaitable[Any]],
        request: dict[str, Any],
        listener: Callable[[dict[str, Any]], None] | None = None,
    ) -> TaskRecord:
        record = TaskRecord(task_id=str(uuid.uuid4()), kind=kind, request=request)
        await self.store.save(record)
        if listener is not None:
            self._listeners.setdefault(record.task_id, []).append(listener)
        self._running[record.task_id] = asyncio.create_task(self._run(record, body))
        return record

    async def complete_now(self, kind: TaskKind, result: Any, request: dict[str, Any]) -> TaskRecord:
        """Record a task whose work was done inside the request (the spreadsheet tree)."""
        record = TaskRecord(task_id=str(uuid.uuid4()), kind=kind, status="completed", result=result)
        record.request = request
        await self.store.save(record)
        return record

    def _emit(self, task_id: str, event: dict[str, Any]) -> None:
        for listener in self._listeners.get(task_id, []):
            listener(event)

    async def _run(self, record: TaskRecord, body: Callable[[Report], Awaitable[Any]]) -> None:
        current = record

        async def report(step: int, name: str, **extra: Any) -> None:
            # Progress lives in memory: status reads it there, and after a crash the task is failed
            # anyway. Only state changes are written (and fsynced) to disk.
            current.step, current.step_name, current.progress = step, name, extra
            current.updated_at = utc_iso()
            self._emit(record.task_id, {"type": "progress", "step": step, "name": name, **extra})

        def moved(**changes: Any) -> TaskRecord:
            return msgspec.structs.replace(current, **changes)

        try:
            current = moved(status="running")
            await self.store.save(current)
            result = await body(report)
            await self.store.save(moved(status="completed", result=result, progress={}))
            self._emit(record.task_id, {"type": "result", "data": result})
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                self.store._write(moved(status="failed", error="interrupted: the gen service stopped"))
            raise
        except Exception as exc:
            message = (
                str(exc)
                if isinstance(exc, (TaskFailure, ModelError, LoreError))
                else f"{type(exc).__name__}: {exc}"
            )
            log.warning("task_failed", task_id=record.task_id, kind=record.kind, error=message)
            await self.store.save(moved(status="failed", error=message))
            self._emit(record.task_id, {"type": "error", "message": message, "task_id": record.task_id})
        finally:
            self._running.pop(record.task_id, None)
            self._listeners.pop(record.task_id, None)

    def detach(self, task_id: str, listener: Callable[[dict[str, Any]], None]) -> None:
        listeners = self._listeners.get(task_id)
        if listeners and listener in listeners:
            listeners.remove(listener)

    async def shutdown(self) -> None:
        tasks = list(self._running.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
