"""Chunked uploads in object storage: what replicas without a shared volume use.

The session and the list of received chunks are rows of the relational store; each chunk is the object
`{dataset}/.uploads/{upload_id}/{index}` (filenames cannot start with a dot, so no file collides). So
chunk i may reach replica A, chunk j replica B, and `complete` either. Completing copies the chunks
into the file's object inside the object store (a multipart upload of server-side part copies) when
every chunk but the last has S3's minimum part size; smaller chunks are joined through a local temp file.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import BinaryIO

import structlog
from sqlalchemy import BigInteger, delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel import Field, SQLModel

from lore_common.stores.objects import MIN_PART_SIZE, ObjectStore
from lore_core.clock import iso, utcnow
from lore_core.errors import BadRequest
from lore_core.naming import safe_filename
from lore_docdb.datasets.models import UploadedFile
from lore_docdb.datasets.objects import ObjectRawStore
from lore_docdb.datasets.service import DatasetService, stream_to_file
from lore_docdb.uploads.models import (
    UploadProgress,
    Uploads,
    UploadSession,
    UploadSessionNotFound,
    missing_message,
    progress_of,
)
from lore_docdb.uploads.service import CompleteLock

log = structlog.get_logger("lore.docdb.uploads")
MERGE_BUFFER = 8 * 1024 * 1024


class UploadSessionRow(SQLModel, table=True):
    __tablename__ = "upload_sessions"

    upload_id: str = Field(primary_key=True, max_length=32)
    dataset: str = Field(max_length=64)
    filename: str = Field(max_length=255)
    total_chunks: int
    total_size: int = Field(sa_type=BigInteger)
    created_at: datetime = Field(default_factory=utcnow)
    touched_at: datetime = Field(default_factory=utcnow, index=True)


class UploadChunkRow(SQLModel, table=True):
    __tablename__ = "upload_chunks"

    upload_id: str = Field(primary_key=True, max_length=32)
    chunk_index: int = Field(primary_key=True)
    size: int = Field(sa_type=BigInteger)


_SESSIONS = UploadSessionRow.__table__  # type: ignore[attr-defined]
_CHUNKS = UploadChunkRow.__table__  # type: ignore[attr-defined]


def _parts_prefix(dataset: str, upload_id: str) -> str:
    return f"{dataset}/.uploads/{upload_id}/"


class ObjectUploads(Uploads):
    def __init__(self, raw: ObjectRawStore, datasets: DatasetService, engine: AsyncEngine) -> None:
        self.raw = raw
        self.objects: ObjectStore = raw.objects
        self.datasets = datasets
        self.engine = engine
        self._completing = CompleteLock(engine)

    async def _load(self, dataset: str, upload_id: str) -> UploadSession:
        await self.datasets.require(dataset)
        async with self.engine.connect() as connection:
            row = (
                await connection.execute(
                    select(_SESSIONS).where(
                        _SESSIONS.c.upload_id == upload_id, _SESSIONS.c.dataset == dataset
                    )
                )
            ).first()
        if row is None:
            raise UploadSessionNotFound(upload_id)
        return UploadSession(
            upload_id=row.upload_id,
            dataset=row.dataset,
            filename=row.filename,
            total_chunks=row.total_chunks,
            total_size=int(row.total_size),
            created_at=iso(row.created_at),
        )

    async def init(self, dataset: str, filename: str, total_chunks: int, total_size: int) -> UploadSession:
        await self.datasets.require(dataset)
        name = safe_filename(filename)
        now = utcnow()
        upload_id = uuid.uuid4().hex
        async with self.engine.begin() as connection:
            await connection.execute(
                _SESSIONS.insert().values(
                    upload_id=upload_id,
                    dataset=dataset,
                    filename=name,
                    total_chunks=total_chunks,
                    total_size=total_size,
                    created_at=now,
                    touched_at=now,
                )
            )
        return UploadSession(
            upload_id=upload_id,
            dataset=dataset,
            filename=name,
            total_chunks=total_chunks,
            total_size=total_size,
            created_at=iso(now),
        )

    async def put_chunk(
        self,
        dataset: str,
        upload_id: str,
        index: int,
        body: AsyncIterator[bytes],
        declared: int | None = None,
    ) -> int:
        session = await self._load(dataset, upload_id)
        if not 0 <= index < session.total_chunks:
            raise BadRequest(
                f"chunk_index {index} is out of range: this upload has chunks 0..{session.total_chunks - 1}"
            )
        temp = self.raw.staging(dataset)
        key = f"{_parts_prefix(dataset, upload_id)}{index}"
        try:
            size = await stream_to_file(body, temp, limit=session.total_size)
            if size == 0:
                raise BadRequest("chunk body is empty: send the chunk's bytes as the raw request body")
            await self.objects.put_file(key, temp)
        finally:
            await asyncio.to_thread(temp.unlink, True)
        dialect = postgresql if self.engine.dialect.name == "postgresql" else sqlite
        async with self.engine.begin() as connection:
            touched = await connection.execute(
                update(_SESSIONS).where(_SESSIONS.c.upload_id == upload_id).values(touched_at=utcnow())
            )
            if touched.rowcount:
                await connection.execute(
                    dialect.insert(_CHUNKS)
                    .values(upload_id=upload_id, chunk_index=index, size=size)
                    .on_conflict_do_update(index_elements=["upload_id", "chunk_index"], set_={"size": size})
                )
        if not touched.rowcount:  # completed or aborted while this chunk was arriving
            await self.objects.delete(key)
            raise UploadSessionNotFound(upload_id)
        return size

    async def _sizes(self, upload_id: str) -> dict[int, int]:
        async with self.engine.connect() as connection:
            rows = await connection.execute(
                select(_CHUNKS.c.chunk_index, _CHUNKS.c.size).where(_CHUNKS.c.upload_id == upload_id)
            )
            return {int(index): int(size) for index, size in rows}

    async def progress(self, dataset: str, upload_id: str) -> UploadProgress:
        session = await self._load(dataset, upload_id)
        return progress_of(session, await self._sizes(upload_id))

    async def complete(self, dataset: str, upload_id: str) -> UploadedFile:
        async with self._completing(upload_id):
            session = await self._load(dataset, upload_id)
            sizes = await self._sizes(upload_id)
            missing = [i for i in range(session.total_chunks) if i not in sizes]
            if missing:
                raise BadRequest(
                    missing_message(missing, session.total_chunks), detail={"missing_chunks": missing}
                )
            merged = sum(sizes.values())
            if merged != session.total_size:
                raise BadRequest(
                    f"merged size {merged} bytes differs from total_size {session.total_size}; "
                    "re-send the wrong chunks and complete again",
                    detail={"merged_size": merged, "total_size": session.total_size},
                )
            prefix = _parts_prefix(dataset, upload_id)
            parts = [f"{prefix}{i}" for i in range(session.total_chunks)]
            in_store = all(sizes[i] >= MIN_PART_SIZE for i in range(session.total_chunks - 1))

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
            await self._forget(dataset, upload_id)
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

    async def abort(self, dataset: str, upload_id: str) -> None:
        await self._load(dataset, upload_id)
        await self._forget(dataset, upload_id)

    async def _forget(self, dataset: str, upload_id: str) -> None:
        async with self.engine.begin() as connection:
            await connection.execute(delete(_CHUNKS).where(_CHUNKS.c.upload_id == upload_id))
            await connection.execute(delete(_SESSIONS).where(_SESSIONS.c.upload_id == upload_id))
        try:
            await self.objects.delete_prefix(_parts_prefix(dataset, upload_id))
        except Exception as exc:  # invisible parts; the bucket's lifecycle rules or a re-run remove them
            log.warning("upload_parts_delete_failed", upload_id=upload_id, error=str(exc))

    async def sweep(self, ttl_seconds: float) -> int:
        cutoff = utcnow() - timedelta(seconds=ttl_seconds)
        async with self.engine.connect() as connection:
            idle = (
                await connection.execute(
                    select(_SESSIONS.c.dataset, _SESSIONS.c.upload_id).where(_SESSIONS.c.touched_at < cutoff)
                )
            ).all()
        for dataset, upload_id in idle:
            await self._forget(dataset, upload_id)
            log.info("upload_session_expired", dataset=dataset, upload_id=upload_id)
        return len(idle)


def _append(source: Path, out: BinaryIO) -> None:
    with source.open("rb") as data:
        while block := data.read(MERGE_BUFFER):
            out.write(block)
