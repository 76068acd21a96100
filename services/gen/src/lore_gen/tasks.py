"""In-process gen tasks whose every state change is written to disk, so status survives a restart.

A task is `pending` → `running` → `completed` | `failed`. Each change rewrites `<kind>/<task_id>.json`
atomically (temp file + rename). Recent tasks are also kept in memory; older ones are read back from
disk on demand (the tag-tree status contract: memory first, then the on-disk result). A task left
`pending` or `running` by a process that died becomes `failed` at the next start-up, never stuck.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

import msgspec
import structlog

from lore_common.providers.chat import ModelError
from lore_core.clock import utc_iso
from lore_core.errors import LoreError, NotFound

log = structlog.get_logger("lore.gen.tasks")

Status = Literal["pending", "running", "completed", "failed"]
TaskKind = Literal["table", "tag_tree"]
MEMORY_CAPACITY = 1000
_TASK_ID = re.compile(r"^[A-Za-z0-9\-]{1,64}$")

# A task body reports progress with `report(step, name, **extra)`.
Report = Callable[..., Awaitable[None]]


class TaskRecord(msgspec.Struct, kw_only=True):
    task_id: str
    kind: TaskKind
    status: Status = "pending"
    step: int = 0
    step_name: str | None = None
    progress: dict[str, Any] = msgspec.field(default_factory=dict)
    result: Any = None
    error: str | None = None
    request: dict[str, Any] = msgspec.field(default_factory=dict)
    created_at: str = msgspec.field(default_factory=lambda: utc_iso())
    updated_at: str = msgspec.field(default_factory=lambda: utc_iso())

    def public(self) -> dict[str, Any]:
        """The status body: `{task_id, status, result}`, plus `error` when failed and `step` while running."""
        body: dict[str, Any] = {"task_id": self.task_id, "status": self.status, "result": self.result}
        if self.status == "failed":
            body["error"] = self.error
        if self.status in ("pending", "running"):
            body["step"] = self.step
            body["step_name"] = self.step_name
            body["progress"] = self.progress
        body["created_at"] = self.created_at
        body["updated_at"] = self.updated_at
        return body


class TaskFailure(Exception):
    """A task failed for a reason the user should read as is (no exception class name prefixed)."""


class TaskStore:
    """Task records on disk under `root/<kind>/`, with the most recent ones cached in memory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._memory: OrderedDict[str, TaskRecord] = OrderedDict()

    def _path(self, kind: TaskKind, task_id: str) -> Path:
        return self.root / kind / f"{task_id}.json"

    def _write(self, record: TaskRecord) -> None:
        path = self._path(record.kind, record.task_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_suffix(f".{uuid.uuid4().hex}.tmp")
        with open(temp, "wb") as handle:
            handle.write(msgspec.json.encode(record))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)

    async def save(self, record: TaskRecord) -> None:
        """Durable first, visible second: a reader never sees a state the disk does not hold."""
        record.updated_at = utc_iso()
        await asyncio.to_thread(self._write, record)
        self._remember(record)

    def _remember(self, record: TaskRecord) -> None:
        self._memory[record.task_id] = record
        self._memory.move_to_end(record.task_id)
        while len(self._memory) > MEMORY_CAPACITY:
            self._memory.popitem(last=False)

    async def get(self, kind: TaskKind, task_id: str) -> TaskRecord:
        record = self._memory.get(task_id)
        if record is not None and record.kind == kind:
            return record
        if not _TASK_ID.match(task_id):
            raise NotFound(f"task {task_id!r} does not exist")
        path = self._path(kind, task_id)
        try:
            raw = await asyncio.to_thread(path.read_bytes)
        except FileNotFoundError:
            raise NotFound(f"task {task_id!r} does not exist") from None
        return msgspec.json.decode(raw, type=TaskRecord)

    def recover(self) -> int:
        """Mark tasks a dead process left unfinished as failed; drop temp files of interrupted writes."""
        failed = 0
        for kind in ("table", "tag_tree"):
            folder = self.root / kind
            if not folder.is_dir():
                continue
            for temp in folder.glob("*.tmp"):
                temp.unlink(missing_ok=True)
            for path in folder.glob("*.json"):
                try:
                    record = msgspec.json.decode(path.read_bytes(), type=TaskRecord)
                except (OSError, msgspec.DecodeError, msgspec.ValidationError):
                    log.warning("task_record_unreadable", path=str(path))
                    continue
                if record.status in ("pending", "running"):
                    record.status = "failed"
                    record.error = "interrupted: the gen service stopped before the task finished"
                    record.updated_at = utc_iso()
                    self._write(record)
                    failed += 1
        return failed


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
