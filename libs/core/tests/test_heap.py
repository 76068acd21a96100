"""A running service keeps its start-up objects out of the garbage collector's full walks."""

from __future__ import annotations

import gc
import platform
from pathlib import Path

import pytest

from lore_core.heap import release_freed_memory
from lore_core.testing import app_lifespan
from lore_core.web import create_service_app


async def test_a_service_freezes_what_start_up_built_and_gives_it_back_when_it_stops() -> None:
    app = create_service_app(service="probe", route_handlers=[])
    assert gc.get_freeze_count() == 0
    walked_before = len(gc.get_objects(generation=2))
    async with app_lifespan(app):
        # The imported libraries alone are tens of thousands of objects; a full collection skips them.
        assert gc.get_freeze_count() > 10_000
        assert len(gc.get_objects(generation=2)) < walked_before / 4
    assert gc.get_freeze_count() == 0
    assert len(gc.get_objects(generation=2)) >= walked_before / 2


def test_memory_a_large_job_freed_goes_back_to_the_system() -> None:
    """Texts over 512 bytes live in malloc's heap: freed, their pages stay in the process's RSS until
    `release_freed_memory` trims the heap (what docdb does after each parse)."""
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("malloc_trim is glibc's")

    def rss_mb() -> int:
        status = Path("/proc/self/status").read_text()
        return int(status.split("VmRSS:")[1].split()[0]) // 1024

    texts = [f"{i:08d}" + "chunk text " * 60 for i in range(200_000)]  # ~130 MB of 668-byte strings
    texts = texts[::1000]  # what a job keeps: every thousandth, scattered through the heap
    freed = rss_mb()
    release_freed_memory()
    assert freed - rss_mb() > 60, (freed, rss_mb())
    assert len(texts) == 200
