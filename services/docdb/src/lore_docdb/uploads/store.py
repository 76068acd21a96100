"""The only SQL of chunked uploads: sessions and received chunks of the object-storage backend (the
disk backend keeps its sessions in files)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncEngine

from lore_core.clock import iso, utcnow
from lore_docdb.uploads.models import UploadChunkRow, UploadSession, UploadSessionRow

_SESSIONS = UploadSessionRow.__table__  # type: ignore[attr-defined]
_CHUNKS = UploadChunkRow.__table__  # type: ignore[attr-defined]


class UploadSessionStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def add(self, session: UploadSession) -> None:
        created = datetime.fromisoformat(session.created_at).replace(tzinfo=UTC)
        async with self.engine.begin() as connection:
            await connection.execute(
                _SESSIONS.insert().values(
                    upload_id=session.upload_id,
                    dataset=session.dataset,
                    filename=session.filename,
                    total_chunks=session.total_chunks,
                    total_size=session.total_size,
                    created_at=created,
                    touched_at=created,
                )
            )

    async def get(self, dataset: str, upload_id: str) -> UploadSession | None:
        async with self.engine.connect() as connection:
            row = (
                await connection.execute(
                    select(_SESSIONS).where(
                        _SESSIONS.c.upload_id == upload_id, _SESSIONS.c.dataset == dataset
                    )
                )
            ).first()
        if row is None:
            return None
        return UploadSession(
            upload_id=row.upload_id,
            dataset=row.dataset,
            filename=row.filename,
            total_chunks=row.total_chunks,
            total_size=int(row.total_size),
            created_at=iso(row.created_at),
        )

    async def record_chunk(self, upload_id: str, index: int, size: int) -> bool:
        """Note that chunk `index` arrived (touching the session); False when the session is gone."""
        dialect = postgresql if self.engine.dialect.name == "postgresql" else sqlite
        async with self.engine.begin() as connection:
            touched = await connection.execute(
                update(_SESSIONS).where(_SESSIONS.c.upload_id == upload_id).values(touched_at=utcnow())
            )
            if touched.rowcount:
                await connection.execute(
                    dialect.insert(_CHUNKS)
                    .values(upload_id=upload_id, chunk_index=index, size=size)
                    .on_conflict_do_update(index_elements=["upload_id", "chunk_index"], set_={"size": size})
                )
        return bool(touched.rowcount)

    async def sizes(self, upload_id: str) -> dict[int, int]:
        async with self.engine.connect() as connection:
            rows = await connection.execute(
                select(_CHUNKS.c.chunk_index, _CHUNKS.c.size).where(_CHUNKS.c.upload_id == upload_id)
            )
            return {int(index): int(size) for index, size in rows}

    async def delete(self, upload_id: str) -> None:
        async with self.engine.begin() as connection:
            await connection.execute(delete(_CHUNKS).where(_CHUNKS.c.upload_id == upload_id))
            await connection.execute(delete(_SESSIONS).where(_SESSIONS.c.upload_id == upload_id))

    async def idle(self, ttl_seconds: float) -> list[tuple[str, str]]:
        """(dataset, upload_id) of each session untouched for `ttl_seconds`."""
        cutoff = utcnow() - timedelta(seconds=ttl_seconds)
        async with self.engine.connect() as connection:
            rows = await connection.execute(
                select(_SESSIONS.c.dataset, _SESSIONS.c.upload_id).where(_SESSIONS.c.touched_at < cutoff)
            )
            return [(str(dataset), str(upload_id)) for dataset, upload_id in rows]
