"""Task records on disk, one JSON file each, written atomically; recent ones cached in memory."""

from __future__ import annotations

import asyncio
import re
from collections import OrderedDict
from pathlib import Path

import msgspec
import structlog

from lore_core.clock import utc_iso
from lore_core.errors import NotFound
from lore_core.files import write_atomic
from lore_gen.tasks.models import TaskKind, TaskRecord

log = structlog.get_logger("lore.gen.tasks")

MEMORY_CAPACITY = 1000
_TASK_ID = re.compile(r"^[A-Za-z0-9\-]{1,64}$")


class TaskStore:
    """Task records on disk under `root/<kind>/`, with the most recent ones cached in memory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._memory: OrderedDict[str, TaskRecord] = OrderedDict()

    def _path(self, kind: TaskKind, task_id: str) -> Path:
        return self.root / kind / f"{task_id}.json"

    def _write(self, record: TaskRecord) -> None:
        write_atomic(self._path(record.kind, record.task_id), msgspec.json.encode(record))

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
