"""Chunked uploads: one set of rules (see docs/docdb.md) over two storage backends.

The rules live here: the dataset must exist, the file name is made safe (and renamed `<name>_<n>` when
taken, by the raw store), a chunk index must be in range and a chunk must not be empty, completion needs
every chunk and exactly `total_size` bytes, and two completions of one upload never merge twice. Where
sessions and chunks are kept is the backend's business: `DiskUploads` (uploads/disk.py) under the
dataset's hidden `.uploads/` folder, `ObjectUploads` (uploads/objects.py) in object storage with the
sessions in the relational store. Idle sessions are swept after `upload_session_ttl` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncEngine

from lore_common.stores.sql import advisory_lock
from lore_core.clock import utc_iso
from lore_core.errors import BadRequest
from lore_core.naming import safe_filename
from lore_docdb.datasets.models import UploadedFile
from lore_docdb.datasets.service import DatasetService
from lore_docdb.uploads.models import UploadProgress, UploadSession, missing_message, progress_of


class UploadBackend(Protocol):
    """Where a storage keeps upload sessions and their chunks; the rules are `UploadService`'s."""

    async def create(self, session: UploadSession) -> None: ...

    async def load(self, dataset: str, upload_id: str) -> UploadSession:
        """The session; `UploadSessionNotFound` when there is none (completed, aborted, expired)."""
        ...

    async def put_chunk(
        self, session: UploadSession, index: int, body: AsyncIterator[bytes], declared: int | None
    ) -> int:
        """Store chunk `index` (replacing an earlier copy); returns its size. `declared` is the request's
        Content-Length when it gave one."""
        ...

    async def sizes(self, session: UploadSession) -> dict[int, int]:
        """Chunk index -> size, for each chunk held."""
        ...

    async def assemble(self, session: UploadSession, sizes: dict[int, int]) -> UploadedFile:
        """Join the (complete, checked) chunks into the dataset's file, then forget the session."""
        ...

    async def forget(self, session: UploadSession) -> None: ...

    async def sweep(self, ttl_seconds: float) -> int:
        """Remove sessions idle for longer than `ttl_seconds`; returns how many went."""
        ...


def check_chunk_index(session: UploadSession, index: int) -> None:
    if not 0 <= index < session.total_chunks:
        raise BadRequest(
            f"chunk_index {index} is out of range: this upload has chunks 0..{session.total_chunks - 1}"
        )


def check_not_empty(size: int) -> None:
    """A backend calls this once a chunk has arrived, before it keeps it."""
    if size == 0:
        raise BadRequest("chunk body is empty: send the chunk's bytes as the raw request body")


class UploadService:
    def __init__(
        self, *, backend: UploadBackend, datasets: DatasetService, engine: AsyncEngine | None
    ) -> None:
        self.backend = backend
        self.datasets = datasets
        self._completing = CompleteLock(engine)

    async def _load(self, dataset: str, upload_id: str) -> UploadSession:
        await self.datasets.require(dataset)
        return await self.backend.load(dataset, upload_id)

    async def init(self, dataset: str, filename: str, total_chunks: int, total_size: int) -> UploadSession:
        await self.datasets.require(dataset)
        session = UploadSession(
            upload_id=uuid.uuid4().hex,
            dataset=dataset,
            filename=safe_filename(filename),
            total_chunks=total_chunks,
            total_size=total_size,
            created_at=utc_iso(),
        )
        await self.backend.create(session)
        return session

    async def put_chunk(
        self,
        dataset: str,
        upload_id: str,
        index: int,
        body: AsyncIterator[bytes],
        declared: int | None = None,
    ) -> int:
        session = await self._load(dataset, upload_id)
        check_chunk_index(session, index)
        return await self.backend.put_chunk(session, index, body, declared)

    async def progress(self, dataset: str, upload_id: str) -> UploadProgress:
        session = await self._load(dataset, upload_id)
        return progress_of(session, await self.backend.sizes(session))

    async def complete(self, dataset: str, upload_id: str) -> UploadedFile:
        async with self._completing(upload_id):
            session = await self._load(dataset, upload_id)
            sizes = await self.backend.sizes(session)
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
            return await self.backend.assemble(session, sizes)

    async def abort(self, dataset: str, upload_id: str) -> None:
        await self.backend.forget(await self._load(dataset, upload_id))

    async def sweep(self, ttl_seconds: float) -> int:
        return await self.backend.sweep(ttl_seconds)


class CompleteLock:
    """A `complete` may arrive twice at once, at one replica or at two: one merges while the other
    waits, then finds the session gone (404). A local lock, and on PostgreSQL an advisory lock."""

    def __init__(self, engine: AsyncEngine | None) -> None:
        self.engine = engine
        self._locks: dict[str, asyncio.Lock] = {}

    @contextlib.asynccontextmanager
    async def __call__(self, upload_id: str) -> AsyncIterator[None]:
        lock = self._locks.setdefault(upload_id, asyncio.Lock())
        shared = (
            advisory_lock(self.engine, f"upload:{upload_id}")
            if self.engine is not None
            else contextlib.nullcontext()
        )
        try:
            async with lock, shared:
                yield
        finally:
            if not lock.locked():
                self._locks.pop(upload_id, None)
