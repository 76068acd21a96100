"""Writing request bodies to local files: bounded copies, vectored writes, streaming without holding a
body in memory. Both raw-file backends and both upload backends write through these."""

from __future__ import annotations

import asyncio
import errno
import hashlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO

from lore_core.errors import BadRequest
from lore_docdb.datasets.errors import PayloadTooLarge

MIB = 1024 * 1024
COPY_BUFFER = 1024 * 1024
STREAM_BUFFER = 1024 * 1024
MAX_PIECES = 512  # below IOV_MAX (1024)


def too_large(limit: int) -> PayloadTooLarge:
    """The 413 of a file over the limit of one request: the limit, and the upload without one."""
    shown = f"{limit // MIB} MiB" if limit >= MIB and limit % MIB == 0 else f"{limit:,} bytes"
    return PayloadTooLarge(
        f"the file is larger than {shown}, the most one request may send (docdb.max_upload_size); "
        "send it in chunks, which have no size limit: POST …/datasets/{dataset}/upload/init, each "
        "chunk, then …/complete (lore ingest and the client's upload() do so)"
    )


def copy_limited(source: IO[bytes], target: Path, limit: int) -> int:
    size = 0
    with target.open("wb") as out:
        while chunk := source.read(COPY_BUFFER):
            size += len(chunk)
            if size > limit:
                raise too_large(limit)
            out.write(chunk)
        out.flush()
    return size


def write_all(fd: int, pieces: list[bytes], offset: int | None = None) -> int:
    """Write `pieces` in order with one vectored call (no joined copy), resuming after a short write."""
    total = sum(len(p) for p in pieces)
    done = 0
    views = [memoryview(p) for p in pieces if p]
    while views:
        n = os.writev(fd, views) if offset is None else os.pwritev(fd, views, offset + done)
        if n == 0:
            raise OSError(errno.ENOSPC, "no space left on device")
        done += n
        while views and n >= len(views[0]):
            n -= len(views[0])
            views.pop(0)
        if n:
            views[0] = views[0][n:]
    return total


class BufferedWriter:
    """Collects a request body's pieces and writes them a few MiB at a time in a worker thread: one thread
    hop and one `writev` per buffer instead of one per network read, and no copy into a joined buffer."""

    def __init__(self, fd: int, offset: int | None = None) -> None:
        self.fd = fd
        self.offset = offset
        self.pieces: list[bytes] = []
        self.pending = 0
        self.written = 0

    async def add(self, piece: bytes) -> None:
        if not piece:
            return
        self.pieces.append(piece)
        self.pending += len(piece)
        if self.pending >= STREAM_BUFFER or len(self.pieces) >= MAX_PIECES:
            await self.flush()

    async def flush(self) -> None:
        if not self.pieces:
            return
        pieces, self.pieces, self.pending = self.pieces, [], 0
        offset = None if self.offset is None else self.offset + self.written
        self.written += await asyncio.to_thread(write_all, self.fd, pieces, offset)


async def stream_to_file(stream: AsyncIterator[bytes], target: Path, limit: int | None = None) -> int:
    """Write a request body to `target` chunk by chunk (never whole in memory); returns its size."""
    size = 0
    fd = await asyncio.to_thread(os.open, target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        writer = BufferedWriter(fd)
        async for chunk in stream:
            size += len(chunk)
            if limit is not None and size > limit:
                raise BadRequest(f"chunk is larger than the upload's total_size of {limit} bytes")
            await writer.add(chunk)
        await writer.flush()
    finally:
        await asyncio.to_thread(os.close, fd)
    return size


async def stream_hashed(stream: AsyncIterator[bytes], target: Path, limit: int) -> tuple[int, str]:
    """Write a request body to `target` as it arrives, hashing it on the way; returns its size and
    sha256. A body over `limit` bytes is a 413 (nothing is kept: the caller removes `target`)."""
    size = 0
    digest = hashlib.sha256()
    fd = await asyncio.to_thread(os.open, target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        writer = BufferedWriter(fd)
        async for chunk in stream:
            size += len(chunk)
            if size > limit:
                raise too_large(limit)
            digest.update(chunk)
            await writer.add(chunk)
        await writer.flush()
        await asyncio.to_thread(os.fsync, fd)
    finally:
        await asyncio.to_thread(os.close, fd)
    return size, digest.hexdigest()
