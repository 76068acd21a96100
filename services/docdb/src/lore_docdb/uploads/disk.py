"""The disk backend of chunked uploads: sessions under `<dataset>/.uploads/<upload_id>/`.

Chunks arrive in any order and in parallel (re-sending a chunk replaces it). A chunk of the expected
size (`ceil(total_size / total_chunks)`, the remainder for the last) is written in place at its offset
in the session's preallocated `data.bin` and marked `<i>.ok`; completing an upload made only of such
chunks is a rename, so each byte reaches the disk once. A chunk of any other size is kept apart as
`<i>.part` and merged at completion. Sessions survive a restart; a session's folder mtime changes with
each chunk, which is what the sweep of idle sessions reads.
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

from lore_core.errors import BadRequest
from lore_core.files import fsync_path, write_atomic
from lore_docdb.datasets.disk import UPLOADS, RawFiles
from lore_docdb.datasets.files import BufferedWriter, stream_to_file
from lore_docdb.datasets.models import UploadedFile
from lore_docdb.uploads.models import UploadSession, UploadSessionNotFound, chunk_size_for
from lore_docdb.uploads.service import check_not_empty

log = structlog.get_logger("lore.docdb.uploads")
MERGE_BUFFER = 8 * 1024 * 1024
DATA_FILE = "data.bin"
_UPLOAD_ID = re.compile(r"^[0-9a-f]{32}$")
SESSION_FILE = "session.json"


class DiskUploads:
    def __init__(self, files: RawFiles) -> None:
        self.files = files

    def _session_dir(self, dataset: str, upload_id: str) -> Path:
        if not _UPLOAD_ID.match(upload_id):
            raise UploadSessionNotFound(upload_id)
        return self.files.dataset_dir(dataset) / UPLOADS / upload_id

    async def create(self, session: UploadSession) -> None:
        folder = self._session_dir(session.dataset, session.upload_id)
        await asyncio.to_thread(_write_session, folder, session)

    async def load(self, dataset: str, upload_id: str) -> UploadSession:
        folder = self._session_dir(dataset, upload_id)
        try:
            return msgspec.json.decode((folder / SESSION_FILE).read_bytes(), type=UploadSession)
        except (FileNotFoundError, NotADirectoryError) as exc:
            raise UploadSessionNotFound(upload_id) from exc

    async def put_chunk(
        self, session: UploadSession, index: int, body: AsyncIterator[bytes], declared: int | None
    ) -> int:
        folder = self._session_dir(session.dataset, session.upload_id)
        expected = chunk_size_for(session, index)
        if declared is not None and declared == expected > 0:
            return await self._put_in_place(folder, session, index, expected, body)
        temp = folder / f".{index}.{uuid.uuid4().hex}.tmp"
        try:
            size = await stream_to_file(body, temp, limit=session.total_size)
            check_not_empty(size)
            if not folder.is_dir():  # aborted or completed while this chunk was arriving
                raise UploadSessionNotFound(session.upload_id)
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

    def _received(self, folder: Path) -> dict[int, str]:
        """Chunk index -> how it is stored: "ok" (in place in data.bin) or "part" (its own file)."""
        found: dict[int, str] = {}
        for path in folder.iterdir():
            stem, _, kind = path.name.partition(".")
            if kind in ("ok", "part") and stem.isdigit():
                found[int(stem)] = kind
        return found

    async def sizes(self, session: UploadSession) -> dict[int, int]:
        folder = self._session_dir(session.dataset, session.upload_id)
        present = await asyncio.to_thread(self._received, folder)
        return {
            index: chunk_size_for(session, index)
            if kind == "ok"
            else (folder / f"{index}.part").stat().st_size
            for index, kind in present.items()
        }

    async def assemble(self, session: UploadSession, sizes: dict[int, int]) -> UploadedFile:
        dataset = session.dataset
        folder = self._session_dir(dataset, session.upload_id)
        present = self._received(folder)
        if all(kind == "ok" for kind in present.values()):
            # Every chunk is already in place: the upload is its data file.
            await asyncio.to_thread(fsync_path, folder / DATA_FILE)
            name = await asyncio.to_thread(self.files.publish, dataset, folder / DATA_FILE, session.filename)
            await asyncio.to_thread(shutil.rmtree, folder, True)
            return UploadedFile(filename=name, size=session.total_size)
        temp = self.files.temp_path(dataset)
        try:
            size = await asyncio.to_thread(_merge, folder, session, present, temp)
            name = await asyncio.to_thread(self.files.publish, dataset, temp, session.filename)
        finally:
            temp.unlink(missing_ok=True)
        await asyncio.to_thread(shutil.rmtree, folder, True)
        return UploadedFile(filename=name, size=size)

    async def forget(self, session: UploadSession) -> None:
        folder = self._session_dir(session.dataset, session.upload_id)
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
