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
import ctypes
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


def release_freed_memory() -> None:
    """Hand the C heap's free pages back to the system (glibc's `malloc_trim`). What a large job freed
    stays in the process's RSS otherwise: strings over 512 bytes (a chunk's text) live in malloc's heap,
    not Python's arenas, and its free pages in the middle of the heap are kept. After docdb parsed a
    million chunks its RSS stayed 1.4 GB; freeing 1M such strings and trimming takes 641 MB to 118 MB.
    Does nothing where libc has no `malloc_trim` (musl, macOS)."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):
        return
    gc.collect()
    trim(0)
