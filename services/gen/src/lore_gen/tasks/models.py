"""A gen task as it is stored and reported: table pipelines and tag trees alike."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from lore_common.jobs import JobFailure
from lore_common.providers.usage import UsageReport
from lore_core.clock import utc_iso

Status = Literal["pending", "running", "completed", "failed"]
TaskKind = Literal["table", "tag_tree"]

# A task body reports progress with `report(step, name, **extra)`.
Report = Callable[..., Awaitable[None]]


class Checkpoint:
    """What a running task keeps as it goes (a table's design, its SQL), written with the task at once:
    the run after its process died starts from there rather than asking the model again."""

    def __init__(self, saved: dict[str, Any], store: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        self.saved = dict(saved)
        self._store = store

    def get(self, key: str) -> Any:
        return self.saved.get(key)

    async def put(self, key: str, value: Any) -> None:
        self.saved[key] = value
        await self._store(dict(self.saved))


# A task's work: given its progress reporter and its checkpoint, it returns the task's result.
Body = Callable[[Report, Checkpoint], Awaitable[Any]]


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
    # The API key that started it (lore_core.internal.CALLER_HEADER; None: not told): a call naming
    # another caller does not see it.
    caller: str | None = None
    # Not shown: what the task stored as it went (Checkpoint) and how many times it ran again after
    # its process died.
    checkpoint: dict[str, Any] = msgspec.field(default_factory=dict)
    resumed: int = 0
    created_at: str = msgspec.field(default_factory=utc_iso)
    updated_at: str = msgspec.field(default_factory=utc_iso)

    def accepted(self) -> TaskAccepted:
        return TaskAccepted(task_id=self.task_id, status=self.status)

    def public(self) -> TaskStatus:
        """The status body: `{task_id, status, result}`, plus `error` when failed and `step` while running."""
        status = TaskStatus(
            task_id=self.task_id,
            status=self.status,
            result=self.result,
            created_at=self.created_at,
            updated_at=self.updated_at,
        )
        if self.status == "failed":
            status.error = self.error
        if self.status in ("pending", "running"):
            status.step, status.step_name = self.step, self.step_name
            status.progress = msgspec.convert(self.progress, TaskProgress)
        return status


class TaskProgress(msgspec.Struct, kw_only=True, omit_defaults=True):
    """How far a running task is: rows `done` of `total` (a table's step 2), or what it is `waiting_for`
    (a store or model outage it will retry after); empty in the other steps."""

    done: int | UnsetType = UNSET
    total: int | UnsetType = UNSET
    waiting_for: str | UnsetType = UNSET
    # Model calls, tokens, cost, cache hits and rows whose model call failed for good (with why).
    usage: UsageReport | UnsetType = UNSET


class TaskAccepted(msgspec.Struct, kw_only=True):
    """The answer to a submit: the task's id and its first status."""

    task_id: str
    status: Status


class TaskStatus(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A task's status as the status routes report it; the unset fields are left out of the JSON.

    `result` is the task's result as stored (a table or a tag tree, see docs/gen.md), null until it
    completes; records imported from earlier versions keep the shape they were written with.
    """

    task_id: str
    status: Status
    result: Any
    error: str | UnsetType | None = UNSET  # only when failed
    step: int | UnsetType = UNSET  # this and the next two only while pending or running
    step_name: str | UnsetType | None = UNSET
    progress: TaskProgress | UnsetType = UNSET
    created_at: str
    updated_at: str


class TaskFailure(JobFailure):
    """A task failed for a reason the user should read as is (no exception class name prefixed)."""
