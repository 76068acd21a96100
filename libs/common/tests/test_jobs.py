"""The shared job store used as a queue (docdb's parse tasks): claims, cancellation, heartbeats, and
recovery of a silent replica's jobs, on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from lore_common.jobs import JobQueue, JobRunner, JobStore, Lifecycle
from lore_common.stores.sql import create_engine
from lore_core.clock import utc_iso
from lore_core.settings import DatabaseConfig

LIFECYCLE = Lifecycle(
    submitted="pending", running="running", done="completed", cancelling="cancelling", cancelled="cancelled"
)


class Job(msgspec.Struct, kw_only=True):
    id: str
    status: str = "pending"
    kb: str = "kb"
    stage: str | None = None
    error: str | None = None
    created_at: str = msgspec.field(default_factory=lambda: utc_iso("microseconds"))
    updated_at: str = ""


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest) -> str | None:
    return request.getfixturevalue("postgres_url") if request.param == "postgres" else None  # type: ignore[no-any-return]


@pytest.fixture
async def engine(database_url: str | None, tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(DatabaseConfig(url=database_url), tmp_path, "jobs")
    try:
        yield engine
    finally:
        await engine.dispose()


async def store_on(engine: AsyncEngine) -> JobStore[Job]:
    store = JobStore(engine, "test_queue_jobs", Job, LIFECYCLE)
    await store.create_tables()
    return store


async def test_concurrent_claims_take_each_job_once_oldest_first(engine: AsyncEngine) -> None:
    store = await store_on(engine)
    for n in range(12):
        await store.save(Job(id=f"j{n:02d}"))
    claims = await asyncio.gather(*(store.claim(f"replica-{n % 3}") for n in range(16)))
    taken = [c.id for c in claims if c is not None]
    assert sorted(taken) == [f"j{n:02d}" for n in range(12)]  # each once, none lost
    assert all(c is None or c.status == "running" for c in claims)
    assert await store.claim("late") is None
    listed = await store.list_jobs(statuses=["running"], fields={"kb": "kb"})
    assert len(listed) == 12 and await store.list_jobs(fields={"kb": "other"}) == []


async def test_a_cancel_is_not_undone_by_the_runners_heartbeat(engine: AsyncEngine) -> None:
    store = await store_on(engine)
    await store.save(Job(id="a"))
    running = await store.claim("r1", lambda job: msgspec.structs.replace(job, stage="extract"))
    assert running is not None and running.stage == "extract"
    assert await store.transition("a", "cancelling", when=["running"]) is not None
    # The runner has not noticed yet and beats with its own (running) record.
    await store.beat([msgspec.structs.replace(running, stage="embed")], "r1")
    current = await store.get("a")
    assert current is not None and current.status == "cancelling"
    assert await store.transition("a", "completed", when=["running"]) is None  # too late to complete
    done = await store.transition("a", "cancelled", when=["cancelling"])
    assert done is not None and (await store.get("a")) == done


async def test_the_jobs_of_a_silent_replica_are_found_by_their_old_heartbeat(engine: AsyncEngine) -> None:
    store = await store_on(engine)
    for job_id in ("alive", "dead"):
        await store.save(Job(id=job_id))
    await store.claim("r-alive")
    await store.claim("r-dead")
    time.sleep(0.05)
    cutoff = time.time()
    alive = await store.get("alive")
    assert alive is not None
    await store.beat([alive], "r-alive")
    assert [j.id for j in await store.silent(cutoff)] == ["dead"]
    assert [j.id for j in await store.list_jobs(statuses=["running"], owner="r-dead")] == ["dead"]


async def test_a_queue_runs_each_submitted_job_and_beats_while_it_runs(engine: AsyncEngine) -> None:
    store = await store_on(engine)
    seen: list[str] = []
    release = asyncio.Event()

    async def run(job: Job) -> None:
        seen.append(job.id)
        await release.wait()
        await store.transition(job.id, "completed", when=["running"])

    queue = JobQueue(store, "r1", run, workers=2, heartbeat_interval=0.2, idle_poll=0.05)
    await queue.start()
    try:
        for job_id in ("x", "y", "z"):
            await store.save(Job(id=job_id))
        queue.notify()
        while len(seen) < 2:
            await asyncio.sleep(0.02)
        assert set(queue.live) == set(seen)  # two workers: the third waits
        before = time.time()
        await asyncio.sleep(0.5)
        assert not await store.silent(before)  # the heartbeat keeps them alive
        release.set()
        while len(await store.list_jobs(statuses=["completed"])) < 3:
            await asyncio.sleep(0.02)
    finally:
        await queue.stop()
    assert sorted(seen) == ["x", "y", "z"] and not queue.live


async def test_a_queue_whose_store_was_away_still_runs_later_jobs(engine: AsyncEngine) -> None:
    """Claims that fail while the store is away do not stop the workers: jobs submitted during or
    after the outage run once it is back (they stayed `pending` for good before)."""
    store = await store_on(engine)
    real_claim = store.claim
    failures = 0

    async def claim_while_away(*args: Any, **kwargs: Any) -> Job | None:
        nonlocal failures
        if failures < 3:
            failures += 1
            raise ConnectionRefusedError(111, "Connect call failed")
        return await real_claim(*args, **kwargs)

    store.claim = claim_while_away  # type: ignore[method-assign]
    ran: list[str] = []

    async def run(job: Job) -> None:
        ran.append(job.id)
        await store.transition(job.id, "completed", when=["running"])

    queue = JobQueue(store, "r1", run, workers=1, heartbeat_interval=0.2, idle_poll=0.05)
    await queue.start()
    try:
        await store.save(Job(id="after-outage"))
        queue.notify()
        deadline = time.monotonic() + 20
        while not ran:
            assert time.monotonic() < deadline, "the queue stopped taking jobs after failed claims"
            await asyncio.sleep(0.05)
    finally:
        await queue.stop()
    assert ran == ["after-outage"] and failures == 3


async def _finished(runner: JobRunner[Job], job_id: str, limit: float = 20.0) -> Job:
    deadline = time.monotonic() + limit
    while (job := await runner.get(job_id)) is None or job.status not in ("completed", "failed"):
        assert time.monotonic() < deadline, job
        await asyncio.sleep(0.05)
    return job


async def test_a_job_stopped_by_an_outage_waits_shows_why_and_runs_again(engine: AsyncEngine) -> None:
    store = await store_on(engine)
    runner = JobRunner(
        store,
        "r1",
        "interrupted",
        retry_for=60,
        waiting=lambda job, reason: msgspec.structs.replace(job, stage=f"waiting: {reason}"),
    )
    attempts = 0

    async def body(job: Job) -> Job:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise ConnectionRefusedError(111, "Connection refused")
        return msgspec.structs.replace(job, stage="stored")

    await runner.submit(Job(id="w"), body)
    while (shown := await runner.get("w")) is not None and not (shown.stage or "").startswith("waiting"):
        assert shown.status in ("pending", "running")
        await asyncio.sleep(0.01)
    assert shown is not None and shown.status == "running"  # what a status read shows meanwhile
    assert "unavailable, retry shortly" in (shown.stage or "")
    done = await _finished(runner, "w")
    assert done.status == "completed" and done.stage == "stored" and attempts == 2
    assert await store.get("w") == done


async def test_a_job_failing_for_another_reason_fails_at_once(engine: AsyncEngine) -> None:
    store = await store_on(engine)
    runner = JobRunner(store, "r1", "interrupted", retry_for=60)
    attempts = 0

    async def body(job: Job) -> Job:
        nonlocal attempts
        attempts += 1
        raise ValueError("the model answered nonsense")

    await runner.submit(Job(id="f"), body)
    failed = await _finished(runner, "f")
    assert failed.status == "failed" and failed.error == "ValueError: the model answered nonsense"
    assert attempts == 1


async def test_an_outage_longer_than_the_retry_window_fails_the_job_saying_so(engine: AsyncEngine) -> None:
    store = await store_on(engine)
    runner = JobRunner(store, "r1", "interrupted", retry_for=2.5)

    async def body(job: Job) -> Job:
        raise ConnectionResetError(104, "Connection reset by peer")

    await runner.submit(Job(id="g"), body)
    failed = await _finished(runner, "g")
    assert failed.status == "failed"
    assert "unavailable, retry shortly" in (failed.error or "")
    assert "gave up after retrying for 2.5 s" in (failed.error or "")
