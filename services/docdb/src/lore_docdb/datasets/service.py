"""Datasets and their raw files: create, list, upload (simple), delete, on the configured raw store."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import IO

import structlog

from lore_core.errors import Conflict
from lore_core.naming import check_name, safe_filename
from lore_docdb.datasets.errors import DatasetNotFound, FileNotInDataset
from lore_docdb.datasets.files import copy_limited, stream_hashed
from lore_docdb.datasets.models import FileEntry, PutFileInfo, UploadedFile
from lore_docdb.datasets.paths import flatten, path_of
from lore_docdb.datasets.raw import RawStore

log = structlog.get_logger("lore.docdb.datasets")


class DatasetService:
    def __init__(
        self, *, raw: RawStore, active_parses: Callable[[str], Awaitable[list[str]]], max_upload_size: int
    ) -> None:
        self.raw = raw
        # The ids of the parse tasks still reading a dataset: it cannot be deleted under them.
        self.active_parses = active_parses
        self.max_upload_size = max_upload_size
        # Called with a dataset's name once it is deleted (domains above this one forget what they keep
        # about it: its source), wired in app.py.
        self.on_deleted: list[Callable[[str], Awaitable[None]]] = []

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
        for forget in self.on_deleted:
            await forget(dataset)

    async def list_files(self, dataset: str) -> list[FileEntry]:
        await self.require(dataset)
        rows = await self.raw.list_files(dataset)
        hashes = await self.raw.hashes(dataset)
        return [
            FileEntry(
                name=name, size=size, modified_time=modified, path=path_of(name), sha256=hashes.get(name)
            )
            for name, size, modified in rows
        ]

    async def put_file(self, dataset: str, path: str, body: AsyncIterator[bytes]) -> PutFileInfo:
        """Write the file at `path` (a new file, or the new version of the file there); the same
        content as the file there writes nothing."""
        await self.require(dataset)
        name = flatten(path)
        temp = self.raw.staging(dataset)
        try:
            size, digest = await stream_hashed(body, temp, self.max_upload_size)
            if await self.raw.hash_of(dataset, name) == digest:
                status = "unchanged"
            else:
                status = "replaced" if await self.raw.replace(dataset, temp, name, digest) else "added"
        finally:
            temp.unlink(missing_ok=True)
        log.info("file_put", dataset=dataset, filename=name, status=status, size=size)
        return PutFileInfo(name=name, path=path_of(name), size=size, sha256=digest, status=status)

    async def add_file(self, dataset: str, filename: str, source: IO[bytes]) -> UploadedFile:
        """Copy an uploaded file to a temp file, then store it under a free name."""
        name = safe_filename(filename)
        temp = self.raw.staging(dataset)
        try:
            size = await asyncio.to_thread(copy_limited, source, temp, self.max_upload_size)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        return await self.publish(dataset, temp, name, size)

    async def publish(self, dataset: str, temp: Path, filename: str, size: int) -> UploadedFile:
        """Store a fully written temp file (consumed) under a free name."""
        final = await self.raw.publish(dataset, temp, filename)
        return UploadedFile(filename=final, size=size)

    async def source(self, dataset: str, filename: str) -> Path | str:
        """The file's local path or a presigned URL of it: 404 when the dataset or the file is not there."""
        await self.require(dataset)
        name = safe_filename(filename)
        found = await self.raw.source(dataset, name)
        if found is None:
            raise FileNotInDataset(dataset, name)
        return found

    async def delete_file(self, dataset: str, filename: str) -> None:
        await self.require(dataset)
        name = safe_filename(filename)
        if not await self.raw.delete_file(dataset, name):
            raise FileNotInDataset(dataset, name)
