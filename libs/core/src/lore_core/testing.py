"""Test helpers that need nothing beyond the core: running an app's lifespan inside a test."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any


@contextlib.asynccontextmanager
async def app_lifespan(app: Any) -> AsyncIterator[None]:
    """Run a Litestar app's lifespan in one task of the current loop (startup, then shutdown on exit).

    The lifespan's task group must be entered and left by the same task, which pytest's async fixtures
    don't guarantee; a host task does."""
    ready, stop = asyncio.Event(), asyncio.Event()

    async def host() -> None:
        async with app.lifespan():
            ready.set()
            await stop.wait()

    task = asyncio.create_task(host())
    waiter = asyncio.create_task(ready.wait())
    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        waiter.cancel()
        task.result()  # raises the start-up error
    try:
        yield
    finally:
        stop.set()
        await task
