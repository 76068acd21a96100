"""Datasets and their raw files: create, list, upload (simple), delete, on the configured raw store."""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import IO

import structlog

from lore_core.errors import BadRequest, Conflict
from lore_core.naming import check_name, safe_filename
from lore_docdb.datasets.errors import DatasetNotFound, FileNotInDataset, PayloadTooLarge
from lore_docdb.datasets.models import FileEntry, UploadedFile
from lore_docdb.datasets.store import RawStore

log = structlog.get_logger("lore.docdb.datasets")
COPY_BUFFER = 1024 * 1024
STREAM_BUFFER = 1024 * 1024
MAX_PIECES = 512  # below IOV_MAX (1024)


class DatasetService:
    def __init__(
        self, *, raw: RawStore, active_parses: Callable[[str], Awaitable[list[str]]], max_upload_size: int
    ) -> None:
        self.raw = raw
        # The ids of the parse tasks still reading a dataset: it cannot be deleted under them.
        self.active_parses = active_parses
        self.max_upload_size = max_upload_size

    async def require(self, dataset: str) -> str:
        check_name("dataset", dataset)
        if not await self.raw.exists(dataset):
            raise DatasetNotFound(dataset)
        return dataset

    async def list_datasets(self) -> list[str]:
        return await self.raw.list_datasets()

    async def create(self, dataset: str) -> None:
        check_name("dataset", dataset)
        if not await self.raw.create(dataset):
            raise Conflict(f"dataset {dataset!r} already exists")

    async def delete(self, dataset: str) -> None:
        await self.require(dataset)
        active = await self.active_parses(dataset)
        if active:
            ids = ", ".join(active[:5])
            raise Conflict(
                f"dataset {dataset!r} has {len(active)} active parse task(s) ({ids}); cancel them or wait",
                detail={"active_tasks": active},
            )
        await self.raw.delete(dataset)

    async def list_files(self, dataset: str) -> list[FileEntry]:
        await self.require(dataset)
        rows = await self.raw.list_files(dataset)
        return [FileEntry(name=name, size=size, modified_time=modified) for name, size, modified in rows]

    async def add_file(self, dataset: str, filename: str, source: IO[bytes]) -> UploadedFile:
        """Copy an uploaded file to a temp file, then store it under a free name."""
        name = safe_filename(filename)
        temp = self.raw.staging(dataset)
        try:
            size = await asyncio.to_thread(_copy_limited, source, temp, self.max_upload_size)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        return await self.publish(dataset, temp, name, size)

    async def publish(self, dataset: str, temp: Path, filename: str, size: int) -> UploadedFile:
        """Store a fully written temp file (consumed) under a free name."""
        final = await self.raw.publish(dataset, temp, filename)
        return UploadedFile(filename=final, size=size)

    async def delete_file(self, dataset: str, filename: str) -> None:
        await self.require(dataset)
        name = safe_filename(filename)
        if not await self.raw.delete_file(dataset, name):
            raise FileNotInDataset(dataset, name)


def _copy_limited(source: IO[bytes], target: Path, limit: int) -> int:
    size = 0
    with target.open("wb") as out:
        while chunk := source.read(COPY_BUFFER):
            size += len(chunk)
            if size > limit:
                raise PayloadTooLarge(
                    f"file is larger than the simple-upload limit of {limit} bytes; use chunked upload"
                )
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
