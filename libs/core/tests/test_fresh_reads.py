"""FreshReads: callers asking together share a read, and none gets a read that began before it asked."""

from __future__ import annotations

import asyncio

from lore_core.tasks import FreshReads


async def test_concurrent_callers_share_reads_and_never_get_an_older_value() -> None:
    value = {"kb": 0}
    started: list[int] = []

    async def read(key: str) -> int:
        started.append(value[key])
        seen = value[key]
        await asyncio.sleep(0.01)
        return seen

    reads = FreshReads(read)
    assert await asyncio.gather(*(reads.get("kb") for _ in range(32))) == [0] * 32
    assert len(started) == 1

    # A read is running (it saw 0); the value changes; a caller arriving now must not get that read.
    first = asyncio.ensure_future(reads.get("kb"))
    await asyncio.sleep(0.002)  # its read has begun
    value["kb"] = 1
    late = await asyncio.gather(*(reads.get("kb") for _ in range(8)))
    assert await first == 0 and late == [1] * 8
    assert len(started) == 3  # one for the first, one shared by the eight that came after

    async def broken(key: str) -> int:
        raise ConnectionError("database down")

    failing = FreshReads(broken)
    results = await asyncio.gather(*(failing.get("kb") for _ in range(3)), return_exceptions=True)
    assert all(isinstance(r, ConnectionError) for r in results)
