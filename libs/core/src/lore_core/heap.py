"""Keeping the cyclic garbage collector off what lives as long as the service.

A full collection walks every object the collector tracks, and a service holds about 250,000 from its
imports and start-up alone (functions, classes, pydantic field definitions, its stores' data). Under
docdb's chat load a full collection ran every few seconds and stopped the event loop for 200–300 ms,
and every request in flight with it: the p95 spikes of `bench/chat.py`. After the freeze it takes
5–15 ms. Frozen objects are still freed by reference counting like any other; only a reference cycle
among them that became garbage would wait, until the service stops and gives them back to the
collector (so that in-process tests, which start many apps, keep nothing)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import AsyncIterator
from typing import Any


@contextlib.asynccontextmanager
async def frozen_after_startup(_app: Any) -> AsyncIterator[None]:
    """A service's last lifespan step: what its start-up built leaves the collector's walks."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
