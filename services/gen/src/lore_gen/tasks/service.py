"""gen tasks run in the replica that took them; every state change is written to the relational
store, so status (and, within a heartbeat, progress) reads the same on every replica and survives a
restart.

A task is `pending` → `running` → `completed` | `failed`. While it runs, its replica writes its progress
with a heartbeat every `task_heartbeat_interval` seconds. A replica that restarts fails the tasks it
left; one replica (the leader) fails the tasks of replicas whose heartbeat is older than
`task_stale_after`. On SQLite one process owns the store, so at start-up every unfinished task is
failed at once. No task stays `running` forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
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


INTERRUPTED = "interrupted: the gen service stopped before the task finished"


class TaskRunner:
    """Runs task bodies as asyncio tasks and records every state change."""

    def __init__(self, store: TaskStore, owner: str) -> None:
        self.store = store
        self.owner = owner
        self._running: dict[str, asyncio.Task[None]] = {}
        # The live record of each task running here (progress is written from it on each beat).
        self._live: dict[str, TaskRecord] = {}
        self._listeners: dict[str, list[Callable[[dict[str, Any]], None]]] = {}

    async def get(self, kind: TaskKind, task_id: str) -> TaskRecord:
        live = self._live.get(task_id)
        if live is not None and live.kind == kind:
            return live
        return await self.store.get(kind, task_id)

    async def recover(self, shared: bool) -> int:
        """At start-up: fail what this replica left unfinished (on SQLite, everything unfinished)."""
        return await self.store.fail_unfinished(INTERRUPTED, owner=self.owner if shared else None)

    async def maintain(
        self, interval: float, stale_after: float, leads: Callable[[], Awaitable[bool]]
    ) -> None:
        """Beat for the tasks running here; when leading, fail those whose replica went silent."""
        while True:
            await asyncio.sleep(interval)
            try:
                if self._live:
                    await self.store.beat(list(self._live.values()), self.owner)
                if await leads():
                    failed = await self.store.fail_unfinished(
                        "interrupted: the gen replica running it stopped answering",
                        before=time.time() - stale_after,
                    )
                    if failed:
                        log.warning("stale_tasks_failed", count=failed)
            except Exception as exc:
                log.warning("task_maintenance_failed", error=f"{type(exc).__name__}: {exc}")

    async def submit(
        self,
        kind: TaskKind,
        body: Callable[[Report], Awaitable[Any]],
        request: dict[str, Any],
        listener: Callable[[dict[str, Any]], None] | None = None,
    ) -> TaskRecord:
        record = TaskRecord(task_id=str(uuid.uuid4()), kind=kind, request=request)
        await self.store.save(record, self.owner)
        self._live[record.task_id] = record
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
            # Progress lives in the live record: status here reads it at once, other replicas after
            # the next heartbeat writes it. State changes are written as they happen.
            current.step, current.step_name, current.progress = step, name, extra
            current.updated_at = utc_iso()
            self._emit(record.task_id, {"type": "progress", "step": step, "name": name, **extra})

        def moved(**changes: Any) -> TaskRecord:
            return msgspec.structs.replace(current, **changes)

        try:
            current = moved(status="running")
            await self.store.save(current, self.owner)
            self._live[record.task_id] = current
            result = await body(report)
            await self.store.save(moved(status="completed", result=result, progress={}))
            self._emit(record.task_id, {"type": "result", "data": result})
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await asyncio.shield(self.store.save(moved(status="failed", error=INTERRUPTED)))
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
            self._live.pop(record.task_id, None)
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
