"""Chunked uploads (contract 2.4, 3.3): sessions on disk under `<dataset>/.uploads/<upload_id>/`.

Chunks arrive in any order and in parallel; each is streamed to a temp file and renamed into place
(re-sending a chunk replaces it). Sessions survive a restart. A session untouched for
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
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import structlog

from lore_common.errors import BadRequest, NotFound
from lore_docdb.datasets.models import UploadedFile
from lore_docdb.datasets.service import DatasetService, stream_to_file
from lore_docdb.datasets.store import UPLOADS
from lore_docdb.naming import safe_filename

log = structlog.get_logger("lore.docdb.uploads")
MERGE_BUFFER = 8 * 1024 * 1024
_UPLOAD_ID = re.compile(r"^[0-9a-f]{32}$")
SESSION_FILE = "session.json"


class UploadSession(msgspec.Struct):
    upload_id: str
    dataset: str
    filename: str
    total_chunks: int
    total_size: int
    created_at: str


class UploadSessionNotFound(NotFound):
    def __init__(self, upload_id: str) -> None:
        super().__init__(
            f"upload session {upload_id!r} does not exist (completed, aborted, expired or never created)"
        )


class UploadService:
    def __init__(self, datasets: DatasetService) -> None:
        self.datasets = datasets
        self._locks: dict[str, asyncio.Lock] = {}

    def _session_dir(self, dataset: str, upload_id: str) -> Path:
        if not _UPLOAD_ID.match(upload_id):
            raise UploadSessionNotFound(upload_id)
        return self.datasets.files.dataset_dir(dataset) / UPLOADS / upload_id

    def _load(self, dataset: str, upload_id: str) -> tuple[Path, UploadSession]:
        self.datasets.require(dataset)
        folder = self._session_dir(dataset, upload_id)
        try:
            session = msgspec.json.decode((folder / SESSION_FILE).read_bytes(), type=UploadSession)
        except (FileNotFoundError, NotADirectoryError) as exc:
            raise UploadSessionNotFound(upload_id) from exc
        return folder, session

    async def init(self, dataset: str, filename: str, total_chunks: int, total_size: int) -> UploadSession:
        self.datasets.require(dataset)
        name = safe_filename(filename)
        upload_id = uuid.uuid4().hex
        session = UploadSession(
            upload_id=upload_id,
            dataset=dataset,
            filename=name,
            total_chunks=total_chunks,
            total_size=total_size,
            created_at=datetime.now(UTC).replace(tzinfo=None).isoformat(timespec="seconds"),
        )
        folder = self._session_dir(dataset, upload_id)
        await asyncio.to_thread(_write_session, folder, session)
        return session

    async def put_chunk(self, dataset: str, upload_id: str, index: int, body: AsyncIterator[bytes]) -> int:
        folder, session = self._load(dataset, upload_id)
        if not 0 <= index < session.total_chunks:
            raise BadRequest(
                f"chunk_index {index} is out of range: this upload has chunks 0..{session.total_chunks - 1}"
            )
        temp = folder / f".{index}.{uuid.uuid4().hex}.tmp"
        try:
            size = await stream_to_file(body, temp, limit=session.total_size)
            if size == 0:
                raise BadRequest("chunk body is empty: send the chunk's bytes as the raw request body")
            if not folder.is_dir():  # aborted or completed while this chunk was arriving
                raise UploadSessionNotFound(upload_id)
            await asyncio.to_thread(os.replace, temp, folder / f"{index}.part")
        finally:
            temp.unlink(missing_ok=True)
        return size

    def received(self, dataset: str, upload_id: str) -> list[int]:
        folder = self._session_dir(dataset, upload_id)
        return sorted(int(p.name.split(".")[0]) for p in folder.glob("*.part"))

    async def complete(self, dataset: str, upload_id: str) -> UploadedFile:
        lock = self._locks.setdefault(upload_id, asyncio.Lock())
        try:
            async with lock:
                folder, session = self._load(dataset, upload_id)
                present = set(self.received(dataset, upload_id))
                missing = [i for i in range(session.total_chunks) if i not in present]
                if missing:
                    shown = ", ".join(map(str, missing[:50])) + (" …" if len(missing) > 50 else "")
                    raise BadRequest(
                        f"{len(missing)} of {session.total_chunks} chunks are missing: {shown}",
                        detail={"missing_chunks": missing},
                    )
                temp = self.datasets.files.temp_path(dataset)
                try:
                    size = await asyncio.to_thread(_merge, folder, session.total_chunks, temp)
                    if size != session.total_size:
                        raise BadRequest(
                            f"merged size {size} bytes differs from total_size {session.total_size}; "
                            "re-send the wrong chunks and complete again",
                            detail={"merged_size": size, "total_size": session.total_size},
                        )
                    result = await self.datasets.publish_merged(dataset, temp, session.filename)
                finally:
                    temp.unlink(missing_ok=True)
                await asyncio.to_thread(shutil.rmtree, folder, True)
                return result
        finally:
            if not lock.locked():
                self._locks.pop(upload_id, None)

    async def abort(self, dataset: str, upload_id: str) -> None:
        folder, _ = self._load(dataset, upload_id)
        await asyncio.to_thread(shutil.rmtree, folder, True)

    def sweep(self, ttl_seconds: float) -> int:
        """Remove sessions idle for longer than `ttl_seconds`; returns how many went."""
        cutoff = time.time() - ttl_seconds
        removed = 0
        for dataset in self.datasets.files.list_datasets():
            uploads = self.datasets.files.dataset_dir(dataset) / UPLOADS
            if not uploads.is_dir():
                continue
            for folder in uploads.iterdir():
                with contextlib.suppress(FileNotFoundError):
                    if folder.stat().st_mtime < cutoff:
                        shutil.rmtree(folder, ignore_errors=True)
                        removed += 1
                        log.info("upload_session_expired", dataset=dataset, upload_id=folder.name)
        return removed


def _write_session(folder: Path, session: UploadSession) -> None:
    folder.mkdir(parents=True)
    temp = folder / f".{SESSION_FILE}.tmp"
    temp.write_bytes(msgspec.json.encode(session))
    os.replace(temp, folder / SESSION_FILE)


def _merge(folder: Path, total_chunks: int, target: Path) -> int:
    size = 0
    with target.open("wb") as out:
        for index in range(total_chunks):
            with (folder / f"{index}.part").open("rb") as part:
                while block := part.read(MERGE_BUFFER):
                    out.write(block)
                    size += len(block)
        out.flush()
        os.fsync(out.fileno())
    return size
