"""What the rest of docdb sees of raw files (`RawStore`), whichever backend keeps them: `DiskRawStore`
(datasets/disk.py) or `ObjectRawStore` (datasets/objects.py); and the naming rule both follow."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Protocol

MAX_RENAME_ATTEMPTS = 100_000


def candidates(filename: str) -> Iterator[str]:
    """The names a file may take, in order: `name.ext`, then `name_1.ext`, `name_2.ext`, …"""
    stem, dot, ext = filename.rpartition(".")
    if not dot or not stem:
        stem, ext = filename, ""
    yield filename
    for n in range(1, MAX_RENAME_ATTEMPTS):
        yield f"{stem}_{n}.{ext}" if ext else f"{stem}_{n}"


class RawStore(Protocol):
    """The raw-files area as the datasets, uploads, knowledge-bases and parse code see it."""

    async def exists(self, dataset: str) -> bool: ...

    async def list_datasets(self) -> list[str]: ...

    async def create(self, dataset: str) -> bool:
        """Create an empty dataset; False when it already exists."""
        ...

    async def delete(self, dataset: str) -> None: ...

    async def list_files(self, dataset: str) -> list[tuple[str, int, str]]:
        """(name, size, modified ISO 8601 without zone) of each visible file, by name."""
        ...

    def staging(self, dataset: str) -> Path:
        """A fresh local path to write a file of `dataset` to before `publish`."""
        ...

    async def publish(self, dataset: str, temp: Path, filename: str) -> str:
        """Store the fully written `temp` (consumed) under `filename`, or `<name>_<n>.<ext>` when that is
        taken; returns the name given."""
        ...

    async def replace(self, dataset: str, temp: Path, filename: str, sha256: str) -> bool:
        """Store the fully written `temp` (consumed, its content hash `sha256`) under `filename`,
        replacing the file of that name at once; True when there was one."""
        ...

    async def hashes(self, dataset: str) -> dict[str, str]:
        """The sha256 of each visible file whose hash is known, by name."""
        ...

    async def hash_of(self, dataset: str, filename: str) -> str | None:
        """The sha256 of one file; None when it is not there or its hash is unknown."""
        ...

    async def delete_file(self, dataset: str, filename: str) -> bool: ...

    async def source(self, dataset: str, filename: str) -> Path | str | None:
        """Where a reader gets the file's bytes: its local path, or a presigned URL of its object;
        None when there is no such file."""
        ...

    def checkout(self, dataset: str) -> AbstractAsyncContextManager[Path]:
        """A local folder holding the dataset's files while a parse reads them."""
        ...

    async def sweep(self, older_than_s: float) -> int:
        """Remove what crashed writes left behind; returns how many."""
        ...
