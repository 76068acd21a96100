"""The only SQL of sources: one row per dataset that has a source, with its schedule."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncEngine

from lore_core.clock import utcnow
from lore_docdb.sources.models import SourceRow

_SOURCES = SourceRow.__table__  # type: ignore[attr-defined]


class SourceStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def get(self, dataset: str) -> SourceRow | None:
        async with self.engine.connect() as connection:
            row = (await connection.execute(select(_SOURCES).where(_SOURCES.c.dataset == dataset))).first()
        return None if row is None else SourceRow(**row._mapping)

    async def all(self) -> list[SourceRow]:
        async with self.engine.connect() as connection:
            rows = await connection.execute(select(_SOURCES).order_by(_SOURCES.c.dataset))
            return [SourceRow(**row._mapping) for row in rows]

    async def put(self, dataset: str, spec: str, interval_s: int | None, due: datetime | None = None) -> None:
        """Set the dataset's source; a scheduled one is first due at `due`, by default at once (the
        next schedule check syncs it, rather than one interval later: an hour of nothing)."""
        dialect = postgresql if self.engine.dialect.name == "postgresql" else sqlite
        due = (due or utcnow()) if interval_s else None
        values = {"spec": spec, "interval_s": interval_s, "next_sync_at": due}
        async with self.engine.begin() as connection:
            await connection.execute(
                dialect.insert(_SOURCES)
                .values(dataset=dataset, created_at=utcnow(), **values)
                .on_conflict_do_update(index_elements=["dataset"], set_=values)
            )

    async def delete(self, dataset: str) -> bool:
        async with self.engine.begin() as connection:
            gone = await connection.execute(delete(_SOURCES).where(_SOURCES.c.dataset == dataset))
        return bool(gone.rowcount)

    async def set_last_task(self, dataset: str, task_id: str) -> None:
        async with self.engine.begin() as connection:
            await connection.execute(
                update(_SOURCES).where(_SOURCES.c.dataset == dataset).values(last_task_id=task_id)
            )

    async def claim_due(self, now: datetime) -> list[SourceRow]:
        """The scheduled sources due at `now`, each moved to its next time in the same conditional
        update: whoever moves a source's time runs its sync, so replicas checking at once (or a leader
        that changed mid-way) never both run one interval's sync."""
        async with self.engine.connect() as connection:
            rows = await connection.execute(
                select(_SOURCES).where(_SOURCES.c.next_sync_at.is_not(None), _SOURCES.c.next_sync_at <= now)
            )
            due = [SourceRow(**row._mapping) for row in rows]
        claimed = []
        for row in due:
            assert row.interval_s is not None and row.next_sync_at is not None
            stamp = row.next_sync_at if row.next_sync_at.tzinfo else row.next_sync_at.replace(tzinfo=UTC)
            following = stamp + timedelta(seconds=row.interval_s)
            if following <= now:  # fell behind (no replica ran for a while): one sync now, then on time
                following = now + timedelta(seconds=row.interval_s)
            async with self.engine.begin() as connection:
                moved = await connection.execute(
                    update(_SOURCES)
                    .where(_SOURCES.c.dataset == row.dataset, _SOURCES.c.next_sync_at == row.next_sync_at)
                    .values(next_sync_at=following)
                )
            if moved.rowcount == 1:
                claimed.append(row)
        return claimed
