"""Chunked uploads on local disk (contract 2.4, 3.3): sessions under `<dataset>/.uploads/<upload_id>/`.

Chunks arrive in any order and in parallel (re-sending a chunk replaces it). A chunk of the expected
size (`ceil(total_size / total_chunks)`, the remainder for the last) is written in place at its offset
in the session's preallocated `data.bin` and marked `<i>.ok`; completing an upload made only of such
chunks is a rename, so each byte reaches the disk once. A chunk of any other size is kept apart as
`<i>.part` and merged at completion. Sessions survive a restart. A session untouched for
`upload_session_ttl` seconds is removed by a periodic sweep (its folder's mtime changes with each chunk).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from lore_common.stores.sql import advisory_lock
from lore_core.clock import utc_iso
from lore_core.errors import BadRequest
from lore_core.files import fsync_path, write_atomic
from lore_core.naming import safe_filename
from lore_docdb.datasets.models import UploadedFile
from lore_docdb.datasets.service import BufferedWriter, DatasetService, stream_to_file
from lore_docdb.datasets.store import UPLOADS, RawFiles
from lore_docdb.uploads.models import (
    UploadProgress,
    Uploads,
    UploadSession,
    UploadSessionNotFound,
    chunk_size_for,
    missing_message,
    progress_of,
)

log = structlog.get_logger("lore.docdb.uploads")
MERGE_BUFFER = 8 * 1024 * 1024
DATA_FILE = "data.bin"
_UPLOAD_ID = re.compile(r"^[0-9a-f]{32}$")
SESSION_FILE = "session.json"


class LocalUploads(Uploads):
    def __init__(self, files: RawFiles, datasets: DatasetService, engine: AsyncEngine | None = None) -> None:
        self.files = files
        self.datasets = datasets
        self._completing = CompleteLock(engine)

    def _session_dir(self, dataset: str, upload_id: str) -> Path:
        if not _UPLOAD_ID.match(upload_id):
            raise UploadSessionNotFound(upload_id)
        return self.files.dataset_dir(dataset) / UPLOADS / upload_id

    async def _load(self, dataset: str, upload_id: str) -> tuple[Path, UploadSession]:
        await self.datasets.require(dataset)
        folder = self._session_dir(dataset, upload_id)
        try:
            session = msgspec.json.decode((folder / SESSION_FILE).read_bytes(), type=UploadSession)
        except (FileNotFoundError, NotADirectoryError) as exc:
            raise UploadSessionNotFound(upload_id) from exc
        return folder, session

    async def init(self, dataset: str, filename: str, total_chunks: int, total_size: int) -> UploadSession:
        await self.datasets.require(dataset)
        name = safe_filename(filename)
        upload_id = uuid.uuid4().hex
        session = UploadSession(
            upload_id=upload_id,
            dataset=dataset,
            filename=name,
            total_chunks=total_chunks,
            total_size=total_size,
            created_at=utc_iso(),
        )
        folder = self._session_dir(dataset, upload_id)
        await asyncio.to_thread(_write_session, folder, session)
        return session

    async def put_chunk(
        self,
        dataset: str,
        upload_id: str,
        index: int,
        body: AsyncIterator[bytes],
        declared: int | None = None,
    ) -> int:
        folder, session = await self._load(dataset, upload_id)
        if not 0 <= index < session.total_chunks:
            raise BadRequest(
                f"chunk_index {index} is out of range: this upload has chunks 0..{session.total_chunks - 1}"
            )
        expected = chunk_size_for(session, index)
        if declared is not None and declared == expected > 0:
            return await self._put_in_place(folder, session, index, expected, body)
        temp = folder / f".{index}.{uuid.uuid4().hex}.tmp"
        try:
            size = await stream_to_file(body, temp, limit=session.total_size)
            if size == 0:
                raise BadRequest("chunk body is empty: send the chunk's bytes as the raw request body")
            if not folder.is_dir():  # aborted or completed while this chunk was arriving
                raise UploadSessionNotFound(upload_id)
            await asyncio.to_thread(os.replace, temp, folder / f"{index}.part")
            (folder / f"{index}.ok").unlink(missing_ok=True)
        finally:
            temp.unlink(missing_ok=True)
        return size

    async def _put_in_place(
        self, folder: Path, session: UploadSession, index: int, expected: int, body: AsyncIterator[bytes]
    ) -> int:
        offset = index * -(-session.total_size // session.total_chunks)
        try:
            fd = await asyncio.to_thread(os.open, folder / DATA_FILE, os.O_WRONLY)
        except FileNotFoundError as exc:
            raise UploadSessionNotFound(session.upload_id) from exc
        received = 0
        try:
            writer = BufferedWriter(fd, offset)
            async for piece in body:
                received += len(piece)
                if received > expected:
                    raise BadRequest(f"chunk {index} is longer than its Content-Length of {expected} bytes")
                await writer.add(piece)
            await writer.flush()
            written = writer.written
        finally:
            await asyncio.to_thread(os.close, fd)
        if written != expected:
            raise BadRequest(f"chunk {index} ended after {written} of its {expected} bytes")
        (folder / f"{index}.ok").touch()
        (folder / f"{index}.part").unlink(missing_ok=True)
        return written

    def received(self, dataset: str, upload_id: str) -> dict[int, str]:
        """Chunk index → how it is stored: "ok" (in place in data.bin) or "part" (its own file)."""
        folder = self._session_dir(dataset, upload_id)
        found: dict[int, str] = {}
        for path in folder.iterdir():
            stem, _, kind = path.name.partition(".")
            if kind in ("ok", "part") and stem.isdigit():
                found[int(stem)] = kind
        return found

    async def progress(self, dataset: str, upload_id: str) -> UploadProgress:
        folder, session = await self._load(dataset, upload_id)
        present = await asyncio.to_thread(self.received, dataset, upload_id)
        sizes = {
            index: chunk_size_for(session, index)
            if kind == "ok"
            else (folder / f"{index}.part").stat().st_size
            for index, kind in present.items()
        }
        return progress_of(session, sizes)

    async def complete(self, dataset: str, upload_id: str) -> UploadedFile:
        async with self._completing(upload_id):
            folder, session = await self._load(dataset, upload_id)
            present = self.received(dataset, upload_id)
            missing = [i for i in range(session.total_chunks) if i not in present]
            if missing:
                raise BadRequest(
                    missing_message(missing, session.total_chunks), detail={"missing_chunks": missing}
                )
            if all(kind == "ok" for kind in present.values()):
                # Every chunk is already in place: the upload is its data file.
                await asyncio.to_thread(fsync_path, folder / DATA_FILE)
                result = await self.datasets.publish(
                    dataset, folder / DATA_FILE, session.filename, session.total_size
                )
                await asyncio.to_thread(shutil.rmtree, folder, True)
                return result
            temp = self.files.temp_path(dataset)
            try:
                size = await asyncio.to_thread(_merge, folder, session, present, temp)
                if size != session.total_size:
                    raise BadRequest(
                        f"merged size {size} bytes differs from total_size {session.total_size}; "
                        "re-send the wrong chunks and complete again",
                        detail={"merged_size": size, "total_size": session.total_size},
                    )
                result = await self.datasets.publish(dataset, temp, session.filename, size)
            finally:
                temp.unlink(missing_ok=True)
            await asyncio.to_thread(shutil.rmtree, folder, True)
            return result

    async def abort(self, dataset: str, upload_id: str) -> None:
        folder, _ = await self._load(dataset, upload_id)
        await asyncio.to_thread(shutil.rmtree, folder, True)

    async def sweep(self, ttl_seconds: float) -> int:
        return await asyncio.to_thread(self._sweep, ttl_seconds)

    def _sweep(self, ttl_seconds: float) -> int:
        cutoff = time.time() - ttl_seconds
        removed = 0
        for dataset in self.files.list_datasets():
            uploads = self.files.dataset_dir(dataset) / UPLOADS
            if not uploads.is_dir():
                continue
            for folder in uploads.iterdir():
                with contextlib.suppress(FileNotFoundError):
                    if folder.stat().st_mtime < cutoff:
                        shutil.rmtree(folder, ignore_errors=True)
                        removed += 1
                        log.info("upload_session_expired", dataset=dataset, upload_id=folder.name)
        return removed


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


def _write_session(folder: Path, session: UploadSession) -> None:
    folder.mkdir(parents=True)
    with (folder / DATA_FILE).open("wb") as data:
        data.truncate(session.total_size)  # sparse: takes no space until chunks land
    write_atomic(folder / SESSION_FILE, msgspec.json.encode(session))


def _merge(folder: Path, session: UploadSession, present: dict[int, str], target: Path) -> int:
    """Concatenate the chunks in order, each from data.bin (in place) or from its own part file."""
    step = -(-session.total_size // session.total_chunks)
    size = 0
    with target.open("wb") as out, (folder / DATA_FILE).open("rb") as data:
        for index in range(session.total_chunks):
            if present[index] == "ok":
                data.seek(index * step)
                left = chunk_size_for(session, index)
                while left and (block := data.read(min(MERGE_BUFFER, left))):
                    out.write(block)
                    size += len(block)
                    left -= len(block)
                continue
            with (folder / f"{index}.part").open("rb") as part:
                while block := part.read(MERGE_BUFFER):
                    out.write(block)
                    size += len(block)
        out.flush()
        os.fsync(out.fileno())
    return size
