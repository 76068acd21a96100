"""Small background-work helpers shared by the services."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any

import structlog

log = structlog.get_logger("lore.tasks")


@contextlib.asynccontextmanager
async def periodic(
    interval_s: float,
    job: Callable[[], Any],
    name: str = "sweep",
    when: Callable[[], Awaitable[bool]] | None = None,
) -> AsyncIterator[None]:
    """Run blocking `job` in a thread every `interval_s` seconds while the context is open, on the
    runs where `when` (say, "this replica leads") answers true.

    A failing run is logged and the next one still happens; leaving the context stops the loop."""

    async def loop() -> None:
        while True:
            try:
                if when is None or await when():
                    result = await asyncio.to_thread(job)
                    log.info("periodic_job_ran", job=name, result=result)
            except Exception as exc:
                log.warning("periodic_job_failed", job=name, error=f"{type(exc).__name__}: {exc}")
            await asyncio.sleep(interval_s)

    async with background(loop(), name):
        yield


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
