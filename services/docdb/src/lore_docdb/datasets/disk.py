"""The disk backend of raw files (the embedded default, or a volume every replica mounts); the other
backend, `ObjectRawStore` (datasets/objects.py), keeps them in object storage.

On disk: one folder per dataset, hidden `.uploads/` inside, atomic writes. Every final file appears by
`link(temp, final)`, which is atomic and never overwrites, so two uploads of the same name can race
safely into `<name>_<n>.<ext>`. A dataset is deleted by renaming it into a
hidden trash folder first, so a crash mid-delete never leaves a half dataset visible.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path

from lore_core.files import write_atomic
from lore_docdb.datasets.paths import sha256_of
from lore_docdb.datasets.raw import MAX_RENAME_ATTEMPTS, candidates

TRASH = ".trash"
UPLOADS = ".uploads"
# Each file's content hash, kept beside it as `.sha256/<name>` ("<hex> <size> <mtime_ns>"): computed
# when the file is written by path, else at the first listing that asks, and again when the file's size
# or time no longer match (a file changed behind docdb's back).
HASHES = ".sha256"


class RawFiles:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)

    def dataset_dir(self, dataset: str) -> Path:
        return self.root / dataset

    def exists(self, dataset: str) -> bool:
        return self.dataset_dir(dataset).is_dir()

    def list_datasets(self) -> list[str]:
        return sorted(p.name for p in self.root.iterdir() if p.is_dir() and not p.name.startswith("."))

    def create(self, dataset: str) -> bool:
        """Create the folder; False when it already existed."""
        try:
            self.dataset_dir(dataset).mkdir()
        except FileExistsError:
            return False
        return True

    def delete(self, dataset: str) -> None:
        trash = self.root / TRASH
        trash.mkdir(exist_ok=True)
        target = trash / f"{dataset}-{uuid.uuid4().hex}"
        os.rename(self.dataset_dir(dataset), target)
        shutil.rmtree(target, ignore_errors=True)

    def purge_trash(self) -> None:
        """Finish deletions a crash interrupted."""
        shutil.rmtree(self.root / TRASH, ignore_errors=True)

    def list_files(self, dataset: str) -> list[tuple[str, int, str]]:
        entries = []
        with os.scandir(self.dataset_dir(dataset)) as scan:
            for entry in scan:
                if entry.name.startswith(".") or not entry.is_file(follow_symlinks=False):
                    continue
                stat = entry.stat(follow_symlinks=False)
                modified = datetime.fromtimestamp(stat.st_mtime, tz=UTC).replace(tzinfo=None)
                entries.append((entry.name, stat.st_size, modified.isoformat(timespec="seconds")))
        return sorted(entries)

    def file_path(self, dataset: str, filename: str) -> Path:
        return self.dataset_dir(dataset) / filename

    def temp_path(self, dataset: str) -> Path:
        """A hidden temp file inside the dataset, on the same filesystem as the final file."""
        return self.dataset_dir(dataset) / f".tmp-{uuid.uuid4().hex}"

    def publish(self, dataset: str, temp: Path, filename: str) -> str:
        """Give `temp` its final name, `<name>_<n>.<ext>` (n = 1, 2, …) when taken; returns the name."""
        folder = self.dataset_dir(dataset)
        try:
            for candidate in candidates(filename):
                try:
                    os.link(temp, folder / candidate)
                except FileExistsError:
                    continue
                return candidate
        finally:
            with contextlib.suppress(FileNotFoundError):
                temp.unlink()
        raise FileExistsError(f"no free name for {filename!r} after {MAX_RENAME_ATTEMPTS} attempts")

    def replace(self, dataset: str, temp: Path, filename: str, sha256: str) -> bool:
        """Give `temp` the name `filename`, replacing the file of that name at once (readers see the
        old bytes or the new, never a mix); True when there was one."""
        final = self.file_path(dataset, filename)
        existed = final.exists()
        try:
            os.replace(temp, final)
        finally:
            with contextlib.suppress(FileNotFoundError):
                temp.unlink()
        self._remember_hash(dataset, filename, sha256)
        return existed

    def _hash_file(self, dataset: str, filename: str) -> Path:
        return self.dataset_dir(dataset) / HASHES / filename

    def _remember_hash(self, dataset: str, filename: str, sha256: str) -> None:
        stat = self.file_path(dataset, filename).stat()
        target = self._hash_file(dataset, filename)
        target.parent.mkdir(exist_ok=True)
        write_atomic(target, f"{sha256} {stat.st_size} {stat.st_mtime_ns}".encode())

    def sha256(self, dataset: str, filename: str) -> str | None:
        """The file's content hash (computed and kept when unknown or stale); None when it is gone."""
        path = self.file_path(dataset, filename)
        try:
            stat = path.stat()
        except FileNotFoundError:
            return None
        with contextlib.suppress(OSError, ValueError):
            digest, size, mtime = self._hash_file(dataset, filename).read_text().split()
            if int(size) == stat.st_size and int(mtime) == stat.st_mtime_ns:
                return digest
        try:
            digest = sha256_of(path)
            self._remember_hash(dataset, filename, digest)
        except FileNotFoundError:
            return None
        return digest

    def hashes(self, dataset: str) -> dict[str, str]:
        found = {}
        for name, _, _ in self.list_files(dataset):
            digest = self.sha256(dataset, name)
            if digest is not None:
                found[name] = digest
        return found

    def delete_file(self, dataset: str, filename: str) -> bool:
        try:
            self.file_path(dataset, filename).unlink()
        except FileNotFoundError:
            return False
        self._hash_file(dataset, filename).unlink(missing_ok=True)
        return True

    def sweep_temp_files(self, older_than_s: float = 0.0) -> Iterator[Path]:
        """Temp files left by a crash mid-write (never visible in listings). On a volume that several
        replicas share, a young temp file may be another replica's upload in progress, so only those
        untouched for `older_than_s` seconds go."""
        cutoff = time.time() - older_than_s
        for dataset in self.list_datasets():
            for temp in self.dataset_dir(dataset).glob(".tmp-*"):
                with contextlib.suppress(FileNotFoundError):
                    if older_than_s and temp.stat().st_mtime >= cutoff:
                        continue
                    temp.unlink()
                    yield temp


