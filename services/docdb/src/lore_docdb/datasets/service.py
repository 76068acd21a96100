"""Datasets and their raw files: create, list, upload (simple), delete; mirrored to object storage."""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO

import structlog

from lore_common.stores.objects import ObjectStore
from lore_core.errors import BadRequest, Conflict, LoreError, NotFound
from lore_core.naming import check_name, safe_filename
from lore_docdb.datasets.models import FileEntry, UploadedFile
from lore_docdb.datasets.store import RawFiles
from lore_docdb.tasks.store import TaskStore

log = structlog.get_logger("lore.docdb.datasets")
COPY_BUFFER = 1024 * 1024
STREAM_BUFFER = 1024 * 1024
MAX_PIECES = 512  # below IOV_MAX (1024)


class DatasetNotFound(NotFound):
    def __init__(self, dataset: str) -> None:
        super().__init__(f"dataset {dataset!r} does not exist")


class FileNotInDataset(NotFound):
    def __init__(self, dataset: str, filename: str) -> None:
        super().__init__(f"file {filename!r} does not exist in dataset {dataset!r}")


class ObjectStorageFailed(LoreError):
    status_code = 500


class PayloadTooLarge(LoreError):
    status_code = 413


class DatasetService:
    def __init__(
        self, files: RawFiles, tasks: TaskStore, objects: ObjectStore | None, max_upload_size: int
    ) -> None:
        self.files = files
        self.tasks = tasks
        self.objects = objects
        self.max_upload_size = max_upload_size

    def require(self, dataset: str) -> str:
        check_name("dataset", dataset)
        if not self.files.exists(dataset):
            raise DatasetNotFound(dataset)
        return dataset

    async def list_datasets(self) -> list[str]:
        return await asyncio.to_thread(self.files.list_datasets)

    async def create(self, dataset: str) -> None:
        check_name("dataset", dataset)
        if not await asyncio.to_thread(self.files.create, dataset):
            raise Conflict(f"dataset {dataset!r} already exists")

    async def delete(self, dataset: str) -> None:
        self.require(dataset)
        active = await self.tasks.active_for_dataset(dataset)
        if active:
            ids = ", ".join(t.task_id for t in active[:5])
            raise Conflict(
                f"dataset {dataset!r} has {len(active)} active parse task(s) ({ids}); cancel them or wait",
                detail={"active_tasks": [t.task_id for t in active]},
            )
        await asyncio.to_thread(self.files.delete, dataset)
        if self.objects is not None:
            try:
                removed = await self.objects.delete_prefix(f"{dataset}/")
                log.info("objects_deleted", dataset=dataset, count=removed)
            except Exception as exc:  # best effort: the local data is gone either way
                log.warning("object_prefix_delete_failed", dataset=dataset, error=str(exc))

    async def list_files(self, dataset: str) -> list[FileEntry]:
        self.require(dataset)
        rows = await asyncio.to_thread(self.files.list_files, dataset)
        return [FileEntry(name=name, size=size, modified_time=modified) for name, size, modified in rows]

    async def add_file(self, dataset: str, filename: str, source: IO[bytes]) -> UploadedFile:
        """Copy an uploaded file into the dataset under a free name; mirror it to object storage."""
        name = safe_filename(filename)
        temp = self.files.temp_path(dataset)
        try:
            size = await asyncio.to_thread(_copy_limited, source, temp, self.max_upload_size)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        final = await asyncio.to_thread(self.files.publish, dataset, temp, name)
        await self.mirror(dataset, final)
        return UploadedFile(filename=final, size=size)

    async def publish_merged(self, dataset: str, temp: Path, filename: str) -> UploadedFile:
        """Give a fully written temp file (a completed chunked upload) its final name, then mirror it."""
        size = (await asyncio.to_thread(temp.stat)).st_size
        final = await asyncio.to_thread(self.files.publish, dataset, temp, filename)
        await self.mirror(dataset, final)
        return UploadedFile(filename=final, size=size)

    async def mirror(self, dataset: str, filename: str) -> None:
        """Store the file under `{dataset}/{filename}`; on failure remove the local copy and answer 500."""
        if self.objects is None:
            return
        path = self.files.file_path(dataset, filename)
        try:
            await self.objects.put_file(f"{dataset}/{filename}", path)
        except Exception as exc:
            path.unlink(missing_ok=True)
            log.error("object_upload_failed", dataset=dataset, filename=filename, error=str(exc))
            raise ObjectStorageFailed(
                f"object storage rejected {dataset}/{filename}: {type(exc).__name__}: {exc}; "
                "the local copy was removed, nothing was stored"
            ) from exc

    async def delete_file(self, dataset: str, filename: str) -> None:
        self.require(dataset)
        name = safe_filename(filename)
        if not await asyncio.to_thread(self.files.delete_file, dataset, name):
            raise FileNotInDataset(dataset, name)
        if self.objects is not None:
            try:
                await self.objects.delete(f"{dataset}/{name}")
            except Exception as exc:  # best effort by contract
                log.warning("object_delete_failed", dataset=dataset, filename=name, error=str(exc))


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
