"""Background jobs recorded in a service's relational store, so that every replica reads every job.

A job runs in the replica that accepted it. Its record (a msgspec Struct with `status`, `error` and
`updated_at`) is stored whole as JSON beside the columns the lifecycle needs: status, the owning replica
and its last heartbeat. Every state change is written as it happens; progress in between is written
with each heartbeat. Recovery leaves no job unfinished forever:
- a replica that restarts fails what it left (on SQLite, where one process owns the store, everything
  unfinished), before it accepts new work;
- one replica (the leader, see `stores.sql.Leadership`) fails the jobs of replicas whose heartbeat is
  older than `stale_after`.
gen tasks and mem `kb` inserts run on this (`JobRunner`). docdb's parse tasks use the same store as a
queue (`JobQueue`): any replica claims the oldest submitted job (`FOR UPDATE SKIP LOCKED` on
PostgreSQL), and a job may be cancelled while it runs; recovery of a silent replica's jobs is the
service's own (docdb rolls back what the parse wrote).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import msgspec
import structlog
from sqlalchemy import JSON, Column, Float, String, Table, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlmodel import SQLModel

from lore_common.providers.chat import ModelError
from lore_common.stores.sql import create_tables
from lore_core import metrics
from lore_core.clock import utc_iso
from lore_core.errors import LoreError, store_outage
from lore_core.tasks import wait_set

log = structlog.get_logger("lore.jobs")

R = TypeVar("R", bound=msgspec.Struct)
_JOB_ID = re.compile(r"^[A-Za-z0-9\-]{1,64}$")
FINISHED_CACHE = 1000


class JobFailure(Exception):
    """A job failed for a reason the user should read as is (no exception class name prefixed)."""


def _status(record: msgspec.Struct) -> str:
    """Job records are the services' own Structs; all of them have `status`, `error` and `updated_at`."""
    return str(getattr(record, "status"))  # noqa: B009


def transient(exc: BaseException) -> str | None:
    """Why a job may succeed if run again later: a store that cannot be reached, or a service it
    depends on answering 503; None for anything else."""
    outage = store_outage(exc)
    if outage is not None and outage[0] == 503:
        return outage[1]
    if isinstance(exc, LoreError) and exc.status_code == 503:
        return str(exc)
    return None


def explain(exc: BaseException) -> str:
    """The error a failed job reports: our own messages as they are, anything else with its type."""
    if isinstance(exc, (JobFailure, ModelError, LoreError)):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class Lifecycle:
    """The status names a kind of job uses (they are part of each service's contract)."""

    submitted: str
    running: str
    done: str
    failed: str = "failed"
    id_field: str = "id"
    # Where a job may be cancelled while it runs: the state it waits in until its body stops.
    cancelling: str | None = None
    cancelled: str | None = None

    @property
    def unfinished(self) -> tuple[str, ...]:
        extra = (self.cancelling,) if self.cancelling else ()
        return (self.submitted, self.running, *extra)

    @property
    def working(self) -> tuple[str, ...]:
        """The states of a job some replica is running (it sends heartbeats)."""
        return (self.running, self.cancelling) if self.cancelling else (self.running,)


def job_table(name: str) -> Table:
    """The table `name` (created once per process in SQLModel's metadata)."""
    existing = SQLModel.metadata.tables.get(name)
    if existing is not None:
        return existing
    return Table(
        name,
        SQLModel.metadata,
        Column("id", String(64), primary_key=True),
        Column("kind", String(32), nullable=False, index=True),
        Column("status", String(16), nullable=False, index=True),
        Column("owner", String(200), nullable=True, index=True),
        # Seconds since the epoch of the owner's last sign of life, while the job is unfinished.
        Column("heartbeat_at", Float, nullable=True),
        Column("created_at", String(40), nullable=False),
        Column("updated_at", String(40), nullable=False),
        Column("record", JSON, nullable=False),
    )


