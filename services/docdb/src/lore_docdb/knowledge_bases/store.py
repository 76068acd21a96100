"""The only SQL of the knowledge-bases domain: KB rows, their datasets, their chunks and versions."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import datetime
from typing import NamedTuple

import msgspec
from sqlalchemy import bindparam, delete, func
from sqlalchemy import select as sa_select
from sqlalchemy import update as sa_update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from lore_common.stores.sql import increment
from lore_common.structured_chunks import indexed_text
from lore_core.tasks import FreshReads
from lore_docdb.index.bm25 import ChunkSource
from lore_docdb.knowledge_bases.models import (
    ChunkRow,
    KbDatasetRow,
    KbFileRow,
    KbVersionRow,
    KnowledgeBaseRow,
    heading_path,
)


class ChunkGraph(NamedTuple):
    """A chunk's place and its graph contribution (JSON, None when it has none recorded)."""

    chunk_id: str
    dataset: str
    file: str
    position: int
    task_id: str
    graph: str | None


class KbExists(Exception):
    pass


class KnowledgeBaseStore:
    # How long `cached_kb` may answer from memory. Writes by this process drop the entry at once; another
    # replica's write (a deletion, the first parse's mode) is seen within this time.
    KB_CACHE_SECONDS = 1.0

    def __init__(self, engine: AsyncEngine, batch_size: int = 500) -> None:
        self.engine = engine
        self.batch_size = batch_size
        # On PostgreSQL other replicas write too: cached KB rows are checked against the KB's version.
        self.shared = engine.dialect.name == "postgresql"
        # Questions read the KB's version at once share one read (each still gets a fresh one).
        self.fresh_version = FreshReads(self.kb_version)
        self._kb_cache: dict[str, tuple[float, KnowledgeBaseRow, int]] = {}
        self._kb_loading: dict[str, asyncio.Future[KnowledgeBaseRow | None]] = {}
        self._kb_generation = 0

    def session(self) -> AsyncSession:
        return AsyncSession(self.engine, expire_on_commit=False)

    # ------------------------------------------------------------ knowledge bases

    async def create_kb(self, name: str, embedding_model: str | None = None) -> KnowledgeBaseRow:
        row = KnowledgeBaseRow(name=name, embedding_model=embedding_model)
        try:
            async with self.session() as session:
                session.add(row)
                await session.commit()
        except IntegrityError as exc:
            raise KbExists(name) from exc
        return row

    async def get_kb(self, name: str) -> KnowledgeBaseRow | None:
        async with self.session() as session:
            return await session.get(KnowledgeBaseRow, name)

    async def cached_kb(self, name: str) -> KnowledgeBaseRow | None:
        """`get_kb` for the chat path, which reads a KB's row on every question: a database round
        trip costs more than the rest of the retrieval on SQLite."""
        now = time.monotonic()
        hit = self._kb_cache.get(name)
        if self.shared:
            if hit is not None and hit[2] == await self.fresh_version.get(name):
                return hit[1]
        elif hit is not None and now - hit[0] < self.KB_CACHE_SECONDS:
            return hit[1]
        # One read per expiry, not one per waiting question: 32 chats that find the entry expired at
        # the same moment share the read.
        loading = self._kb_loading.get(name)
        if loading is None:
            loading = asyncio.ensure_future(self._load_kb(name, now, self._kb_generation))
            self._kb_loading[name] = loading
        return await asyncio.shield(loading)

    async def _load_kb(self, name: str, now: float, generation: int) -> KnowledgeBaseRow | None:
        try:
            version = await self.kb_version(name) if self.shared else 0
            row = await self.get_kb(name)
        finally:
            if self._kb_loading.get(name) is asyncio.current_task():
                del self._kb_loading[name]
        if generation == self._kb_generation:  # no write by this process while reading
            if row is None:
                self._kb_cache.pop(name, None)
            else:
                self._kb_cache[name] = (now, row, version)
        return row

    def _changed(self, name: str) -> None:
        self._kb_generation += 1
        self._kb_cache.pop(name, None)
        self._kb_loading.pop(name, None)

    async def kb_version(self, name: str) -> int:
        async with self.engine.connect() as connection:
            value = (
                await connection.execute(select(KbVersionRow.version).where(KbVersionRow.kb_name == name))
            ).scalar()
        return int(value or 0)

    @staticmethod
    async def _bump(session: AsyncSession, name: str) -> None:
        connection = await session.connection()
        await increment(connection, KbVersionRow.__table__, {"kb_name": name}, "version")  # type: ignore[attr-defined]

    async def list_kbs(self) -> list[KnowledgeBaseRow]:
        async with self.session() as session:
            return list((await session.exec(select(KnowledgeBaseRow).order_by(KnowledgeBaseRow.name))).all())

    async def mark_deleting(self, name: str, purge_db: bool) -> bool:
        """Flip `ready` → `deleting` atomically; False when it was already deleting."""
        try:
            return await self._mark_deleting(name, purge_db)
        finally:
            self._changed(name)

    async def _mark_deleting(self, name: str, purge_db: bool) -> bool:
        async with self.session() as session:
            row = await session.get(KnowledgeBaseRow, name, with_for_update=True)
            if row is None or row.status == "deleting":
                return False
            row.status = "deleting"
            row.purge_db = purge_db
            session.add(row)
            await self._bump(session, name)
            await session.commit()
            return True

    async def set_kb_mode(self, name: str, mode: int) -> None:
        async with self.session() as session:
            row = await session.get(KnowledgeBaseRow, name)
            if row is not None and row.mode is None:
                row.mode = mode
                session.add(row)
                await self._bump(session, name)
                await session.commit()
        self._changed(name)

    async def settle_embedding_model(self, name: str, undecided: str | None, model: str) -> str:
        """Record `model` as the KB's embedder unless it already holds a decided one; returns the one
        recorded. Two first parses at once both propose; the first to commit wins, the other uses it."""
        async with self.session() as session:
            row = await session.get(KnowledgeBaseRow, name, with_for_update=True)
            if row is None:
                return model
            if row.embedding_model == undecided or row.embedding_model is None:
                row.embedding_model = model
                session.add(row)
                await self._bump(session, name)
                await session.commit()
            recorded = row.embedding_model
        self._changed(name)
        return recorded or model

    async def delete_kb_rows(self, name: str, purge_db: bool) -> None:
        async with self.session() as session:
            if purge_db:
                await session.exec(delete(ChunkRow).where(col(ChunkRow.kb_name) == name))
            await session.exec(delete(KbFileRow).where(col(KbFileRow.kb_name) == name))
            await session.exec(delete(KbDatasetRow).where(col(KbDatasetRow.kb_name) == name))
            await session.exec(delete(KnowledgeBaseRow).where(col(KnowledgeBaseRow.name) == name))
            await self._bump(session, name)
            await session.commit()
        self._changed(name)

    # ------------------------------------------------------------ datasets of a KB

    async def kb_datasets(self, kb: str) -> list[KbDatasetRow]:
        async with self.session() as session:
            rows = await session.exec(
                select(KbDatasetRow).where(KbDatasetRow.kb_name == kb).order_by(KbDatasetRow.dataset)
            )
            return list(rows.all())

    async def get_kb_dataset(self, kb: str, dataset: str) -> KbDatasetRow | None:
        async with self.session() as session:
            return await session.get(KbDatasetRow, (kb, dataset))

    async def upsert_kb_dataset(self, row: KbDatasetRow) -> None:
        async with self.session() as session:
            await session.merge(row)
            await session.commit()

    @staticmethod
    async def mark_parsed(
        connection: AsyncConnection, kb: str, dataset: str, task_id: str, parsed_at: datetime
    ) -> None:
        """The dataset is parsed into the KB by `task_id` (if that task still owns it), written in the
        caller's transaction: the one that marks the task completed."""
        table = KbDatasetRow.__table__  # type: ignore[attr-defined]
        await connection.execute(
            sa_update(table)
            .where(table.c.kb_name == kb, table.c.dataset == dataset, table.c.task_id == task_id)
            .values(parsed=True, parsed_at=parsed_at)
        )

    async def remove_kb_dataset(self, kb: str, dataset: str) -> None:
        async with self.session() as session:
            await session.exec(
                delete(ChunkRow).where(col(ChunkRow.kb_name) == kb, col(ChunkRow.dataset) == dataset)
            )
            await session.exec(
                delete(KbDatasetRow).where(
                    col(KbDatasetRow.kb_name) == kb, col(KbDatasetRow.dataset) == dataset
                )
            )
            await session.exec(
                delete(KbFileRow).where(col(KbFileRow.kb_name) == kb, col(KbFileRow.dataset) == dataset)
            )
            await self._bump(session, kb)
            await session.commit()

    # ------------------------------------------------------------ chunks

    async def add_chunks(self, rows: Iterable[ChunkRow]) -> None:
        """Rows taken from `rows` a batch at a time: a parse passes a generator, so a million chunks never
        stand as a million ORM objects at once (they held gigabytes)."""
        pending = iter(rows)
        while batch := list(itertools.islice(pending, self.batch_size)):
            async with self.session() as session:
                session.add_all(batch)
                for kb in {row.kb_name for row in batch}:
                    await self._bump(session, kb)
                await session.commit()

    async def set_chunk_graphs(self, graphs: dict[str, str]) -> None:
        """Record what graph extraction drew from each chunk (by chunk id)."""
        items = list(graphs.items())
        for start in range(0, len(items), self.batch_size):
            async with self.engine.begin() as connection:
                await connection.execute(
                    ChunkRow.__table__.update()  # type: ignore[attr-defined]
                    .where(ChunkRow.__table__.c.chunk_id == bindparam("id"))  # type: ignore[attr-defined]
                    .values(graph=bindparam("graph")),
                    [{"id": key, "graph": value} for key, value in items[start : start + self.batch_size]],
                )

    async def chunk_graphs(self, chunk_ids: Sequence[str]) -> list[ChunkGraph]:
        """The graph contributions of these chunks, in the order a full parse would merge them."""
        found: list[ChunkGraph] = []
        ids = sorted(set(chunk_ids))
        for start in range(0, len(ids), self.batch_size):
            query = sa_select(
                col(ChunkRow.chunk_id),
                col(ChunkRow.dataset),
                col(ChunkRow.file),
                col(ChunkRow.position),
                col(ChunkRow.task_id),
                col(ChunkRow.graph),
            ).where(col(ChunkRow.chunk_id).in_(ids[start : start + self.batch_size]))
            async with self.engine.connect() as connection:
                found.extend(ChunkGraph(*row) for row in (await connection.execute(query)).all())
        return sorted(found, key=lambda c: (c.dataset, c.file, c.position))

    async def chunks_naming(self, kb: str, entities: set[str]) -> list[str]:
        """The chunks whose kept graph contribution names any of these entities (a scan of the KB's
        chunks: for a rollback, which cannot trust a graph a failed write may have left half done)."""
        query = sa_select(col(ChunkRow.chunk_id), col(ChunkRow.graph)).where(
            col(ChunkRow.kb_name) == kb, col(ChunkRow.graph).is_not(None)
        )
        found = []
        async with self.engine.connect() as connection:
            for chunk_id, graph in (await connection.execute(query)).all():
                nodes = msgspec.json.decode(graph or "{}").get("nodes", [])
                if any(node.get("id") in entities for node in nodes):
                    found.append(chunk_id)
        return found

    async def stale_chunks(
        self, kb: str, dataset: str, keep_task: str, keep_files: Sequence[str]
    ) -> list[ChunkGraph]:
        """Chunks of the dataset that a parse replaces: those of other tasks, except the files it kept."""
        kept = set(keep_files)
        query = sa_select(
            col(ChunkRow.chunk_id),
            col(ChunkRow.dataset),
            col(ChunkRow.file),
            col(ChunkRow.position),
            col(ChunkRow.task_id),
            col(ChunkRow.graph),
        ).where(
            col(ChunkRow.kb_name) == kb, col(ChunkRow.dataset) == dataset, col(ChunkRow.task_id) != keep_task
        )
        async with self.engine.connect() as connection:
            rows = (await connection.execute(query)).all()
        return [ChunkGraph(*row) for row in rows if row[2] not in kept]

    async def delete_chunk_ids(self, kb: str, chunk_ids: Sequence[str]) -> None:
        ids = list(chunk_ids)
        for start in range(0, len(ids), self.batch_size):
            async with self.session() as session:
                await session.exec(
                    delete(ChunkRow).where(col(ChunkRow.chunk_id).in_(ids[start : start + self.batch_size]))
                )
                await self._bump(session, kb)
                await session.commit()

    async def chunks_of_task(self, task_id: str) -> list[ChunkGraph]:
        query = sa_select(
            col(ChunkRow.chunk_id),
            col(ChunkRow.dataset),
            col(ChunkRow.file),
            col(ChunkRow.position),
            col(ChunkRow.task_id),
            col(ChunkRow.graph),
        ).where(col(ChunkRow.task_id) == task_id)
        async with self.engine.connect() as connection:
            return [ChunkGraph(*row) for row in (await connection.execute(query)).all()]

    # ------------------------------------------------------------ files as parsed

    async def parsed_files(self, kb: str, dataset: str) -> dict[str, KbFileRow]:
        async with self.session() as session:
            rows = await session.exec(
                select(KbFileRow).where(KbFileRow.kb_name == kb, KbFileRow.dataset == dataset)
            )
            return {row.file: row for row in rows.all()}

    async def file_page(self, kb: str, offset: int, limit: int) -> tuple[int, list[KbFileRow]]:
        """The KB's file records by dataset and name, a page of them, and how many there are."""
        async with self.session() as session:
            total = (
                await session.exec(select(func.count()).select_from(KbFileRow).where(KbFileRow.kb_name == kb))
            ).one()
            rows = await session.exec(
                select(KbFileRow)
                .where(KbFileRow.kb_name == kb)
                .order_by(col(KbFileRow.dataset), col(KbFileRow.file))
                .offset(offset)
                .limit(limit)
            )
            return int(total), list(rows.all())

    async def record_files(
        self, kb: str, dataset: str, parsed: Sequence[KbFileRow], gone: Sequence[str]
    ) -> None:
        """Replace the records of the files a parse read, and drop those of files no longer there."""
        names = [row.file for row in parsed] + list(gone)
        async with self.session() as session:
            for start in range(0, len(names), self.batch_size):
                await session.exec(
                    delete(KbFileRow).where(
                        col(KbFileRow.kb_name) == kb,
                        col(KbFileRow.dataset) == dataset,
                        col(KbFileRow.file).in_(names[start : start + self.batch_size]),
                    )
                )
            session.add_all(list(parsed))
            await session.commit()

    async def delete_chunks_of_task(self, task_id: str, kb: str) -> None:
        async with self.session() as session:
            await session.exec(delete(ChunkRow).where(col(ChunkRow.task_id) == task_id))
            await self._bump(session, kb)
            await session.commit()

    async def chunk_task_ids(self, kb: str, dataset: str) -> list[str]:
        async with self.session() as session:
            rows = await session.exec(
                select(ChunkRow.task_id).where(ChunkRow.kb_name == kb, ChunkRow.dataset == dataset).distinct()
            )
            return list(rows.all())

    async def chunks_of_kb(self, kb: str) -> list[tuple[str, str, str, str]]:
        """(chunk_id, text, dataset, file) of every chunk of the KB."""
        async with self.session() as session:
            rows = await session.exec(
                select(ChunkRow.chunk_id, ChunkRow.text, ChunkRow.dataset, ChunkRow.file).where(
                    ChunkRow.kb_name == kb
                )
            )
            return [(r[0], r[1], r[2], r[3]) for r in rows.all()]

    async def passages_of_kb(self, kb: str, batch: int = 5000) -> AsyncIterator[list[ChunkSource]]:
        """Every chunk of the KB as BM25 indexes it (heading path, then text), in batches read from
        one cursor: a million chunks are never all in memory."""
        query = sa_select(col(ChunkRow.chunk_id), col(ChunkRow.text), col(ChunkRow.heading_path)).where(
            col(ChunkRow.kb_name) == kb
        )
        async with self.engine.connect() as connection:
            result = await connection.stream(query)
            async for rows in result.partitions(batch):
                yield [ChunkSource(r[0], indexed_text(r[1], heading_path(r[2]))) for r in rows]

    async def get_chunks(self, chunk_ids: Sequence[str]) -> list[ChunkRow]:
        if not chunk_ids:
            return []
        async with self.session() as session:
            rows = await session.exec(select(ChunkRow).where(col(ChunkRow.chunk_id).in_(list(chunk_ids))))
            return list(rows.all())

    async def count_chunks(self, kb: str, task_id: str | None = None) -> int:
        async with self.session() as session:
            query = select(func.count()).select_from(ChunkRow).where(ChunkRow.kb_name == kb)
            if task_id is not None:
                query = query.where(ChunkRow.task_id == task_id)
            return int((await session.exec(query)).one())
