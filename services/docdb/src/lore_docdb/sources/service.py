"""Sources and syncs (docs/sources.md): set a dataset's source, run a sync as a task, run scheduled syncs.

A sync reads the whole source first (sources/fetch.py); when that fails the task fails with the reason
and the dataset is untouched. Then it compares each file's sha256 with the dataset's file at the same
path: new paths are added, changed files replaced, and the dataset's files the source no longer has
are deleted (a dataset with a source mirrors it; files that failed to fetch are left as they were).
When something changed and `auto_parse` is on, each KB holding the dataset parses it again.

Syncs run in the replica that accepted them (`JobRunner`); scheduled ones on the replica that claims
the due time in the store (`SourceStore.claim_due`), which the leader does every `schedule_check`.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import msgspec
import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from lore_common.jobs import JobRunner, JobStore, Lifecycle
from lore_core.clock import iso, utc_iso, utcnow
from lore_core.errors import Conflict, LoreError, NotFound
from lore_core.settings import REDACTED, SourcesConfig, redact
from lore_docdb.datasets.paths import flatten, path_of, sha256_of
from lore_docdb.datasets.raw import RawStore
from lore_docdb.datasets.service import DatasetService
from lore_docdb.knowledge_bases.service import KnowledgeBaseService
from lore_docdb.sources.fetch import Fetcher, SourceFailed, describe
from lore_docdb.sources.models import (
    SYNC_TABLE,
    SourceInfo,
    SourceRow,
    SourceSpec,
    SyncFailure,
    SyncReport,
    SyncTask,
)
from lore_docdb.sources.store import SourceStore

log = structlog.get_logger("lore.docdb.sources")
LIFECYCLE = Lifecycle(submitted="pending", running="running", done="completed", id_field="task_id")
INTERRUPTED = "interrupted: the replica running the sync stopped; run it again"
SECRETS = ("access_key", "secret_key", "token")


class SyncStore(JobStore[SyncTask]):
    def __init__(self, engine: AsyncEngine) -> None:
        super().__init__(engine, SYNC_TABLE, SyncTask, LIFECYCLE, kind_of=lambda task: task.kind)


class SourceNotFound(NotFound):
    def __init__(self, dataset: str) -> None:
        super().__init__(f"dataset {dataset!r} has no source; set one with PUT …/datasets/{dataset}/source")


def shown(spec: SourceSpec) -> SourceSpec:
    """The source with its secrets masked."""
    redacted = redact(msgspec.to_builtins(spec))
    converted: SourceSpec = msgspec.convert(redacted, SourceSpec)
    return converted


class SourceService:
    def __init__(
        self,
        *,
        store: SourceStore,
        syncs: SyncStore,
        datasets: DatasetService,
        raw: RawStore,
        fetcher: Fetcher,
        config: SourcesConfig,
        owner: str,
        reparse: Callable[[str], Awaitable[list[str]]],
    ) -> None:
        self.store = store
        self.syncs = syncs
        self.datasets = datasets
        self.raw = raw
        self.fetcher = fetcher
        self.config = config
        self.reparse = reparse
        self.jobs = JobRunner(syncs, owner, INTERRUPTED)

    # ------------------------------------------------------------ the source

    def _decode(self, row: SourceRow) -> SourceSpec:
        decoded: SourceSpec = msgspec.json.decode(row.spec, type=SourceSpec)
        return decoded

    async def set(self, dataset: str, spec: SourceSpec) -> SourceInfo:
        await self.datasets.require(dataset)
        previous = await self.store.get(dataset)
        if previous is not None:
            # A secret sent back as shown ("***") keeps the stored one.
            old = msgspec.to_builtins(self._decode(previous))
            new = msgspec.to_builtins(spec)
            for key in SECRETS:
                if new.get(key) == REDACTED and old.get("kind") == new.get("kind"):
                    new[key] = old.get(key)
            spec = msgspec.convert(new, SourceSpec)
        await self.fetcher.check(spec)
        await self.store.put(dataset, msgspec.json.encode(spec).decode(), spec.interval)
        log.info("source_set", dataset=dataset, source=describe(spec), interval=spec.interval)
        return await self.info(dataset)

    async def info(self, dataset: str) -> SourceInfo:
        await self.datasets.require(dataset)
        row = await self.store.get(dataset)
        if row is None:
            raise SourceNotFound(dataset)
        return await self._info(row)

    async def _info(self, row: SourceRow) -> SourceInfo:
        last = await self.jobs.get(row.last_task_id) if row.last_task_id else None
        return SourceInfo(
            dataset=row.dataset,
            source=shown(self._decode(row)),
            next_sync_at=iso(row.next_sync_at) if row.next_sync_at else None,
            last_sync=last,
        )

    async def list_sources(self) -> list[SourceInfo]:
        datasets = set(await self.datasets.list_datasets())
        return [await self._info(row) for row in await self.store.all() if row.dataset in datasets]

    async def remove(self, dataset: str) -> None:
        await self.datasets.require(dataset)
        if not await self.store.delete(dataset):
            raise SourceNotFound(dataset)

    # ------------------------------------------------------------ syncs

    async def sync(self, dataset: str, trigger: str = "manual") -> SyncTask:
        await self.datasets.require(dataset)
        row = await self.store.get(dataset)
        if row is None:
            raise SourceNotFound(dataset)
        running = await self.syncs.list_jobs(statuses=LIFECYCLE.unfinished, fields={"dataset": dataset})
        if running:
            raise Conflict(
                f"dataset {dataset!r} is being synced (task {running[0].task_id}); wait for it to end",
                detail={"active_tasks": [t.task_id for t in running]},
            )
        spec = self._decode(row)
        now = utc_iso()
        task = SyncTask(
            task_id=str(uuid.uuid4()),
            dataset=dataset,
            kind=_kind(spec),
            trigger=trigger,
            status="pending",
            created_at=now,
            updated_at=now,
        )
        await self.jobs.submit(task, lambda running: self._run(running, spec))
        await self.store.set_last_task(dataset, task.task_id)
        log.info("sync_submitted", dataset=dataset, task_id=task.task_id, trigger=trigger)
        return task

    async def get_sync(self, dataset: str, task_id: str) -> SyncTask:
        task = await self.jobs.get(task_id)
        if task is None or task.dataset != dataset:
            raise NotFound(f"sync task {task_id!r} does not exist for dataset {dataset!r}")
        return task

    async def list_syncs(self, dataset: str, limit: int) -> list[SyncTask]:
        await self.datasets.require(dataset)
        return await self.syncs.list_jobs(fields={"dataset": dataset}, limit=limit)

    async def _run(self, task: SyncTask, spec: SourceSpec) -> SyncTask:
        staging = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="lore-sync-"))
        try:
            try:
                fetched = await self.fetcher.fetch(spec, staging)
            except SourceFailed as exc:
                raise SourceFailed(f"{describe(spec)}: {exc}") from None
            report = await self._apply(task.dataset, fetched.files, fetched.failed, spec)
        finally:
            await asyncio.to_thread(shutil.rmtree, staging, True)
        parses: list[str] = []
        if spec.auto_parse and (report.added or report.changed or report.deleted):
            parses = await self.reparse(task.dataset)
        log.info(
            "sync_completed",
            dataset=task.dataset,
            added=len(report.added),
            changed=len(report.changed),
            deleted=len(report.deleted),
            unchanged=report.unchanged,
            failed=len(report.failed),
        )
        return msgspec.structs.replace(task, report=report, parse_tasks=parses)

    async def _apply(
        self, dataset: str, files: dict[str, Path], failed: list[SyncFailure], spec: SourceSpec
    ) -> SyncReport:
        report = SyncReport(failed=list(failed))
        await self.datasets.require(dataset)
        held = {path_of(name): name for name, _, _ in await self.raw.list_files(dataset)}
        kept = {f.path for f in failed}
        gone = sorted(path for path in held if path not in files and path not in kept)
        refuse_mass_delete(spec, len(held), gone, len(files))
        hashes = await self.raw.hashes(dataset)
        for path in sorted(files):
            local = files[path]
            name = flatten(path)
            digest = await asyncio.to_thread(sha256_of, local)
            if path in held and hashes.get(held[path]) == digest:
                report.unchanged += 1
                continue
            temp = self.raw.staging(dataset)
            try:
                await asyncio.to_thread(shutil.copyfile, local, temp)
                existed = await self.raw.replace(dataset, temp, name, digest)
            except Exception as exc:
                temp.unlink(missing_ok=True)
                report.failed.append(SyncFailure(path=path, reason=f"{type(exc).__name__}: {exc}"))
                continue
            (report.changed if existed else report.added).append(path)
        for path in gone:
            await self.raw.delete_file(dataset, held[path])
            report.deleted.append(path)
        return report

    async def run_due(self) -> int:
        """Start the scheduled syncs that are due (each claimed in the store, so once per interval)."""
        started = 0
        for row in await self.store.claim_due(utcnow()):
            try:
                await self.sync(row.dataset, trigger="schedule")
                started += 1
            except Conflict as exc:
                log.info("scheduled_sync_skipped", dataset=row.dataset, reason=str(exc))
            except NotFound:  # the dataset is gone: so is its source
                await self.store.delete(row.dataset)
        return started

    async def forget(self, dataset: str) -> None:
        """The dataset was deleted: so is its source (a new dataset of that name starts without one)."""
        await self.store.delete(dataset)

    async def maintain(
        self, interval: float, stale_after: float, leads: Callable[[], Awaitable[bool]]
    ) -> None:
        """Heartbeats for the syncs running here; on the leader, fail those of a replica gone silent (so
        their datasets can be synced again)."""
        await self.jobs.maintain(interval, stale_after, leads, INTERRUPTED)

    async def recover(self, shared: bool) -> None:
        await self.jobs.recover(shared)

    async def shutdown(self) -> None:
        await self.jobs.shutdown()


def refuse_mass_delete(spec: SourceSpec, held: int, gone: list[str], listed: int) -> None:
    """Fail the sync, before it writes anything, when it would delete more of the dataset's files than
    the source's `max_delete` allows (in a dataset of fewer than 4 files: all of them). A scheduled
    sync runs unattended, and an unmounted share, an emptied bucket prefix or a wrong branch looks
    to it like every file was deleted."""
    if len(gone) <= spec.max_delete * held or (held < 4 and len(gone) < held):
        return
    named = ", ".join(gone[:5]) + (f" and {len(gone) - 5} more" if len(gone) > 5 else "")
    limit = "all of them" if held < 4 else f"more than {spec.max_delete:.0%} of them"
    raise SourceFailed(
        f"{describe(spec)}: sync refused, nothing changed: it would delete {len(gone)} of the dataset's "
        f"{held} files ({named}), {limit}, and the source lists {listed} files; an empty or unmounted "
        "folder, an emptied prefix or a wrong branch looks like this. If the deletions are meant, set "
        "the source again with max_delete 1 (`lore source add … --max-delete 1`) and sync."
    )


def _kind(spec: SourceSpec) -> str:
    return str(msgspec.to_builtins(spec)["kind"])


def reparse_in(kbs: KnowledgeBaseService) -> Callable[[str], Awaitable[list[str]]]:
    """After a sync: parse the dataset's changes (incremental, same mode and schema) in each KB holding it;
    returns the ids of the parses queued. A KB with a parse of it already active is left alone."""

    async def reparse(dataset: str) -> list[str]:
        queued: list[str] = []
        for kb in await kbs.store.list_kbs():
            if kb.status != "ready":
                continue
            for row in await kbs.store.kb_datasets(kb.name):
                if row.dataset != dataset or not row.parsed:
                    continue
                try:
                    tasks = await kbs.parse(
                        kb.name, [dataset], row.process_mode, row.schema_name, force=False, incremental=True
                    )
                except LoreError as exc:
                    log.info("auto_parse_skipped", kb=kb.name, dataset=dataset, reason=str(exc))
                    continue
                queued.extend(task.task_id for task in tasks)
        return queued

    return reparse