class JobStore(Generic[R]):
    def __init__(
        self,
        engine: AsyncEngine,
        table: str,
        record_type: type[R],
        lifecycle: Lifecycle,
        kind_of: Callable[[R], str] = lambda _: "",
    ) -> None:
        self.engine = engine
        self.table = job_table(table)
        self.record_type = record_type
        self.lifecycle = lifecycle
        self.kind_of = kind_of
        self._finished: OrderedDict[str, R] = OrderedDict()
        self.kind = table
        metrics.watch_queue(self)  # its depth in /metrics (`lore_jobs_unfinished`), read when scraped

    async def create_tables(self) -> None:
        await create_tables(self.engine, [self.table])

    async def unfinished_counts(self) -> dict[str, int]:
        """How many jobs wait (submitted) or run, by state: every unfinished state, zeros included."""
        table = self.table
        query = (
            select(table.c.status, func.count())
            .where(table.c.status.in_(self.lifecycle.unfinished))
            .group_by(table.c.status)
        )
        async with self.engine.connect() as connection:
            rows = (await connection.execute(query)).all()
        found = {str(status): int(count) for status, count in rows}
        return {state: found.get(state, 0) for state in self.lifecycle.unfinished}

    def _id(self, record: R) -> str:
        return str(getattr(record, self.lifecycle.id_field))

    def _row(self, record: R, owner: str | None) -> dict[str, Any]:
        unfinished = _status(record) in self.lifecycle.unfinished
        return {
            "id": self._id(record),
            "kind": self.kind_of(record),
            "status": _status(record),
            "owner": owner if unfinished else None,
            # No owner, no heartbeat: an imported job left running is at once a silent replica's.
            "heartbeat_at": time.time() if unfinished and owner else None,
            "created_at": str(getattr(record, "created_at", "") or utc_iso()),
            "updated_at": getattr(record, "updated_at"),  # noqa: B009
            "record": msgspec.to_builtins(record),
        }

    def _insert(self) -> Any:
        dialect = postgresql if self.engine.dialect.name == "postgresql" else sqlite
        return dialect.insert(self.table)

    async def save(self, record: R, owner: str | None = None) -> None:
        """Durable first, visible second: a reader never sees a state the store does not hold."""
        setattr(record, "updated_at", utc_iso())  # noqa: B010
        row = self._row(record, owner)
        statement = self._insert().values(**row)
        statement = statement.on_conflict_do_update(
            index_elements=["id"], set_={k: v for k, v in row.items() if k not in ("id", "created_at")}
        )
        async with self.engine.begin() as connection:
            await connection.execute(statement)
        metrics.task_state(self.table.name, row["status"])
        if row["status"] not in self.lifecycle.unfinished:
            self._remember(record)

    async def add_missing(self, records: Sequence[R]) -> int:
        """Insert the records whose id the store does not hold (an import); returns how many."""
        added = 0
        async with self.engine.begin() as connection:
            for record in records:
                statement = self._insert().values(**self._row(record, None))
                result = await connection.execute(statement.on_conflict_do_nothing(index_elements=["id"]))
                added += int(result.rowcount or 0)
        return added

    def _remember(self, record: R) -> None:
        job_id = self._id(record)
        self._finished[job_id] = record
        self._finished.move_to_end(job_id)
        while len(self._finished) > FINISHED_CACHE:
            self._finished.popitem(last=False)

    def _decode(self, value: Any) -> R:
        return msgspec.convert(value, self.record_type)

    async def get(self, job_id: str) -> R | None:
        cached = self._finished.get(job_id)
        if cached is not None:
            return cached
        if not _JOB_ID.match(job_id):
            return None
        async with self.engine.connect() as connection:
            value = (
                await connection.execute(select(self.table.c.record).where(self.table.c.id == job_id))
            ).scalar()
        if value is None:
            return None
        record = self._decode(value)
        if _status(record) not in self.lifecycle.unfinished:
            self._remember(record)
        return record

    async def beat(self, records: Sequence[R], owner: str) -> None:
        """Write each live job's record with a fresh heartbeat: other replicas read both."""
        now, stamp = time.time(), utc_iso()
        table = self.table
        async with self.engine.begin() as connection:
            await connection.execute(
                update(table)
                .where(table.c.id.in_([self._id(r) for r in records]), table.c.owner == owner)
                .where(table.c.status.in_(self.lifecycle.unfinished))
                .values(heartbeat_at=now)
            )
            for record in records:
                setattr(record, "updated_at", stamp)  # noqa: B010
                # Progress only while the status is the one the record holds: a job another replica
                # asked to cancel keeps that state until its body notices.
                await connection.execute(
                    update(table)
                    .where(table.c.id == self._id(record), table.c.owner == owner)
                    .where(table.c.status == _status(record))
                    .values(record=msgspec.to_builtins(record), updated_at=stamp)
                )

    async def fail_unfinished(
        self, reason: str, *, owner: str | None = None, before: float | None = None
    ) -> list[R]:
        """Fail the unfinished jobs of `owner`, or those whose heartbeat is older than `before`, or
        (neither given) all of them; returns the failed records."""
        table = self.table
        query = select(table.c.id, table.c.record).where(table.c.status.in_(self.lifecycle.unfinished))
        if owner is not None:
            query = query.where(table.c.owner == owner)
        if before is not None:
            query = query.where(or_(table.c.heartbeat_at < before, table.c.heartbeat_at.is_(None)))
        if self.engine.dialect.name == "postgresql":
            query = query.with_for_update(skip_locked=True)
        failed: list[R] = []
        async with self.engine.begin() as connection:
            for job_id, value in (await connection.execute(query)).all():
                stamp = utc_iso()
                record = msgspec.structs.replace(
                    self._decode(value), status=self.lifecycle.failed, error=reason, updated_at=stamp
                )
                await connection.execute(
                    update(table)
                    .where(table.c.id == job_id, table.c.status.in_(self.lifecycle.unfinished))
                    .values(
                        status=self.lifecycle.failed,
                        record=msgspec.to_builtins(record),
                        updated_at=stamp,
                        owner=None,
                        heartbeat_at=None,
                    )
                )
                failed.append(record)
                metrics.task_state(self.table.name, self.lifecycle.failed)
        return failed

    async def claim(self, owner: str, change: Callable[[R], R] | None = None) -> R | None:
        """Move the oldest submitted job to running, owned by `owner`; None when there is none. On
        PostgreSQL the row is locked with SKIP LOCKED, so replicas claiming at once take different
        jobs; on SQLite writers are serialised and the update is conditional anyway."""
        table, lifecycle = self.table, self.lifecycle
        query = (
            select(table.c.id, table.c.record)
            .where(table.c.status == lifecycle.submitted)
            .order_by(table.c.created_at)
            .limit(1)
        )
        if self.engine.dialect.name == "postgresql":
            query = query.with_for_update(skip_locked=True)
        while True:
            async with self.engine.begin() as connection:
                found = (await connection.execute(query)).first()
                if found is None:
                    return None
                stamp = utc_iso()
                record = msgspec.structs.replace(self._decode(found.record), status=lifecycle.running)
                setattr(record, "updated_at", stamp)  # noqa: B010
                if change is not None:
                    record = change(record)
                result = await connection.execute(
                    update(table)
                    .where(table.c.id == found.id, table.c.status == lifecycle.submitted)
                    .values(
                        status=lifecycle.running,
                        owner=owner,
                        heartbeat_at=time.time(),
                        updated_at=stamp,
                        record=msgspec.to_builtins(record),
                    )
                )
            if result.rowcount == 1:
                metrics.task_state(self.table.name, lifecycle.running)
                return record
            # Another claimer took this one between the read and the write (SQLite): try the next.

    async def transition(
        self,
        job_id: str,
        to: str,
        *,
        when: Sequence[str],
        change: Callable[[R], R] | None = None,
        check: Callable[[R], bool] | None = None,
        beat: bool = False,
        also: Callable[[AsyncConnection], Awaitable[None]] | None = None,
    ) -> R | None:
        """Set the job's status to `to` (and apply `change` to its record) only if it is in one of the
        `when` states (and its record passes `check`, read under the same lock); returns the new record,
        or None when it was not. `beat` also freshens its heartbeat (whoever took it is alive). `also`
        writes what goes with the new status in the same transaction (a reader who sees the status sees
        it too)."""
        table = self.table
        query = select(table.c.record).where(table.c.id == job_id, table.c.status.in_(list(when)))
        if self.engine.dialect.name == "postgresql":
            query = query.with_for_update()
        async with self.engine.begin() as connection:
            value = (await connection.execute(query)).scalar()
            if value is None:
                return None
            current = self._decode(value)
            if check is not None and not check(current):
                return None
            stamp = utc_iso()
            record = msgspec.structs.replace(current, status=to)
            setattr(record, "updated_at", stamp)  # noqa: B010
            if change is not None:
                record = change(record)
            values: dict[str, Any] = {
                "status": to,
                "updated_at": stamp,
                "record": msgspec.to_builtins(record),
            }
            if to not in self.lifecycle.unfinished:
                values |= {"owner": None, "heartbeat_at": None}
            elif beat:
                values["heartbeat_at"] = time.time()
            await connection.execute(update(table).where(table.c.id == job_id).values(**values))
            if also is not None:
                await also(connection)
        metrics.task_state(self.table.name, to)
        if to not in self.lifecycle.unfinished:
            self._remember(record)
        return record

    async def list_jobs(
        self,
        *,
        statuses: Sequence[str] | None = None,
        fields: dict[str, str] | None = None,
        owner: str | None = None,
        limit: int | None = None,
        newest_first: bool = True,
    ) -> list[R]:
        """Jobs in `statuses` (of `owner`) whose records hold `fields` (e.g. {"dataset": "papers"}),
        newest first."""
        table = self.table
        query = select(table.c.record)
        if statuses is not None:
            query = query.where(table.c.status.in_(list(statuses)))
        if owner is not None:
            query = query.where(table.c.owner == owner)
        for name, value in (fields or {}).items():
            query = query.where(table.c.record[name].as_string() == value)
        query = query.order_by(table.c.created_at.desc() if newest_first else table.c.created_at)
        if limit is not None:
            query = query.limit(limit)
        async with self.engine.connect() as connection:
            return [self._decode(value) for (value,) in await connection.execute(query)]

    async def silent(self, before: float) -> list[R]:
        """Jobs some replica was running whose heartbeat is older than `before` (its replica died)."""
        table = self.table
        query = select(table.c.record).where(
            table.c.status.in_(self.lifecycle.working),
            or_(table.c.heartbeat_at < before, table.c.heartbeat_at.is_(None)),
        )
        async with self.engine.connect() as connection:
            return [self._decode(value) for (value,) in await connection.execute(query)]


