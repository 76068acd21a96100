"""A gen task as it is stored and reported: table pipelines and tag trees alike."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

import msgspec

from lore_common.jobs import JobFailure
from lore_core.clock import utc_iso

Status = Literal["pending", "running", "completed", "failed"]
TaskKind = Literal["table", "tag_tree"]

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
    created_at: str = msgspec.field(default_factory=utc_iso)
    updated_at: str = msgspec.field(default_factory=utc_iso)

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


class TaskFailure(JobFailure):
    """A task failed for a reason the user should read as is (no exception class name prefixed)."""
