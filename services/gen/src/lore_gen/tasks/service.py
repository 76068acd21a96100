"""gen tasks run in the replica that took them, on the job runner of `lore_common.jobs`: every state
change is written to the relational store, so status (and, within a heartbeat, progress) reads the
same on every replica and survives a restart; no task stays `running` forever.

A task is `pending` → `running` → `completed` | `failed`. A WebSocket client of the replica running
the task gets each progress step as it happens.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import msgspec

from lore_common.jobs import JobRunner
from lore_core.errors import NotFound
from lore_gen.tasks.models import Report, TaskKind, TaskRecord
from lore_gen.tasks.store import TaskStore

INTERRUPTED = "interrupted: the gen service stopped before the task finished"
STALE = "interrupted: the gen replica running it stopped answering"

Listener = Callable[[dict[str, Any]], None]


class TaskService:
    """Submits, reads and recovers gen's tasks, and tells a WebSocket listener each step of one."""

    def __init__(self, store: TaskStore, owner: str, retry_for: float = 0.0) -> None:
        self.store = store
        self.owner = owner
        self.jobs = JobRunner(store, owner, INTERRUPTED, retry_for=retry_for, waiting=self._waiting)
        self._listeners: dict[str, list[Listener]] = {}

    async def get(self, kind: TaskKind, task_id: str, caller: str | None = None) -> TaskRecord:
        """The task; another caller's (when `caller` is named) is not found, as a missing one."""
        live = self.jobs.live.get(task_id)
        record = live if live is not None and live.kind == kind else await self.store.find(kind, task_id)
        if caller is not None and record.caller != caller:
            raise NotFound(f"task {task_id!r} does not exist")
        return record

    async def recover(self, shared: bool) -> int:
        return len(await self.jobs.recover(shared))

    def maintain(
        self, interval: float, stale_after: float, leads: Callable[[], Awaitable[bool]]
    ) -> Coroutine[Any, Any, None]:
        return self.jobs.maintain(interval, stale_after, leads, STALE)

    async def submit(
        self,
        kind: TaskKind,
        body: Callable[[Report], Awaitable[Any]],
        request: dict[str, Any],
        listener: Listener | None = None,
        caller: str | None = None,
    ) -> TaskRecord:
        record = TaskRecord(task_id=str(uuid.uuid4()), kind=kind, request=request, caller=caller)
        if listener is not None:
            self._listeners.setdefault(record.task_id, []).append(listener)

        async def run(current: TaskRecord) -> TaskRecord:
            async def report(step: int, name: str, **extra: Any) -> None:
                # The live record is `current`: status here reads it at once, other replicas after
                # the next heartbeat writes it.
                current.step, current.step_name, current.progress = step, name, extra
                self._emit(record.task_id, {"type": "progress", "step": step, "name": name, **extra})

            result = await body(report)
            return msgspec.structs.replace(current, result=result, progress={})

        def finished(last: TaskRecord) -> None:
            if last.status == "completed":
                self._emit(record.task_id, {"type": "result", "data": last.result})
            else:
                self._emit(record.task_id, {"type": "error", "message": last.error, "task_id": last.task_id})
            self._listeners.pop(record.task_id, None)

        return await self.jobs.submit(record, run, finished)

    async def complete_now(
        self, kind: TaskKind, result: Any, request: dict[str, Any], caller: str | None = None
    ) -> TaskRecord:
        """Record a task whose work was done inside the request (the spreadsheet tree)."""
        record = TaskRecord(
            task_id=str(uuid.uuid4()), kind=kind, status="completed", result=result, caller=caller
        )
        record.request = request
        await self.store.save(record)
        return record

    def _waiting(self, record: TaskRecord, reason: str) -> TaskRecord:
        """While an outage holds the task: step `waiting`, the reason in its progress (it runs again)."""
        event = {"type": "progress", "step": record.step, "name": "waiting", "waiting_for": reason}
        self._emit(record.task_id, event)
        return msgspec.structs.replace(record, step_name="waiting", progress={"waiting_for": reason})

    def _emit(self, task_id: str, event: dict[str, Any]) -> None:
        for listener in self._listeners.get(task_id, []):
            listener(event)

    def detach(self, task_id: str, listener: Listener) -> None:
        listeners = self._listeners.get(task_id)
        if listeners and listener in listeners:
            listeners.remove(listener)

    async def shutdown(self) -> None:
        await self.jobs.shutdown()