class JobQueue(Generic[R]):
    """Workers that claim submitted jobs from the shared store and run them here, with heartbeats for
    the jobs running here and, on the leading replica, a periodic check for silent replicas' jobs."""

    def __init__(
        self,
        store: JobStore[R],
        owner: str,
        run: Callable[[R], Awaitable[None]],
        *,
        workers: int,
        heartbeat_interval: float,
        on_claim: Callable[[R], R] | None = None,
        on_beat: Callable[[], Awaitable[None]] | None = None,
        idle_poll: float = 1.0,
    ) -> None:
        self.store = store
        self.owner = owner
        self.run = run
        self.workers = max(1, workers)
        self.heartbeat_interval = max(0.2, heartbeat_interval)
        self.on_claim = on_claim
        self.on_beat = on_beat
        self.idle_poll = idle_poll
        # The live record of each job running here, written with each heartbeat.
        self.live: dict[str, R] = {}
        self.wakeup = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def notify(self) -> None:
        """A job was submitted: idle workers look now rather than at their next poll."""
        self.wakeup.set()

    async def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._work(n), name=f"job-worker-{n}") for n in range(self.workers)
        ]
        self._tasks.append(asyncio.create_task(self._beat(), name="job-heartbeat"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    async def _work(self, number: int) -> None:
        delay = 0.5
        while True:
            try:
                record = await self.store.claim(self.owner, self.on_claim)
            except Exception as exc:
                # The store is away (or a claim failed): a worker that died here would leave every
                # later job pending for good. Try again with a backoff.
                log.warning(
                    "job_claim_failed", table=self.store.table.name, error=f"{type(exc).__name__}: {exc}"
                )
                await asyncio.sleep(delay)
                delay = min(10.0, delay * 2)
                continue
            delay = 0.5
            if record is None:
                self.wakeup.clear()
                await wait_set(self.wakeup, self.idle_poll)
                continue
            job_id = self.store._id(record)
            log.info("job_claimed", job_id=job_id, table=self.store.table.name, worker=number)
            self.live[job_id] = record
            try:
                await self.run(record)
            finally:
                self.live.pop(job_id, None)

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_interval)
            try:
                if self.live:
                    await self.store.beat(list(self.live.values()), self.owner)
                if self.on_beat is not None:
                    await self.on_beat()
            except Exception as exc:  # the next beat tries again
                log.warning("heartbeat_failed", table=self.store.table.name, error=str(exc))


def replica_id(port: int) -> str:
    """Who runs a job: this host and port, unique among replicas sharing the stores, and kept by a
    restart of the same replica, which therefore closes its own leftovers at once."""
    return f"{socket.gethostname()}:{port}"


class JobRunner(Generic[R]):
    """Runs job bodies as asyncio tasks in this replica and records every state change."""

    def __init__(
        self,
        store: JobStore[R],
        owner: str,
        interrupted: str,
        *,
        retry_for: float = 0.0,
        waiting: Callable[[R, str], R] | None = None,
        leave_on_shutdown: bool = False,
    ) -> None:
        self.store = store
        self.owner = owner
        self.interrupted = interrupted
        # A job cut off by this process stopping is left unfinished for the service to resume at its
        # next start, rather than failed as `interrupted` (its `finished` still runs, with that record).
        self.leave_on_shutdown = leave_on_shutdown
        # A job stopped by a store outage (or an unavailable dependency) waits and runs its body again,
        # with a backoff of 1 s doubling to 30 s, for `retry_for` seconds; `waiting` gives the record to
        # show meanwhile (its reason in a field of the job's own contract).
        self.retry_for = retry_for
        self.waiting = waiting
        self.lifecycle = store.lifecycle
        # The live record of each job running here: reads here see it at once, others at the next beat.
        self.live: dict[str, R] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}

    async def get(self, job_id: str) -> R | None:
        live = self.live.get(job_id)
        return live if live is not None else await self.store.get(job_id)

    def progress(self, record: R) -> None:
        """Replace a running job's live record (written with the next heartbeat)."""
        self.live[self.store._id(record)] = record

    async def save(self, record: R) -> None:
        """Replace a running job's live record and write it now."""
        self.progress(record)
        await self.store.save(record, self.owner)

    async def submit(
        self,
        record: R,
        body: Callable[[R], Awaitable[R]],
        finished: Callable[[R], Awaitable[None] | None] | None = None,
    ) -> R:
        """Record the job as submitted, then run `body` (given the running record, it returns the record
        to store as done). `finished` is called with the last record, done or failed."""
        await self.store.save(record, self.owner)
        job_id = self.store._id(record)
        self.live[job_id] = record
        self._tasks[job_id] = asyncio.create_task(self._run(job_id, record, body, finished))
        return record

    async def _run(
        self,
        job_id: str,
        record: R,
        body: Callable[[R], Awaitable[R]],
        finished: Callable[[R], Awaitable[None] | None] | None,
    ) -> None:
        last = record
        deadline = time.monotonic() + self.retry_for
        try:
            running = msgspec.structs.replace(record, status=self.lifecycle.running)
            self.progress(running)
            await self._until_stored(running, deadline)
            last = msgspec.structs.replace(
                await self._body(job_id, running, body, deadline), status=self.lifecycle.done
            )
            await self._until_stored(last, deadline)
        except asyncio.CancelledError:
            if not self.leave_on_shutdown:
                last = msgspec.structs.replace(self.live.get(job_id, last), status=self.lifecycle.failed)
                setattr(last, "error", self.interrupted)  # noqa: B010
                with contextlib.suppress(Exception):
                    await asyncio.shield(self.store.save(last))
            raise
        except Exception as exc:
            message = explain(exc)
            log.warning("job_failed", job_id=job_id, table=self.store.table.name, error=message)
            last = msgspec.structs.replace(self.live.get(job_id, last), status=self.lifecycle.failed)
            setattr(last, "error", message)  # noqa: B010
            await self._until_stored(last, time.monotonic() + self.retry_for)
        finally:
            self._tasks.pop(job_id, None)
            self.live.pop(job_id, None)
            if finished is not None:
                with contextlib.suppress(Exception):
                    outcome = finished(last)
                    if outcome is not None:
                        await outcome

    async def _body(self, job_id: str, running: R, body: Callable[[R], Awaitable[R]], deadline: float) -> R:
        """The job's body, run again while what stops it is an outage and time is left."""
        delay = 1.0
        while True:
            try:
                return await body(running)
            except Exception as exc:
                reason = transient(exc)
                if reason is None:
                    raise
                if time.monotonic() + delay > deadline:
                    raise JobFailure(f"{reason}; gave up after retrying for {self.retry_for:g} s") from exc
                await self._wait(job_id, running, reason, delay)
                self.progress(running)  # the body updates this record in place as it goes
                delay = min(30.0, delay * 2)

    async def _until_stored(self, record: R, deadline: float) -> None:
        """Write a state change, waiting out an outage of the store itself until `deadline`."""
        job_id = self.store._id(record)
        delay = 0.5
        while True:
            try:
                await self.store.save(record, self.owner)
                return
            except Exception as exc:
                reason = transient(exc)
                if reason is None or time.monotonic() + delay > deadline:
                    raise
                await self._wait(job_id, self.live.get(job_id, record), reason, delay)
                delay = min(10.0, delay * 2)

    async def _wait(self, job_id: str, record: R, reason: str, delay: float) -> None:
        log.warning("job_waiting", job_id=job_id, table=self.store.table.name, retry_in=delay, error=reason)
        if self.waiting is not None:
            self.progress(self.waiting(record, reason))
        await asyncio.sleep(delay)

    async def recover(self, shared: bool) -> list[R]:
        """At start-up: fail what this replica left unfinished (on SQLite, everything unfinished)."""
        return await self.store.fail_unfinished(self.interrupted, owner=self.owner if shared else None)

    async def maintain(
        self,
        interval: float,
        stale_after: float,
        leads: Callable[[], Awaitable[bool]],
        stale_reason: str,
        on_failed: Callable[[list[R]], Awaitable[None]] | None = None,
    ) -> None:
        """Beat for the jobs running here; when leading, fail those whose replica went silent."""
        while True:
            await asyncio.sleep(interval)
            try:
                if self.live:
                    await self.store.beat(list(self.live.values()), self.owner)
                if await leads():
                    failed = await self.store.fail_unfinished(stale_reason, before=time.time() - stale_after)
                    if failed:
                        log.warning("stale_jobs_failed", table=self.store.table.name, count=len(failed))
                        if on_failed is not None:
                            await on_failed(failed)
            except Exception as exc:
                log.warning("job_maintenance_failed", error=f"{type(exc).__name__}: {exc}")

    async def shutdown(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
