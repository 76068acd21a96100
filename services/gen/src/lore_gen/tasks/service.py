"""gen tasks run in the replica that took them, on the job runner of `lore_common.jobs`: every state
change is written to the relational store, so status (and, within a heartbeat, progress) reads the
same on every replica and survives a restart; no task stays `running` forever.

A task is `pending` → `running` → `completed` | `failed`. A WebSocket client of the replica running
the task gets each progress step as it happens.

A task whose process died (or stopped) runs again when that replica starts, if its kind can be resumed
(`resumable`) and `resume_interrupted` is on: its body gets the checkpoint it stored before, so it goes
on from its last stored step. One interrupted more than `resume_attempts` times fails saying so.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import msgspec
import structlog

from lore_common.jobs import JobRunner
from lore_core.errors import NotFound
from lore_gen.tasks.models import Body, Checkpoint, TaskKind, TaskRecord
from lore_gen.tasks.store import LIFECYCLE, TaskStore

log = structlog.get_logger("lore.gen.tasks")

INTERRUPTED = "interrupted: the gen service stopped before the task finished"
STALE = "interrupted: the gen replica running it stopped answering"
# A task whose replica died too often while running it (it may be what stops the process).
INTERRUPTED_AGAIN = (
    "interrupted {times} times: the gen service stopped each time while running this task (the task "
    "may be what stops it); submit it again"
)

Listener = Callable[[dict[str, Any]], None]
# Rebuilds the body of an interrupted task from its record (its request); raises ValueError, with the
# reason, when it cannot.
Resumer = Callable[[TaskRecord], Body]


class TaskService:
    """Submits, reads and recovers gen's tasks, and tells a WebSocket listener each step of one."""

    def __init__(
        self,
        store: TaskStore,
        owner: str,
        retry_for: float = 0.0,
        *,
        resume_interrupted: bool = False,
        resume_attempts: int = 3,
    ) -> None:
        self.store = store
        self.owner = owner
        self.resume_interrupted = resume_interrupted
        self.resume_attempts = resume_attempts
        self.jobs = JobRunner(
            store,
            owner,
            INTERRUPTED,
            retry_for=retry_for,
            waiting=self._waiting,
            leave_on_shutdown=resume_interrupted,  # the next start resumes it (or fails it)
        )
        self._listeners: dict[str, list[Listener]] = {}
        self._resumers: dict[TaskKind, Resumer] = {}

    def resumable(self, kind: TaskKind, resumer: Resumer) -> None:
        """Tasks of `kind` cut off by the process stopping run again at its next start, through
        `resumer`; the others fail as interrupted."""
        self._resumers[kind] = resumer

    async def get(self, kind: TaskKind, task_id: str, caller: str | None = None) -> TaskRecord:
        """The task; another caller's (when `caller` is named) is not found, as a missing one."""
        live = self.jobs.live.get(task_id)
        record = live if live is not None and live.kind == kind else await self.store.find(kind, task_id)
        if caller is not None and record.caller != caller:
            raise NotFound(f"task {task_id!r} does not exist")
        return record

    async def recover(self, shared: bool) -> tuple[int, int]:
        """At start-up, before new work: run again the tasks this replica left unfinished (on SQLite,
        every unfinished one) or fail those that cannot or should not run again. Returns how many of
        each."""
        left = await self.store.list_jobs(
            statuses=LIFECYCLE.unfinished, owner=self.owner if shared else None, newest_first=False
        )
        resumed = failed = 0
        for record in left:
            body, reason = self._resumption(record)
            if body is None:
                # Conditional, as every change here: the leading replica may have failed it meanwhile.
                done = await self.store.transition(
                    record.task_id,
                    LIFECYCLE.failed,
                    when=LIFECYCLE.unfinished,
                    change=_failing(reason),
                )
                failed += done is not None
                log.warning("task_interrupted", task_id=record.task_id, error=reason)
                continue
            again = await self.store.transition(
                record.task_id,
                LIFECYCLE.submitted,
                when=LIFECYCLE.unfinished,
                change=lambda r: msgspec.structs.replace(r, error=None, resumed=r.resumed + 1),
            )
            if again is not None:
                log.warning("task_resumed", task_id=record.task_id, times=again.resumed)
                await self._start(again, body)
                resumed += 1
        return resumed, failed

    def _resumption(self, record: TaskRecord) -> tuple[Body | None, str]:
        """The body that runs an interrupted task again, or None and why it fails instead."""
        resumer = self._resumers.get(record.kind)
        if not self.resume_interrupted or resumer is None:
            return None, INTERRUPTED
        if record.resumed >= self.resume_attempts:
            return None, INTERRUPTED_AGAIN.format(times=record.resumed + 1)
        try:
            return resumer(record), ""
        except ValueError as exc:
            return None, f"{INTERRUPTED} ({exc})"

    def maintain(
        self, interval: float, stale_after: float, leads: Callable[[], Awaitable[bool]]
    ) -> Coroutine[Any, Any, None]:
        return self.jobs.maintain(interval, stale_after, leads, STALE)

    async def submit(
        self,
        kind: TaskKind,
        body: Body,
        request: dict[str, Any],
        listener: Listener | None = None,
        caller: str | None = None,
    ) -> TaskRecord:
        record = TaskRecord(task_id=str(uuid.uuid4()), kind=kind, request=request, caller=caller)
        if listener is not None:
            self._listeners.setdefault(record.task_id, []).append(listener)
        return await self._start(record, body)

    async def _start(self, record: TaskRecord, body: Body) -> TaskRecord:
        async def run(current: TaskRecord) -> TaskRecord:
            async def report(step: int, name: str, **extra: Any) -> None:
                # The live record is `current`: status here reads it at once, other replicas after
                # the next heartbeat writes it.
                current.step, current.step_name, current.progress = step, name, extra
                self._emit(record.task_id, {"type": "progress", "step": step, "name": name, **extra})

            async def store(saved: dict[str, Any]) -> None:
                current.checkpoint = saved
                await self.jobs.save(current)  # now: a checkpoint is worth what it saves on a restart

            result = await body(report, Checkpoint(current.checkpoint, store))
            return msgspec.structs.replace(current, result=result, progress={}, checkpoint={})

        async def finished(last: TaskRecord) -> None:
            if last.status in LIFECYCLE.unfinished:  # left by a stop, for the next start
                if last.kind in self._resumers:
                    self._listeners.pop(record.task_id, None)
                    return
                # A kind that is not resumed fails now, as before resuming was on.
                last = msgspec.structs.replace(last, status=LIFECYCLE.failed, error=INTERRUPTED)
                with contextlib.suppress(Exception):
                    await asyncio.shield(self.store.save(last))
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


def _failing(reason: str) -> Callable[[TaskRecord], TaskRecord]:
    return lambda record: msgspec.structs.replace(record, error=reason)
