"""The object-storage backend of chunked uploads: what replicas without a shared volume use.

Each chunk is the object `{dataset}/.uploads/{upload_id}/{index}` (filenames cannot start with a dot,
so no file collides); the session and the list of received chunks are rows of the relational store
(`UploadSessionStore`). So chunk i may reach replica A, chunk j replica B, and `complete` either.
Completing copies the chunks into the file's object inside the object store (a multipart upload of
server-side part copies) when every chunk but the last has S3's minimum part size; smaller chunks are
joined through a local temp file.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import BinaryIO

import structlog

from lore_common.stores.objects import MIN_PART_SIZE, ObjectStore
from lore_docdb.datasets.files import stream_to_file
from lore_docdb.datasets.models import UploadedFile
from lore_docdb.datasets.objects import ObjectRawStore
from lore_docdb.uploads.models import UploadSession, UploadSessionNotFound
from lore_docdb.uploads.service import check_not_empty
from lore_docdb.uploads.store import UploadSessionStore

log = structlog.get_logger("lore.docdb.uploads")
MERGE_BUFFER = 8 * 1024 * 1024


def _parts_prefix(dataset: str, upload_id: str) -> str:
    return f"{dataset}/.uploads/{upload_id}/"


class ObjectUploads:
    def __init__(self, raw: ObjectRawStore, sessions: UploadSessionStore) -> None:
        self.raw = raw
        self.objects: ObjectStore = raw.objects
        self.sessions = sessions

    async def create(self, session: UploadSession) -> None:
        await self.sessions.add(session)

    async def load(self, dataset: str, upload_id: str) -> UploadSession:
        session = await self.sessions.get(dataset, upload_id)
        if session is None:
            raise UploadSessionNotFound(upload_id)
        return session

    async def put_chunk(
        self, session: UploadSession, index: int, body: AsyncIterator[bytes], declared: int | None
    ) -> int:
        dataset, upload_id = session.dataset, session.upload_id
        temp = self.raw.staging(dataset)
        key = f"{_parts_prefix(dataset, upload_id)}{index}"
        try:
            size = await stream_to_file(body, temp, limit=session.total_size)
            check_not_empty(size)
            await self.objects.put_file(key, temp)
        finally:
            await asyncio.to_thread(temp.unlink, True)
        if not await self.sessions.record_chunk(upload_id, index, size):
            # Completed or aborted while this chunk was arriving.
            await self.objects.delete(key)
            raise UploadSessionNotFound(upload_id)
        return size

    async def sizes(self, session: UploadSession) -> dict[int, int]:
        return await self.sessions.sizes(session.upload_id)

    async def assemble(self, session: UploadSession, sizes: dict[int, int]) -> UploadedFile:
        dataset = session.dataset
        prefix = _parts_prefix(dataset, session.upload_id)
        parts = [f"{prefix}{i}" for i in range(session.total_chunks)]
        in_store = all(sizes[i] >= MIN_PART_SIZE for i in range(session.total_chunks - 1))
        merged = sum(sizes.values())

        async def join(key: str) -> None:
            if in_store:
                await self.objects.concatenate(parts, key)
                return
            temp = self.raw.staging(dataset)
            try:
                await self._join_locally(parts, temp)
                await self.objects.put_file(key, temp)
            finally:
                await asyncio.to_thread(temp.unlink, True)

        name = await self.raw.write(dataset, session.filename, merged, join)
        await self.forget(session)
        return UploadedFile(filename=name, size=merged)

    async def _join_locally(self, parts: list[str], target: Path) -> None:
        piece = target.with_name(target.name + ".part")
        try:
            with target.open("wb") as out:
                for key in parts:
                    await self.objects.download(key, piece)
                    await asyncio.to_thread(_append, piece, out)
        finally:
            piece.unlink(missing_ok=True)

    async def forget(self, session: UploadSession) -> None:
        await self._forget(session.dataset, session.upload_id)

    async def _forget(self, dataset: str, upload_id: str) -> None:
        await self.sessions.delete(upload_id)
        try:
            await self.objects.delete_prefix(_parts_prefix(dataset, upload_id))
        except Exception as exc:  # invisible parts; the bucket's lifecycle rules or a re-run remove them
            log.warning("upload_parts_delete_failed", upload_id=upload_id, error=str(exc))

    async def sweep(self, ttl_seconds: float) -> int:
        idle = await self.sessions.idle(ttl_seconds)
        for dataset, upload_id in idle:
            await self._forget(dataset, upload_id)
            log.info("upload_session_expired", dataset=dataset, upload_id=upload_id)
        return len(idle)


def _append(source: Path, out: BinaryIO) -> None:
    with source.open("rb") as data:
        while block := data.read(MERGE_BUFFER):
            out.write(block)
