"""Small background-work helpers shared by the services."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Hashable
from typing import Any, Generic, TypeVar

import structlog

log = structlog.get_logger("lore.tasks")
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@contextlib.asynccontextmanager
async def periodic(
    interval_s: float,
    job: Callable[[], Awaitable[Any]],
    name: str = "sweep",
    when: Callable[[], Awaitable[bool]] | None = None,
) -> AsyncIterator[None]:
    """Run `job` every `interval_s` seconds while the context is open, on the
    runs where `when` (say, "this replica leads") answers true.

    A failing run is logged and the next one still happens; leaving the context stops the loop."""

    async def loop() -> None:
        while True:
            try:
                if when is None or await when():
                    result = await job()
                    log.info("periodic_job_ran", job=name, result=result)
            except Exception as exc:
                log.warning("periodic_job_failed", job=name, error=f"{type(exc).__name__}: {exc}")
            await asyncio.sleep(interval_s)

    async with background(loop(), name):
        yield


async def wait_set(event: asyncio.Event, seconds: float) -> bool:
    """Wait until `event` is set or `seconds` pass; True when it was set. Unlike `asyncio.wait_for` on
    Python 3.11, a cancellation that arrives as the event is set is never swallowed, so a loop that
    waits here always stops when its task is cancelled."""
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        return False
    return True


@contextlib.asynccontextmanager
async def background(work: Coroutine[Any, Any, None], name: str) -> AsyncIterator[None]:
    """Run `work` as a task while the context is open; leaving it cancels the task and waits for it."""
    task = asyncio.create_task(work, name=name)
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class FreshReads(Generic[K, V]):
    """Reads of a shared value (a version counter) where every caller gets a read that began after it
    asked, yet callers asking at the same time share one: those that arrive while a read runs wait
    for the next one, which starts as soon as the running one ends. Under load that is one read per
    round trip instead of one per caller, and no caller sees a value older than its own request."""

    def __init__(self, read: Callable[[K], Awaitable[V]]) -> None:
        self.read = read
        self._waiting: dict[K, asyncio.Future[V]] = {}
        self._running: set[K] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def get(self, key: K) -> V:
        future = self._waiting.get(key)
        if future is None:
            future = self._waiting[key] = asyncio.get_running_loop().create_future()
            if key not in self._running:
                self._start(key)
        return await asyncio.shield(future)

    def _start(self, key: K) -> None:
        self._running.add(key)
        task = asyncio.ensure_future(self._run(key))
        self._tasks.add(task)  # held until done: the loop keeps only weak references to tasks
        task.add_done_callback(self._tasks.discard)

    async def _run(self, key: K) -> None:
        # Callers that asked before this line share this read; from here on they wait for the next.
        future = self._waiting.pop(key)
        try:
            future.set_result(await self.read(key))
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as exc:
            future.set_exception(exc)
            future.exception()  # retrieved here: a read nobody waits for any more is not an error
        finally:
            self._running.discard(key)
            if key in self._waiting:
                self._start(key)
