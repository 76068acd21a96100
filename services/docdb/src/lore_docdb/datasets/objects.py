"""The object-storage backend of raw files: what replicas without a shared volume use when
`docdb.object_storage` is configured.

A file's bytes are the object `{dataset}/{name}`; its row in the registry (`RawFileRegistry`, the
relational store) is what lists it. The name is claimed in the registry first, then the object is
written, then the row is marked ready; a crash in between leaves a row that no listing shows, which
the sweep removes with its object.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from lore_common.stores.objects import ObjectStore
from lore_common.stores.sql import advisory_lock
from lore_docdb.datasets.disk import RawFiles
from lore_docdb.datasets.errors import ObjectStorageFailed
from lore_docdb.datasets.paths import sha256_of
from lore_docdb.datasets.store import RawFileRegistry

log = structlog.get_logger("lore.docdb.raw")
DOWNLOADS = 8  # files fetched at once when a parse checks a dataset out


def object_key(dataset: str, name: str) -> str:
    return f"{dataset}/{name}"


class ObjectRawStore:
    def __init__(self, engine: AsyncEngine, objects: ObjectStore, staging_dir: Path) -> None:
        self.engine = engine
        self.registry = RawFileRegistry(engine)
        self.objects = objects
        self.staging_dir = staging_dir
        self.staging_dir.mkdir(parents=True, exist_ok=True)

    # ------------------------------------------------------------ datasets

    async def exists(self, dataset: str) -> bool:
        return await self.registry.dataset_exists(dataset)

    async def list_datasets(self) -> list[str]:
        return await self.registry.datasets()

    async def create(self, dataset: str) -> bool:
        return await self.registry.add_dataset(dataset)

    async def delete(self, dataset: str) -> None:
        """Unregister the dataset and its files at once, then delete its objects (best effort: an object
        left by a failure is invisible and a later upload of its name replaces it)."""
        await self.registry.remove_dataset(dataset)
        try:
            removed = await self.objects.delete_prefix(f"{dataset}/")
            log.info("objects_deleted", dataset=dataset, count=removed)
        except Exception as exc:
            log.warning("object_prefix_delete_failed", dataset=dataset, error=str(exc))

    # ------------------------------------------------------------ files

    async def list_files(self, dataset: str) -> list[tuple[str, int, str]]:
        return await self.registry.files(dataset)

    def staging(self, dataset: str) -> Path:
        return self.staging_dir / f".tmp-{uuid.uuid4().hex}"

    async def publish(self, dataset: str, temp: Path, filename: str) -> str:
        try:
            size = (await asyncio.to_thread(temp.stat)).st_size
            digest = await asyncio.to_thread(sha256_of, temp)

            async def put(key: str) -> None:
                await self.objects.put_file(key, temp)

            return await self.write(dataset, filename, size, put, digest)
        finally:
            await asyncio.to_thread(temp.unlink, True)

    async def replace(self, dataset: str, temp: Path, filename: str, sha256: str) -> bool:
        """Write the object over the old one (object stores replace an object at once), then list
        the file with its new size and hash."""
        key = object_key(dataset, filename)
        try:
            size = (await asyncio.to_thread(temp.stat)).st_size
            try:
                await self.objects.put_file(key, temp)
            except Exception as exc:
                log.error("object_upload_failed", dataset=dataset, filename=filename, error=str(exc))
                raise ObjectStorageFailed(
                    f"object storage rejected {key}: {type(exc).__name__}: {exc}; nothing was stored"
                ) from exc
        finally:
            await asyncio.to_thread(temp.unlink, True)
        return await self.registry.put_ready(dataset, filename, size, sha256)

    async def hashes(self, dataset: str) -> dict[str, str]:
        return await self.registry.hashes(dataset)

    async def hash_of(self, dataset: str, filename: str) -> str | None:
        return (await self.registry.hashes(dataset, filename)).get(filename)

    async def write(
        self,
        dataset: str,
        filename: str,
        size: int,
        writer: Callable[[str], Awaitable[None]],
        sha256: str | None = None,
    ) -> str:
        """Claim a free name, let `writer` write the object at its key, then list the file."""
        name = await self._claim(dataset, filename)
        key = object_key(dataset, name)
        try:
            await writer(key)
        except BaseException as exc:
            await self.registry.drop_claim(dataset, name)
            if isinstance(exc, Exception):
                log.error("object_upload_failed", dataset=dataset, filename=name, error=str(exc))
                raise ObjectStorageFailed(
                    f"object storage rejected {key}: {type(exc).__name__}: {exc}; nothing was stored"
                ) from exc
            raise
        await self.registry.mark_ready(dataset, name, size, sha256)
        return name

    async def _claim(self, dataset: str, filename: str) -> str:
        return await self.registry.claim(dataset, filename)

    async def delete_file(self, dataset: str, filename: str) -> bool:
        if not await self.registry.remove_file(dataset, filename):
            return False
        try:
            await self.objects.delete(object_key(dataset, filename))
        except Exception as exc:  # best effort: the file is no longer listed either way
            log.warning("object_delete_failed", dataset=dataset, filename=filename, error=str(exc))
        return True

    async def source(self, dataset: str, filename: str) -> Path | str | None:
        if not any(name == filename for name, _, _ in await self.registry.files(dataset)):
            return None
        return await self.objects.presigned_get(object_key(dataset, filename))

    @contextlib.asynccontextmanager
    async def checkout(self, dataset: str) -> AsyncIterator[Path]:
        """Download the dataset's files into a private folder for the parse, removed afterwards."""
        folder = self.staging_dir / f"checkout-{uuid.uuid4().hex}"
        await asyncio.to_thread(folder.mkdir, parents=True)
        try:
            slots = asyncio.Semaphore(DOWNLOADS)

            async def fetch(name: str) -> None:
                async with slots:
                    try:
                        await self.objects.download(object_key(dataset, name), folder / name)
                    except Exception as exc:
                        (folder / name).unlink(missing_ok=True)  # no partial file reaches the parse
                        if not _missing(exc):
                            raise  # the object storage is away: the parse waits for it and tries again
                        # Deleted meanwhile: the parse goes on without it.
                        log.warning("object_download_failed", dataset=dataset, filename=name, error=str(exc))

            names = [name for name, _, _ in await self.list_files(dataset)]
            await asyncio.gather(*(fetch(name) for name in names))
            yield folder
        finally:
            await asyncio.to_thread(shutil.rmtree, folder, True)

    async def sweep(self, older_than_s: float) -> int:
        """Forget files whose write never finished (a crash), with their objects; remove stale staging
        files and checkouts of this replica."""
        rows = await self.registry.drop_unfinished(older_than_s)
        for dataset, name in rows:
            with contextlib.suppress(Exception):
                await self.objects.delete(object_key(dataset, name))
        return len(rows) + await asyncio.to_thread(_sweep_staging, self.staging_dir, older_than_s)

    # ------------------------------------------------------------ moving in

    async def import_local(self, raw: RawFiles, rename: bool = True) -> int:
        """Register the datasets of a local raw-files area (an install from before object storage was
        the raw store, or one moving to servers), uploading what the bucket lacks; then rename the
        folder `raw.imported` (unless `rename` is false). Idempotent, and one replica at a time."""
        if not raw.root.is_dir() or not raw.list_datasets():
            return 0
        imported = 0
        async with advisory_lock(self.engine, "lore-docdb-raw-import"):
            if not raw.root.is_dir():
                return 0  # another replica sharing the volume did it
            for dataset in raw.list_datasets():
                await self.registry.register_dataset(dataset)
                for name, size, modified in raw.list_files(dataset):
                    key = object_key(dataset, name)
                    if await self.objects.size(key) != size:
                        await self.objects.put_file(key, raw.file_path(dataset, name))
                    await self.registry.register_file(dataset, name, size, modified)
                    imported += 1
            target = raw.root
            if rename:
                target = raw.root.with_name(raw.root.name + ".imported")
                if target.exists():
                    target = raw.root.with_name(f"{raw.root.name}.imported-{int(time.time())}")
                with contextlib.suppress(FileNotFoundError):
                    await asyncio.to_thread(raw.root.rename, target)
        log.info("raw_files_imported", files=imported, kept_at=str(target))
        return imported


def _sweep_staging(folder: Path, older_than_s: float) -> int:
    cutoff = time.time() - older_than_s
    removed = 0
    for path in folder.iterdir():
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_mtime < cutoff:
                if path.is_dir():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink()
                removed += 1
    return removed


def _missing(exc: BaseException) -> bool:
    """An S3 error that says the object is not there (as opposed to the store being unreachable)."""
    code = str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))
    return code in ("404", "NoSuchKey", "NotFound")
