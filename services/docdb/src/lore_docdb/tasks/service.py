"""Processing tasks: the state machine of contract 3.1, the workers that run parses, and recovery.

`parse_max_workers` workers claim pending tasks. A running task sends heartbeats; a task whose process
died (no heartbeat for `task_stale_after` seconds, or any running task found at start-up on SQLite,
where one process owns the store) is rolled back and marked failed ("interrupted"), never left running.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from datetime import timedelta

import structlog

from lore_core.clock import utcnow
from lore_core.errors import BadRequest, NotFound
from lore_core.settings import Settings
from lore_docdb.datasets.store import RawStore
from lore_docdb.index.store import IndexStore
from lore_docdb.parsing.pipeline import Cancelled, ParseContext, ParsePipeline, skipped_json
from lore_docdb.tasks.models import ACTIVE_STATES, TERMINAL_STATES, TaskRow
from lore_docdb.tasks.store import TaskStore

log = structlog.get_logger("lore.docdb.tasks")
INTERRUPTED = "interrupted: the docdb process stopped while this task was running; parse again to retry"
IDLE_POLL_S = 1.0


class TaskNotFound(NotFound):
    def __init__(self, task_id: str) -> None:
        super().__init__(f"task {task_id!r} does not exist")


class TaskService:
    def __init__(
        self,
        store: TaskStore,
        index: IndexStore,
        pipeline: ParsePipeline,
        raw: RawStore,
        settings: Settings,
        leads: Callable[[], Awaitable[bool]] | None = None,
    ) -> None:
        self.store = store
        # Whether this replica runs the shared sweeps (stale-task recovery); see stores.sql.Leadership.
        self.leads = leads
        self.index = index
        self.pipeline = pipeline
        self.raw = raw
        self.settings = settings
        self.wakeup = asyncio.Event()
        self.cancel_requested: set[str] = set()
        self.running: dict[str, str] = {}  # task id → stage, for heartbeats
        self._workers: list[asyncio.Task[None]] = []

    # ------------------------------------------------------------ queries and commands

    async def get(self, task_id: str) -> TaskRow:
        task = await self.store.get(task_id)
        if task is None:
            raise TaskNotFound(task_id)
        return task

    async def list_tasks(self, status: str | None, limit: int) -> list[TaskRow]:
        return list(await self.store.list_tasks(status, limit))

    async def cancel(self, task_id: str) -> str:
        """pending → cancelled at once; running → cancelling (the pipeline rolls back); terminal → 400."""
        task = await self.get(task_id)
        if task.status in TERMINAL_STATES:
            raise BadRequest(
                f"task {task_id} is already {task.status}; only pending or running tasks can be cancelled"
            )
        if task.status == "pending" and await self.store.transition(task_id, "cancelled", when=["pending"]):
            return "cancelled"
        self.cancel_requested.add(task_id)
        if await self.store.transition(task_id, "cancelling", when=["running", "cancelling"]):
            return "cancelling"
        return (await self.get(task_id)).status  # it finished in between

    def notify(self) -> None:
        self.wakeup.set()

    # ------------------------------------------------------------ workers

    async def start(self) -> None:
        workers = max(1, self.settings.parse_max_workers)
        self._workers = [
            asyncio.create_task(self._worker(i), name=f"parse-worker-{i}") for i in range(workers)
        ]
        self._workers.append(asyncio.create_task(self._heartbeat(), name="parse-heartbeat"))

    async def stop(self) -> None:
        for worker in self._workers:
            worker.cancel()
        for worker in self._workers:
            with contextlib.suppress(asyncio.CancelledError):
                await worker
        self._workers = []

    async def _worker(self, number: int) -> None:
        while True:
            task = await self.store.claim_next()
            if task is None:
                self.wakeup.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wakeup.wait(), IDLE_POLL_S)
                continue
            log.info("task_claimed", task_id=task.task_id, dataset=task.dataset, worker=number)
            await self.run(task)

    async def _heartbeat(self) -> None:
        interval = max(0.2, self.settings.docdb.task_heartbeat_interval)
        while True:
            await asyncio.sleep(interval)
            try:
                await self.store.touch(list(self.running), dict(self.running))
                if self.leads is None or await self.leads():
                    await self.recover_stale(timedelta(seconds=self.settings.docdb.task_stale_after))
            except Exception as exc:  # the next beat tries again
                log.warning("heartbeat_failed", error=str(exc))

    async def run(self, task: TaskRow) -> None:
        task_id = task.task_id
        self.running[task_id] = "extract"
        structlog.contextvars.bind_contextvars(task_id=task_id)
        last_stage = ""

        async def check(stage: str) -> None:
            nonlocal last_stage
            if stage != last_stage:
                last_stage = stage
                self.running[task_id] = stage
                current = await self.store.get(task_id)
                if current is None or current.status == "cancelling":
                    raise Cancelled(stage)
                if stage != "done":
                    await self.store.touch([task_id], {task_id: stage})
            if task_id in self.cancel_requested:
                raise Cancelled(stage)

        try:
            log.info("parse_started", kb=task.kb_name, dataset=task.dataset, mode=task.mode)
            async with self.raw.checkout(task.dataset) as folder:
                skipped = await self.pipeline.run(ParseContext(task=task, dataset_dir=folder, check=check))
            if skipped:
                await self.store.set_skipped(task_id, skipped_json(skipped) or "")
            await self._replace_previous(task)
            if not await self.store.transition(task_id, "completed", when=["running"], stage="done"):
                raise Cancelled("done")
            await self.index.mark_parsed(task.kb_name, task.dataset, task_id, utcnow())
            log.info("parse_completed", kb=task.kb_name, dataset=task.dataset, skipped=len(skipped))
        except Cancelled as stop:
            await self._roll_back(task)
            await self.store.transition(task_id, "cancelled", when=["cancelling", "running"], stage=str(stop))
            log.info("parse_cancelled", stage=str(stop))
        except asyncio.CancelledError:
            # The process is shutting down: leave the task to recovery (rolled back, then failed).
            raise
        except Exception as exc:
            message = (
                f"{type(exc).__name__}: {exc}" if not str(exc).startswith(type(exc).__name__) else str(exc)
            )
            log.warning("parse_failed", error=message)
            await self._roll_back(task)
            await self.store.transition(task_id, "failed", when=["running", "cancelling"], error=message)
        finally:
            self.running.pop(task_id, None)
            self.cancel_requested.discard(task_id)
            structlog.contextvars.unbind_contextvars("task_id")

    async def _roll_back(self, task: TaskRow) -> None:
        try:
            await self.pipeline.rollback(task)
        except Exception as exc:
            log.error("rollback_failed", task_id=task.task_id, error=str(exc))

    async def _replace_previous(self, task: TaskRow) -> None:
        """A forced re-parse replaces the dataset's earlier data only once the new data is complete."""
        for old in await self.index.chunk_task_ids(task.kb_name, task.dataset):
            if old != task.task_id:
                await self.pipeline.rollback(
                    TaskRow(task_id=old, status="completed", kb_name=task.kb_name, dataset=task.dataset)
                )

    # ------------------------------------------------------------ recovery

    async def recover_stale(self, older_than: timedelta, everything: bool = False) -> int:
        """Roll back and close tasks whose process died; returns how many."""
        stale = await self.store.stale(timedelta(0) if everything else older_than)
        recovered = 0
        for task in stale:
            if task.task_id in self.running:
                continue
            await self._roll_back(task)
            if task.status == "cancelling":
                done = await self.store.transition(task.task_id, "cancelled", when=["cancelling"])
            else:
                done = await self.store.transition(
                    task.task_id, "failed", when=["running"], error=INTERRUPTED
                )
            recovered += int(done)
            log.warning("task_recovered", task_id=task.task_id, was=task.status)
        return recovered

    async def cancel_all_for_kb(self, kb: str) -> None:
        for task in await self.store.active_for_kb(kb):
            if task.status in ACTIVE_STATES:
                with contextlib.suppress(BadRequest, TaskNotFound):
                    await self.cancel(task.task_id)
