"""`upload()`: small files in one simple upload, large ones in parallel chunks, resumable. An interrupted
chunked upload is remembered in a small state file (per server, dataset, file, size, mtime and chunk
size); the next `upload()` of the same file asks the server which chunks it holds and sends the rest."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from lore_client._docdb import Docdb
from lore_client.errors import NotFound, ServerError, Unreachable
from lore_client.models import PutFileResult, UploadedFile, UploadEvent

MIB = 1024 * 1024
BATCH_FILES, BATCH_BYTES = 32, 16 * MIB  # at most per simple-upload request (held in memory)
ProgressCallback = Callable[[UploadEvent], None]


def default_state_dir() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "lore-client" / "uploads"


def expand(paths: Iterable[str | Path]) -> list[Path]:
    """Files as given; folders walked recursively (hidden entries skipped), in a stable order."""
    found: list[Path] = []
    for entry in map(Path, paths):
        if entry.is_dir():
            found.extend(
                p
                for p in sorted(entry.rglob("*"))
                if p.is_file() and not any(part.startswith(".") for part in p.relative_to(entry).parts)
            )
        elif entry.is_file():
            found.append(entry)
        else:
            raise FileNotFoundError(f"{entry}: no such file or folder")
    return found


def stored_name(path: str) -> str:
    """The name docdb stores a dataset path under: `%` as `%25`, then `/` as `%2F`
    (`guide/README.md` is `guide%2FREADME.md`)."""
    return "%2F".join(part.replace("%", "%25") for part in path.strip("/").split("/"))


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(MIB):
            digest.update(block)
    return digest.hexdigest()


def _read(path: Path, offset: int, size: int) -> bytes:
    with path.open("rb") as handle:
        handle.seek(offset)
        return handle.read(size)


class _File(msgspec.Struct, frozen=True):
    """A file to send, with what identifies this version of it for resuming."""

    path: Path
    size: int
    identity: str

    @classmethod
    def of(cls, path: Path, scope: str) -> _File:
        info = path.stat()
        return cls(path, info.st_size, f"{scope}|{path.resolve()}|{info.st_size}|{info.st_mtime_ns}")

    def event(self, sent: int, **fields: Any) -> UploadEvent:
        return UploadEvent(
            path=str(self.path), filename=self.path.name, sent_bytes=sent, total_bytes=self.size, **fields
        )


def _batches(files: list[_File]) -> Iterator[list[_File]]:
    batch: list[_File] = []
    for file in files:
        if batch and (len(batch) == BATCH_FILES or sum(f.size for f in batch) + file.size > BATCH_BYTES):
            yield batch
            batch = []
        batch.append(file)
    if batch:
        yield batch


class _ResumeState:
    """The state file of one chunked upload: its upload_id, kept until the upload completes."""

    def __init__(self, folder: Path, identity: str) -> None:
        self.path = folder / f"{hashlib.sha256(identity.encode()).hexdigest()[:32]}.json"

    def load(self) -> str | None:
        try:
            return str(json.loads(self.path.read_text())["upload_id"])
        except (OSError, ValueError, KeyError):
            return None

    def save(self, upload_id: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temp = self.path.with_suffix(".tmp")
        temp.write_text(json.dumps({"upload_id": upload_id}))
        os.replace(temp, self.path)

    def forget(self) -> None:
        self.path.unlink(missing_ok=True)


class Uploader(Docdb):
    async def upload(
        self,
        dataset: str,
        paths: Iterable[str | Path],
        *,
        chunk_size: int = 8 * MIB,
        parallel: int = 4,
        on_progress: ProgressCallback | None = None,
        state_dir: str | Path | None = None,
    ) -> list[UploadedFile]:
        """Upload files (folders recursively) into `dataset`, in the order given. Files up to
        `chunk_size` go in simple uploads; larger ones in `chunk_size` chunks on `parallel` streams,
        resumed from the chunks the server holds when an earlier upload of the same file was cut
        (the upload ids are kept in `state_dir`, default `~/.cache/lore-client/uploads`).
        Returns each file's name as stored (a taken name becomes `<name>_<n>.<ext>`)."""
        if chunk_size < 1 or parallel < 1:
            raise ValueError("chunk_size and parallel must be at least 1")
        scope = f"{self.base_url}|{dataset}|{chunk_size}"
        files = await asyncio.to_thread(lambda: [_File.of(p, scope) for p in expand(paths)])
        report = on_progress or (lambda event: None)
        stored: dict[Path, UploadedFile] = {}
        small = [f for f in files if f.size <= chunk_size]
        for batch in _batches(small):
            results = await self.upload_files(dataset, [f.path for f in batch])
            for file, result in zip(batch, results, strict=True):
                stored[file.path] = result
                report(file.event(file.size, done=True))
        folder = Path(state_dir) if state_dir is not None else default_state_dir()
        for file in files:
            if file.path not in stored:
                state = _ResumeState(folder, file.identity)
                stored[file.path] = await self._chunked(dataset, file, chunk_size, parallel, report, state)
        return [stored[file.path] for file in files]

    async def put_large_file(
        self,
        dataset: str,
        path: str,
        file: str | Path,
        *,
        chunk_size: int = 8 * MIB,
        parallel: int = 4,
        on_sent: Callable[[int], None] | None = None,
        state_dir: str | Path | None = None,
    ) -> PutFileResult:
        """`put_file()` of a local file of any size: one request is capped by docdb
        (`docdb.max_upload_size`, 512 MiB by default), so the file goes in `chunk_size` chunks on
        `parallel` streams, resumable as `upload()`'s, and replaces the file at `path` once all its
        chunks are in. The same content as the file there sends nothing (`status` `unchanged`)."""
        if chunk_size < 1 or parallel < 1:
            raise ValueError("chunk_size and parallel must be at least 1")
        local, name = Path(file), stored_name(path)
        digest = await asyncio.to_thread(sha256_of, local)
        old = next((f for f in await self.list_files(dataset) if f.name == name), None)
        if old is not None and old.sha256 == digest:
            return PutFileResult(name=name, path=path, size=old.size, sha256=digest, status="unchanged")
        item = _File.of(local, f"{self.base_url}|{dataset}|{chunk_size}|{name}")
        folder = Path(state_dir) if state_dir is not None else default_state_dir()
        stored = await self._chunked(
            dataset,
            item,
            chunk_size,
            parallel,
            (lambda event: on_sent(event.sent_bytes)) if on_sent else (lambda event: None),
            _ResumeState(folder, item.identity),
            filename=name,
            replace=old is not None,
        )
        status = "replaced" if old is not None else "added"
        return PutFileResult(name=stored.filename, path=path, size=stored.size, sha256=digest, status=status)

    async def _chunked(
        self,
        dataset: str,
        file: _File,
        chunk_size: int,
        parallel: int,
        report: ProgressCallback,
        state: _ResumeState,
        *,
        filename: str | None = None,
        replace: bool = False,
    ) -> UploadedFile:
        """`filename`: the name to store (default the file's); `replace`: the file of that name is
        deleted once every chunk is in, so that complete stores the new one under it (not `_1`)."""
        total = -(-file.size // chunk_size)
        filename = filename or file.path.name
        upload_id, held = await self._resume(dataset, state)
        if upload_id is None:
            upload_id = (await self.init_upload(dataset, filename, total, file.size)).upload_id
            await asyncio.to_thread(state.save, upload_id)
        lengths = {i: min(chunk_size, file.size - i * chunk_size) for i in range(total)}
        resumed = sum(lengths[i] for i in held if i in lengths)
        sent = resumed
        report(file.event(sent, chunked=True, resumed_bytes=resumed))
        todo = [i for i in range(total) if i not in held]

        async def worker() -> None:
            nonlocal sent
            while todo:
                index = todo.pop(0)
                content = await asyncio.to_thread(_read, file.path, index * chunk_size, lengths[index])
                await self._send_chunk(dataset, upload_id, index, content)
                sent += len(content)
                report(file.event(sent, chunked=True, resumed_bytes=resumed))

        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(min(parallel, len(todo))):
                    group.create_task(worker())
        except BaseExceptionGroup as failed:  # the first stream's error, as a caller expects it
            raise failed.exceptions[0] from None
        if replace:
            with contextlib.suppress(NotFound):
                await self.delete_file(dataset, filename)
        result = await self.complete_upload(dataset, upload_id)
        await asyncio.to_thread(state.forget)
        report(file.event(file.size, done=True, chunked=True, resumed_bytes=resumed))
        return result

    async def _resume(self, dataset: str, state: _ResumeState) -> tuple[str | None, set[int]]:
        """The upload to continue and the chunks the server holds, if this file's upload was cut."""
        upload_id = await asyncio.to_thread(state.load)
        if upload_id is None:
            return None, set()
        try:
            progress = await self.upload_status(dataset, upload_id)
        except NotFound:  # completed, aborted or expired meanwhile: start again
            await asyncio.to_thread(state.forget)
            return None, set()
        return upload_id, set(progress.received_chunks)

    async def _send_chunk(self, dataset: str, upload_id: str, index: int, content: bytes) -> None:
        """A chunk is idempotent (re-sending replaces it), so a dropped connection or a 5xx is retried."""
        for attempt in range(4):
            try:
                await self.upload_chunk(dataset, upload_id, index, content)
                return
            except (Unreachable, ServerError):
                if attempt == 3:
                    raise
                await asyncio.sleep(0.5 * 2**attempt)
