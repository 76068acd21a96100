"""Chunked uploads: wire shapes, the session, and the tables of the object-storage backend's sessions
(SQL in store.py); see docs/docdb.md."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec
from sqlalchemy import BigInteger
from sqlmodel import Field, SQLModel

from lore_core.clock import utcnow
from lore_core.errors import NotFound
from lore_docdb.datasets.models import UploadedFile
from lore_docdb.envelope import Success


class InitUpload(msgspec.Struct, forbid_unknown_fields=True):
    filename: Annotated[str, msgspec.Meta(min_length=1, max_length=255)]
    total_chunks: Annotated[int, msgspec.Meta(ge=1, le=10000)]
    total_size: Annotated[int, msgspec.Meta(ge=1)]


class UploadSession(msgspec.Struct):
    upload_id: str
    dataset: str
    filename: str
    total_chunks: int
    total_size: int
    created_at: str


class UploadProgress(msgspec.Struct, kw_only=True):
    """What a client needs to resume: the chunks the server holds (it sends the others)."""

    upload_id: str
    filename: str
    total_chunks: int
    total_size: int
    created_at: str
    received_chunks: list[int]
    received_bytes: int


class UploadStatus(Success, kw_only=True):
    message: str
    data: UploadProgress


class UploadInfo(msgspec.Struct, kw_only=True):
    upload_id: str
    filename: str
    total_chunks: int
    total_size: int
    created_at: str


class UploadStarted(Success, kw_only=True):
    message: str
    upload_id: str
    data: UploadInfo


class ChunkInfo(msgspec.Struct, kw_only=True):
    upload_id: str
    chunk_index: int
    size: int


class ChunkStored(Success, kw_only=True):
    message: str
    data: ChunkInfo


class UploadCompleted(Success, kw_only=True):
    message: str
    data: UploadedFile


class UploadRef(msgspec.Struct):
    upload_id: str


class UploadAborted(Success, kw_only=True):
    message: str
    data: UploadRef


class UploadSessionNotFound(NotFound):
    def __init__(self, upload_id: str) -> None:
        super().__init__(
            f"upload session {upload_id!r} does not exist (completed, aborted, expired or never created)"
        )


def chunk_size_for(session: UploadSession, index: int) -> int:
    """The size a chunk has when the client splits the file evenly (the usual way)."""
    step = -(-session.total_size // session.total_chunks)
    if index < session.total_chunks - 1:
        return step
    return session.total_size - step * (session.total_chunks - 1)


def progress_of(session: UploadSession, sizes: dict[int, int]) -> UploadProgress:
    return UploadProgress(
        upload_id=session.upload_id,
        filename=session.filename,
        total_chunks=session.total_chunks,
        total_size=session.total_size,
        created_at=session.created_at,
        received_chunks=sorted(sizes),
        received_bytes=sum(sizes.values()),
    )


def missing_message(missing: list[int], total: int) -> str:
    shown = ", ".join(map(str, missing[:50])) + (" …" if len(missing) > 50 else "")
    return f"{len(missing)} of {total} chunks are missing: {shown}"


# ------------------------------------------------------------ tables (SQL lives in store.py)


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
