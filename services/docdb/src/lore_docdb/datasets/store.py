"""The only SQL of the datasets domain: the registry of datasets and raw files that the object-storage
backend keeps beside its objects (the disk backend's folders are their own registry).

A file's row is written first, not ready, to claim its name (one transaction per dataset at a time, so
two replicas never pick the same `<name>_<n>`), then its object, then the row is marked ready with its
size. A row a crash left not ready is in no listing, and the sweep removes it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from lore_common.stores.sql import transaction_lock
from lore_core.clock import utcnow
from lore_docdb.datasets.errors import DatasetNotFound
from lore_docdb.datasets.models import RawDatasetRow, RawFileRow
from lore_docdb.datasets.raw import MAX_RENAME_ATTEMPTS, candidates

_DATASETS = RawDatasetRow.__table__  # type: ignore[attr-defined]
_FILES = RawFileRow.__table__  # type: ignore[attr-defined]


class RawFileRegistry:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    # ------------------------------------------------------------ datasets

    async def dataset_exists(self, dataset: str) -> bool:
        async with self.engine.connect() as connection:
            found = await connection.execute(select(_DATASETS.c.name).where(_DATASETS.c.name == dataset))
            return found.first() is not None

    async def datasets(self) -> list[str]:
        async with self.engine.connect() as connection:
            rows = await connection.execute(select(_DATASETS.c.name).order_by(_DATASETS.c.name))
            return [str(name) for (name,) in rows]

    async def add_dataset(self, dataset: str) -> bool:
        """False when the dataset exists."""
        try:
            async with self.engine.begin() as connection:
                await connection.execute(_DATASETS.insert().values(name=dataset, created_at=utcnow()))
        except IntegrityError:
            return False
        return True

    async def remove_dataset(self, dataset: str) -> None:
        """Unregister the dataset and its files at once."""
        async with self.engine.begin() as connection:
            await transaction_lock(connection, f"lore-docdb-raw:{dataset}")
            await connection.execute(delete(_FILES).where(_FILES.c.dataset == dataset))
            await connection.execute(delete(_DATASETS).where(_DATASETS.c.name == dataset))

    # ------------------------------------------------------------ files

    async def files(self, dataset: str) -> list[tuple[str, int, str]]:
        """(name, size, modified ISO 8601 without zone, to the second) of each ready file, by name."""
        query = (
            select(_FILES.c.name, _FILES.c.size, _FILES.c.modified_at)
            .where(_FILES.c.dataset == dataset, _FILES.c.ready.is_(True))
            .order_by(_FILES.c.name)
        )
        async with self.engine.connect() as connection:
            rows = (await connection.execute(query)).all()
        return [
            (name, int(size), modified.replace(tzinfo=None).isoformat(timespec="seconds"))
            for name, size, modified in rows
        ]

    async def claim(self, dataset: str, filename: str) -> str:
        """Register `filename`, or the first free `<name>_<n>`, not ready yet; returns the name."""
        async with self.engine.begin() as connection:
            await transaction_lock(connection, f"lore-docdb-raw:{dataset}")
            found = await connection.execute(select(_DATASETS.c.name).where(_DATASETS.c.name == dataset))
            if found.first() is None:
                raise DatasetNotFound(dataset)
            stem = filename.rpartition(".")[0] or filename
            taken = {
                str(name)
                for (name,) in await connection.execute(
                    select(_FILES.c.name).where(
                        _FILES.c.dataset == dataset,
                        _FILES.c.name.startswith(stem, autoescape=True),
                    )
                )
            }
            for name in candidates(filename):
                if name in taken:
                    continue
                await connection.execute(
                    _FILES.insert().values(
                        dataset=dataset, name=name, size=0, ready=False, modified_at=utcnow()
                    )
                )
                return name
        raise FileExistsError(f"no free name for {filename!r} after {MAX_RENAME_ATTEMPTS} attempts")

    async def mark_ready(self, dataset: str, name: str, size: int, sha256: str | None = None) -> None:
        async with self.engine.begin() as connection:
            await connection.execute(
                update(_FILES)
                .where(_FILES.c.dataset == dataset, _FILES.c.name == name)
                .values(ready=True, size=size, sha256=sha256, modified_at=utcnow())
            )

    async def hashes(self, dataset: str, name: str | None = None) -> dict[str, str]:
        """The known sha256 of each ready file (or of `name` only), by name."""
        query = select(_FILES.c.name, _FILES.c.sha256).where(
            _FILES.c.dataset == dataset, _FILES.c.ready.is_(True), _FILES.c.sha256.is_not(None)
        )
        if name is not None:
            query = query.where(_FILES.c.name == name)
        async with self.engine.connect() as connection:
            return {str(name): str(digest) for name, digest in await connection.execute(query)}

    async def put_ready(self, dataset: str, name: str, size: int, sha256: str) -> bool:
        """List `name` as ready with this size and hash, replacing its row; True when it was listed."""
        dialect = postgresql if self.engine.dialect.name == "postgresql" else sqlite
        values = {"size": size, "sha256": sha256, "ready": True, "modified_at": utcnow()}
        async with self.engine.begin() as connection:
            await transaction_lock(connection, f"lore-docdb-raw:{dataset}")
            found = await connection.execute(select(_DATASETS.c.name).where(_DATASETS.c.name == dataset))
            if found.first() is None:
                raise DatasetNotFound(dataset)
            before = await connection.execute(
                select(_FILES.c.ready).where(_FILES.c.dataset == dataset, _FILES.c.name == name)
            )
            existed = bool(before.scalar())
            await connection.execute(
                dialect.insert(_FILES)
                .values(dataset=dataset, name=name, **values)
                .on_conflict_do_update(index_elements=["dataset", "name"], set_=values)
            )
        return existed

    async def drop_claim(self, dataset: str, name: str) -> None:
        async with self.engine.begin() as connection:
            await connection.execute(delete(_FILES).where(_FILES.c.dataset == dataset, _FILES.c.name == name))

    async def remove_file(self, dataset: str, name: str) -> bool:
        """Unregister a ready file; False when there is none."""
        async with self.engine.begin() as connection:
            gone = await connection.execute(
                delete(_FILES).where(
                    _FILES.c.dataset == dataset, _FILES.c.name == name, _FILES.c.ready.is_(True)
                )
            )
        return bool(gone.rowcount)

    async def drop_unfinished(self, older_than_s: float) -> list[tuple[str, str]]:
        """Unregister files whose write never finished; returns their (dataset, name)."""
        cutoff = utcnow() - timedelta(seconds=older_than_s)
        async with self.engine.begin() as connection:
            rows = (
                await connection.execute(
                    delete(_FILES)
                    .where(_FILES.c.ready.is_(False), _FILES.c.modified_at < cutoff)
                    .returning(_FILES.c.dataset, _FILES.c.name)
                )
            ).all()
        return [(str(dataset), str(name)) for dataset, name in rows]

    # ------------------------------------------------------------ moving in

    async def register_dataset(self, dataset: str) -> None:
        """Register a dataset unless it is registered already."""
        dialect = postgresql if self.engine.dialect.name == "postgresql" else sqlite
        async with self.engine.begin() as connection:
            await connection.execute(
                dialect.insert(_DATASETS).values(name=dataset, created_at=utcnow()).on_conflict_do_nothing()
            )

    async def register_file(self, dataset: str, name: str, size: int, modified: str) -> None:
        """Register a ready file (`modified`: ISO 8601 without zone, UTC) unless it is registered."""
        dialect = postgresql if self.engine.dialect.name == "postgresql" else sqlite
        async with self.engine.begin() as connection:
            await connection.execute(
                dialect.insert(_FILES)
                .values(
                    dataset=dataset,
                    name=name,
                    size=size,
                    ready=True,
                    modified_at=datetime.fromisoformat(modified).replace(tzinfo=UTC),
                )
                .on_conflict_do_nothing()
            )