class DiskRawStore:
    """Raw files on this machine's disk (`RawFiles`), off the event loop."""

    def __init__(self, files: RawFiles) -> None:
        self.files = files

    async def exists(self, dataset: str) -> bool:
        return await asyncio.to_thread(self.files.exists, dataset)

    async def list_datasets(self) -> list[str]:
        return await asyncio.to_thread(self.files.list_datasets)

    async def create(self, dataset: str) -> bool:
        return await asyncio.to_thread(self.files.create, dataset)

    async def delete(self, dataset: str) -> None:
        await asyncio.to_thread(self.files.delete, dataset)

    async def list_files(self, dataset: str) -> list[tuple[str, int, str]]:
        return await asyncio.to_thread(self.files.list_files, dataset)

    def staging(self, dataset: str) -> Path:
        return self.files.temp_path(dataset)

    async def publish(self, dataset: str, temp: Path, filename: str) -> str:
        return await asyncio.to_thread(self.files.publish, dataset, temp, filename)

    async def replace(self, dataset: str, temp: Path, filename: str, sha256: str) -> bool:
        return await asyncio.to_thread(self.files.replace, dataset, temp, filename, sha256)

    async def hashes(self, dataset: str) -> dict[str, str]:
        return await asyncio.to_thread(self.files.hashes, dataset)

    async def hash_of(self, dataset: str, filename: str) -> str | None:
        return await asyncio.to_thread(self.files.sha256, dataset, filename)

    async def delete_file(self, dataset: str, filename: str) -> bool:
        return await asyncio.to_thread(self.files.delete_file, dataset, filename)

    async def source(self, dataset: str, filename: str) -> Path | str | None:
        path = self.files.file_path(dataset, filename)
        return path if not filename.startswith(".") and await asyncio.to_thread(path.is_file) else None

    @contextlib.asynccontextmanager
    async def checkout(self, dataset: str) -> AsyncIterator[Path]:
        yield self.files.dataset_dir(dataset)

    async def sweep(self, older_than_s: float) -> int:
        return len(await asyncio.to_thread(lambda: list(self.files.sweep_temp_files(older_than_s))))
