"""Knowledge bases: create, detail, overview, asynchronous delete, dataset removal, and the parse
request (checked here, queued by the parse domain).

Process modes (a KB has one, fixed by its first parse):
- 0: vector index + knowledge graph (the chat model extracts entities and relations);
- 1: vector index only (no model calls while parsing).
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import msgspec
import structlog

from lore_core.clock import iso
from lore_core.errors import BadRequest, Conflict, NotFound
from lore_core.labels import type_label
from lore_core.naming import check_name
from lore_docdb.datasets.paths import path_of
from lore_docdb.datasets.raw import RawStore
from lore_docdb.index.indexes import SearchIndexes
from lore_docdb.knowledge_bases.embedders import KbEmbedders
from lore_docdb.knowledge_bases.models import (
    PROCESS_MODES,
    GraphEntity,
    GraphRelation,
    KbCreatedInfo,
    KbDatasetInfo,
    KbDatasetRow,
    KbDetail,
    KbFileInfo,
    KbFilePage,
    KbGraphPage,
    KbOverview,
    KnowledgeBaseRow,
    query_modes_of,
)
from lore_docdb.knowledge_bases.store import KbExists, KnowledgeBaseStore
from lore_docdb.schemas.service import SchemaService

if TYPE_CHECKING:
    from lore_docdb.parse.models import Task

log = structlog.get_logger("lore.docdb.kb")

DELETE_POLL_S = 0.2


class KbNotFound(NotFound):
    def __init__(self, name: str) -> None:
        super().__init__(f"knowledge base {name!r} does not exist")


class QueuedParse(Protocol):
    """A parse task as the knowledge bases see it."""

    @property
    def task_id(self) -> str: ...

    @property
    def dataset(self) -> str: ...


class ParseQueue(Protocol):
    """What the knowledge bases ask of the parse domain (`parse.service.ParseService`). The parse domain
    sits above this one (it writes the KB's chunks), so it is reached through this protocol, wired in
    app.py."""

    async def submit(
        self,
        kb_name: str,
        datasets: Sequence[str],
        *,
        mode: int,
        schema_name: str | None,
        schema_entities: str | None,
        force: bool = False,
        queued: Callable[[QueuedParse], Awaitable[None]] | None = None,
    ) -> Sequence[QueuedParse]: ...

    async def active_for_dataset(self, dataset: str, kb: str | None = None) -> Sequence[QueuedParse]: ...

    async def active_for_kb(self, kb: str) -> Sequence[QueuedParse]: ...

    async def cancel_all_for_kb(self, kb: str) -> None: ...

    async def forget_dataset(self, kb: str, dataset: str) -> None:
        """Remove the dataset's chunks, points, BM25 entries and graph contributions from the KB."""
        ...


class KnowledgeBaseService:
    def __init__(
        self,
        *,
        store: KnowledgeBaseStore,
        parses: ParseQueue,
        indexes: SearchIndexes,
        embedders: KbEmbedders,
        schemas: SchemaService,
        raw: RawStore,
        kb_root: Path,
        label_language: str = "en",
    ) -> None:
        self.store = store
        self.label_language = label_language  # the overview prompt's type labels (display.language)
        self.parses = parses
        self.indexes = indexes
        self.embedders = embedders
        self.schemas = schemas
        self.raw = raw
        self.kb_root = kb_root
        self._deleters: dict[str, asyncio.Task[None]] = {}

    async def require(self, name: str) -> KnowledgeBaseRow:
        check_name("knowledge base", name)
        kb = await self.store.get_kb(name)
        if kb is None:
            raise KbNotFound(name)
        return kb

    async def create(self, name: str, embedding_model: str | None = None) -> KbCreatedInfo:
        check_name("knowledge base", name)
        model = self.embedders.for_new_kb(embedding_model)
        try:
            row = await self.store.create_kb(name, model)
        except KbExists as exc:
            raise Conflict(f"knowledge base {name!r} already exists") from exc
        await asyncio.to_thread((self.kb_root / name).mkdir, parents=True, exist_ok=True)
        return KbCreatedInfo(
            name=row.name,
            created_at=iso(row.created_at),
            status=row.status,
            embedding_model=self.embedders.shown(row.embedding_model),
        )

    async def list_all(self) -> list[KnowledgeBaseRow]:
        return await self.store.list_kbs()

    async def detail(self, name: str) -> KbDetail:
        kb = await self.require(name)
        model = self.embedders.shown(kb.embedding_model)
        return KbDetail(
            name=kb.name,
            created_at=iso(kb.created_at),
            status=kb.status,
            process_mode=kb.mode,
            embedding_model=model,
            embedding_dim=self.embedders.dimension(model),
            datasets=[dataset_info(d) for d in await self.store.kb_datasets(name)],
            available_query_modes=query_modes_of(kb.mode),
        )

    async def overview(self, name: str, top_nodes: int, sample_relations: int) -> KbOverview:
        kb = await self.require(name)
        datasets = await self.store.kb_datasets(name)
        entities = await self.indexes.graph.top_entities(name, top_nodes)
        relations = await self.indexes.graph.sample_relations(name, sample_relations)
        chunk_count = await self.store.count_chunks(name)
        dataset_items = [dataset_info(d) for d in datasets]
        return KbOverview(
            name=kb.name,
            datasets=dataset_items,
            top_entities=[GraphEntity(**e) for e in entities],
            sample_relations=[GraphRelation(**r) for r in relations],
            chunk_count=chunk_count,
            prompt=overview_prompt(kb, dataset_items, entities, relations, chunk_count, self.label_language),
        )

    async def graph_page(self, name: str, offset: int, limit: int) -> KbGraphPage:
        await self.require(name)
        total, nodes, edges = await self.indexes.graph.page(name, offset, limit)
        return KbGraphPage(
            kb=name,
            total_nodes=total,
            offset=offset,
            limit=limit,
            nodes=[GraphEntity(**n) for n in nodes],
            edges=[GraphRelation(**e) for e in edges],
        )

    # ------------------------------------------------------------ parse

    async def parse(
        self,
        name: str,
        datasets: list[str],
        mode: int,
        schema_name: str | None,
        force: bool,
        incremental: bool = False,
    ) -> list[QueuedParse]:
        """Queue the parses. Each reads only the files added or changed since the KB's last parse of
        its dataset; `force` reads every file. An already parsed dataset is a 409 unless `force` or
        `incremental` says to parse it again."""
        kb = await self.require(name)
        if kb.status == "deleting":
            raise Conflict(f"knowledge base {name!r} is being deleted")
        if mode not in PROCESS_MODES:
            raise BadRequest(f"mode {mode} is not a process mode; use one of {sorted(PROCESS_MODES)}")
        if not datasets:
            raise BadRequest("datasets is empty: name at least one dataset to parse")
        if len(set(datasets)) != len(datasets):
            raise BadRequest("datasets lists a dataset twice")
        for dataset in datasets:
            check_name("dataset", dataset)
            if not await self.raw.exists(dataset):
                raise NotFound(f"dataset {dataset!r} does not exist")
        existing = {row.dataset: row for row in await self.store.kb_datasets(name)}
        modes = {row.process_mode for row in existing.values() if row.dataset not in datasets or not force}
        if kb.mode is not None:
            modes.add(kb.mode)
        if modes and modes != {mode}:
            raise Conflict(
                f"knowledge base {name!r} uses process mode {sorted(modes)[0]}; "
                "all its datasets must share one mode"
            )
        schema_entities = None
        if schema_name is not None:
            _, entities = await self.schemas.get(schema_name)
            schema_entities = msgspec.json.encode(entities).decode()
        for dataset in datasets:
            if await self.parses.active_for_dataset(dataset, kb=name):
                raise Conflict(f"dataset {dataset!r} already has an active parse task in {name!r}")
            previous = existing.get(dataset)
            if previous is not None and previous.parsed and not (force or incremental):
                raise Conflict(
                    f"dataset {dataset!r} is already parsed in {name!r}; set force to parse it again, "
                    "or incremental to parse its changes"
                )

        async def link(task: QueuedParse) -> None:
            """Record which task parses the dataset into the KB, before any worker can start it."""
            previous = existing.get(task.dataset)
            await self.store.upsert_kb_dataset(
                KbDatasetRow(
                    kb_name=name,
                    dataset=task.dataset,
                    parsed=previous.parsed if previous else False,
                    process_mode=mode,
                    parsed_at=previous.parsed_at if previous else None,
                    schema_name=schema_name,
                    task_id=task.task_id,
                )
            )

        created = await self.parses.submit(
            name,
            datasets,
            mode=mode,
            schema_name=schema_name,
            schema_entities=schema_entities,
            force=force,
            queued=link,
        )
        await self.store.set_kb_mode(name, mode)
        return list(created)

    async def file_page(self, name: str, offset: int, limit: int) -> KbFilePage:
        """The KB's files as its parses left them: chunks per file, or the reason a file has none."""
        await self.require(name)
        total, rows = await self.store.file_page(name, offset, limit)
        files = [
            KbFileInfo(
                dataset=r.dataset,
                path=path_of(r.file),
                name=r.file,
                chunks=r.chunks,
                skipped=r.skipped.removeprefix(f"{r.file}: ") if r.skipped else None,
                task_id=r.task_id,
            )
            for r in rows
        ]
        return KbFilePage(kb=name, total=total, offset=offset, limit=limit, files=files)

    async def parse_changes(self, task: Task) -> None:
        """After `task` completed on files that changed under it: parse the dataset's changes into
        its KB (incremental, same mode and schema)."""
        queued = await self.parse(
            task.kb_name, [task.dataset], task.mode, task.schema_name, force=False, incremental=True
        )
        ids = [q.task_id for q in queued]
        log.info("parse_changes_queued", kb=task.kb_name, dataset=task.dataset, tasks=ids)

    # ------------------------------------------------------------ removal

    async def remove_dataset(self, name: str, dataset: str) -> None:
        await self.require(name)
        check_name("dataset", dataset)
        if await self.store.get_kb_dataset(name, dataset) is None:
            raise NotFound(f"dataset {dataset!r} is not part of knowledge base {name!r}")
        if await self.parses.active_for_dataset(dataset, kb=name):
            raise Conflict(f"dataset {dataset!r} has an active parse task in {name!r}; cancel it first")
        await self.parses.forget_dataset(name, dataset)
        await self.indexes.vectors.delete_where(name, "dataset", dataset)
        await self.store.remove_kb_dataset(name, dataset)
        self.indexes.bm25.bump(name)

    async def delete(self, name: str, purge_db: bool) -> bool:
        """Start the asynchronous deletion (the KB reads `deleting` until it is gone); False when it was
        already under way."""
        await self.require(name)
        started = await self.store.mark_deleting(name, purge_db)
        if started:
            self._spawn_deleter(name)
        return started

    def _spawn_deleter(self, name: str) -> None:
        if name not in self._deleters or self._deleters[name].done():
            self._deleters[name] = asyncio.create_task(self._delete_worker(name), name=f"delete-kb-{name}")

    async def resume_deletions(self) -> None:
        """KBs a crash left `deleting` are deleted again at start-up."""
        for kb in await self.store.list_kbs():
            if kb.status == "deleting":
                self._spawn_deleter(kb.name)

    async def stop_deletions(self) -> None:
        """Cancel the deletions under way (on shutdown): each KB stays `deleting`, so the next start
        finishes it, and none of them outlives the stores it deletes from."""
        running = [task for task in self._deleters.values() if not task.done()]
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        self._deleters.clear()

    async def _delete_worker(self, name: str) -> None:
        try:
            await self.parses.cancel_all_for_kb(name)
            # Polled, not awaited on an event: tasks may run in another replica.
            while await self.parses.active_for_kb(name):  # noqa: ASYNC110
                await asyncio.sleep(DELETE_POLL_S)
            kb = await self.store.get_kb(name)
            purge = kb.purge_db if kb else True
            if purge:
                await self.indexes.vectors.drop(name)
                await self.indexes.graph.drop(name)
            await self.store.delete_kb_rows(name, purge)
            await asyncio.to_thread(shutil.rmtree, self.kb_root / name, True)
            self.indexes.bm25.bump(name)
            log.info("kb_deleted", kb=name, purge_db=purge)
        except Exception as exc:
            log.error("kb_delete_failed", kb=name, error=f"{type(exc).__name__}: {exc}")


def dataset_info(row: KbDatasetRow) -> KbDatasetInfo:
    return KbDatasetInfo(
        name=row.dataset,
        parsed=row.parsed,
        process_mode=row.process_mode,
        parsed_at=iso(row.parsed_at) if row.parsed_at else None,
    )


def overview_prompt(
    kb: KnowledgeBaseRow,
    datasets: list[KbDatasetInfo],
    entities: list[dict[str, Any]],
    relations: list[dict[str, Any]],
    chunk_count: int,
    label_language: str = "en",
) -> str:
    """A ready-to-use description of the KB for an LLM prompt, entity types as their labels."""
    lines = [f"Knowledge base '{kb.name}' ({chunk_count} text chunks)."]
    if datasets:
        parts = [f"{d.name} ({'parsed' if d.parsed else 'not parsed yet'})" for d in datasets]
        lines.append("Datasets: " + ", ".join(parts) + ".")
    if entities:
        lines.append("Most connected entities:")
        lines.extend(
            f"- {e['name']} [{type_label(e['type'], label_language)}]: {e['description'][:160]}"
            for e in entities
        )
    if relations:
        lines.append("Sample relations:")
        lines.extend(f"- {r['source']} — {r['target']}: {r['description'][:160]}" for r in relations)
    if not entities:
        lines.append("No knowledge graph entities yet (parse a dataset in mode 0 to build the graph).")
    lines.append("Answer questions using this knowledge base and cite the sources you use.")
    return "\n".join(lines)
