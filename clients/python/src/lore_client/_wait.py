"""Waiting for background work: parse tasks, tables, tag trees and `kb` memory inserts, with progress."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Literal, TypeVar

from lore_client._docdb import Docdb
from lore_client._gen import Gen
from lore_client._mem import Mem
from lore_client.errors import TaskFailed
from lore_client.models import (
    PARSE_STAGES,
    InsertJob,
    ParseTaskRef,
    TableTask,
    Task,
    TaskProgress,
    TreeTask,
)

S = TypeVar("S", Task, TableTask, TreeTask, InsertJob)
ProgressCallback = Callable[[TaskProgress], None]
Kind = Literal["parse", "table", "tree", "kb_insert"]
TABLE_STEPS = 4


class Waiter(Docdb, Gen, Mem):
    async def wait(
        self,
        task: str | Task | ParseTaskRef,
        *,
        timeout: float | None = None,
        interval: float = 0.5,
        on_progress: ProgressCallback | None = None,
    ) -> Task:
        """Wait for a parse task to end; returns it `completed` (files it skipped are in
        `skipped_files`). Raises TaskFailed when it fails or is cancelled, TimeoutError after
        `timeout` seconds (the task goes on)."""
        task_id = task if isinstance(task, str) else task.task_id
        return await _poll("parse", task_id, self.get_task, timeout, interval, on_progress)

    async def wait_table(
        self,
        task: str | TableTask,
        *,
        timeout: float | None = None,
        interval: float = 0.5,
        on_progress: ProgressCallback | None = None,
    ) -> TableTask:
        """Wait for a table; returns it `completed` with its `result`."""
        task_id = task if isinstance(task, str) else task.task_id
        return await _poll("table", task_id, self.table_status, timeout, interval, on_progress)

    async def wait_tree(
        self,
        task: str | TreeTask,
        *,
        timeout: float | None = None,
        interval: float = 0.5,
        on_progress: ProgressCallback | None = None,
    ) -> TreeTask:
        """Wait for a tag tree; returns it `completed` with its `result`."""
        task_id = task if isinstance(task, str) else task.task_id
        return await _poll("tree", task_id, self.tree_status, timeout, interval, on_progress)

    async def wait_insert(
        self,
        job: str | InsertJob,
        *,
        timeout: float | None = None,
        interval: float = 0.5,
        on_progress: ProgressCallback | None = None,
    ) -> InsertJob:
        """Wait for a `kb` memory insert; returns it `done` (then it is queryable). A job id alone is
        followed in the default workspace (or the one the API key is given)."""
        job_id, workspace = (job, None) if isinstance(job, str) else (job.id, job.workspace)
        status = partial(self.kb_insert_status, workspace=workspace)
        return await _poll("kb_insert", job_id, status, timeout, interval, on_progress)


def progress_of(kind: Kind, state: Task | TableTask | TreeTask | InsertJob) -> TaskProgress:
    if isinstance(state, Task):
        stage = state.stage
        step = PARSE_STAGES.index(stage) + 1 if stage in PARSE_STAGES else None
        return TaskProgress(
            kind=kind,
            task_id=state.task_id,
            status=state.status,
            stage=stage,
            step=step,
            steps=len(PARSE_STAGES),
        )
    if isinstance(state, TableTask):
        progress = state.progress or {}
        return TaskProgress(
            kind=kind,
            task_id=state.task_id,
            status=state.status,
            stage=state.step_name,
            step=state.step,
            steps=TABLE_STEPS,
            done=progress.get("done"),
            total=progress.get("total"),
        )
    if isinstance(state, TreeTask):
        return TaskProgress(kind=kind, task_id=state.task_id, status=state.status)
    return TaskProgress(kind=kind, task_id=state.id, status=state.status)


async def _poll(
    kind: Kind,
    task_id: str,
    fetch: Callable[[str], Awaitable[S]],
    timeout: float | None,
    interval: float,
    on_progress: ProgressCallback | None,
) -> S:
    last: TaskProgress | None = None
    async with asyncio.timeout(timeout):
        while True:
            state = await fetch(task_id)
            progress = progress_of(kind, state)
            if on_progress is not None and progress != last:
                on_progress(progress)
            last = progress
            if state.status in ("failed", "cancelled"):
                error = getattr(state, "error", None)
                raise TaskFailed(
                    f"{kind} task {task_id} {state.status}" + (f": {error}" if error else ""), state
                )
            if state.status in ("completed", "done"):
                return state
            await asyncio.sleep(interval)
