"""Knowledge bases: create, detail, overview, asynchronous delete (contract 3.2), dataset removal, parse.

Process modes (a KB has one, fixed by its first parse):
- 0: vector index + knowledge graph (the chat model extracts entities and relations);
- 1: vector index only (no model calls while parsing).
"""

from __future__ import annotations

import asyncio
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import structlog

from lore_core.errors import BadRequest, Conflict, NotFound
from lore_core.naming import check_name
from lore_docdb.datasets.store import RawStore
from lore_docdb.index.embedding import KbEmbedders
from lore_docdb.index.graph import GraphIndex
from lore_docdb.index.models import KbDatasetRow, KnowledgeBaseRow
from lore_docdb.index.store import IndexStore, KbExists
from lore_docdb.index.vectors import VectorIndex
from lore_docdb.knowledge_bases.models import (
    PROCESS_MODES,
    GraphEntity,
    GraphRelation,
    KbDatasetInfo,
    KbGraphPage,
    KbOverview,
)
from lore_docdb.schemas.service import SchemaService
from lore_docdb.tasks.models import Task
from lore_docdb.tasks.service import TaskService
from lore_docdb.tasks.store import TaskStore

log = structlog.get_logger("lore.docdb.kb")

DELETE_POLL_S = 0.2


class KbNotFound(NotFound):
    def __init__(self, name: str) -> None:
        super().__init__(f"knowledge base {name!r} does not exist")


class KnowledgeBaseService:
    def __init__(
        self,
        index: IndexStore,
        vectors: VectorIndex,
        graph: GraphIndex,
        tasks: TaskService,
        task_store: TaskStore,
        schemas: SchemaService,
        raw: RawStore,
        kb_root: Path,
        on_chunks_changed: Callable[[str], None],
        embedders: KbEmbedders,
    ) -> None:
        self.index = index
        self.vectors = vectors
        self.graph = graph
        self.tasks = tasks
        self.task_store = task_store
        self.schemas = schemas
        self.raw = raw
        self.kb_root = kb_root
        self.on_chunks_changed = on_chunks_changed
        self.embedders = embedders
        self._deleters: dict[str, asyncio.Task[None]] = {}

    async def require(self, name: str) -> KnowledgeBaseRow:
        check_name("knowledge base", name)
        kb = await self.index.get_kb(name)
        if kb is None:
            raise KbNotFound(name)
        return kb

    async def create(self, name: str, embedding_model: str | None = None) -> KnowledgeBaseRow:
        check_name("knowledge base", name)
        model = self.embedders.for_new_kb(embedding_model)
        try:
            row = await self.index.create_kb(name, model)
        except KbExists as exc:
            raise Conflict(f"knowledge base {name!r} already exists") from exc
        await asyncio.to_thread((self.kb_root / name).mkdir, parents=True, exist_ok=True)
        return row

    async def list_all(self) -> list[KnowledgeBaseRow]:
        return await self.index.list_kbs()

    async def detail(self, name: str) -> tuple[KnowledgeBaseRow, list[KbDatasetRow]]:
        kb = await self.require(name)
        return kb, await self.index.kb_datasets(name)

    async def overview(self, name: str, top_nodes: int, sample_relations: int) -> KbOverview:
        kb, datasets = await self.detail(name)
        entities = await self.graph.top_entities(name, top_nodes)
        relations = await self.graph.sample_relations(name, sample_relations)
        chunk_count = await self.index.count_chunks(name)
        dataset_items = [dataset_info(d) for d in datasets]
        return KbOverview(
            name=kb.name,
            datasets=dataset_items,
            top_entities=[GraphEntity(**e) for e in entities],
            sample_relations=[GraphRelation(**r) for r in relations],
            chunk_count=chunk_count,
            prompt=overview_prompt(kb, dataset_items, entities, relations, chunk_count),
        )

    async def graph_page(self, name: str, offset: int, limit: int) -> KbGraphPage:
        await self.require(name)
        total, nodes, edges = await self.graph.page(name, offset, limit)
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
        self, name: str, datasets: list[str], mode: int, schema_name: str | None, force: bool
    ) -> list[Task]:
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
        existing = {row.dataset: row for row in await self.index.kb_datasets(name)}
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
            if await self.task_store.active_for_dataset(dataset, kb=name):
                raise Conflict(f"dataset {dataset!r} already has an active parse task in {name!r}")
            previous = existing.get(dataset)
            if previous is not None and previous.parsed and not force:
                raise Conflict(
                    f"dataset {dataset!r} is already parsed in {name!r}; set force to parse it again"
                )
        created = []
        for dataset in datasets:
            task = Task(
                task_id=str(uuid.uuid4()),
                status="pending",
                kb_name=name,
                dataset=dataset,
                mode=mode,
                schema_name=schema_name,
                schema_entities=schema_entities,
            )
            await self.task_store.add(task)
            previous = existing.get(dataset)
            await self.index.upsert_kb_dataset(
                KbDatasetRow(
                    kb_name=name,
                    dataset=dataset,
                    parsed=previous.parsed if previous else False,
                    process_mode=mode,
                    parsed_at=previous.parsed_at if previous else None,
                    schema_name=schema_name,
                    task_id=task.task_id,
                )
            )
            created.append(task)
        await self.index.set_kb_mode(name, mode)
        self.tasks.notify()
        return created

    # ------------------------------------------------------------ removal

    async def remove_dataset(self, name: str, dataset: str) -> None:
        await self.require(name)
        check_name("dataset", dataset)
        if await self.index.get_kb_dataset(name, dataset) is None:
            raise NotFound(f"dataset {dataset!r} is not part of knowledge base {name!r}")
        if await self.task_store.active_for_dataset(dataset, kb=name):
            raise Conflict(f"dataset {dataset!r} has an active parse task in {name!r}; cancel it first")
        for task_id in await self.index.chunk_task_ids(name, dataset):
            await self.graph.forget_task(name, task_id)
        await self.vectors.delete_where(name, "dataset", dataset)
        await self.index.remove_kb_dataset(name, dataset)
        self.on_chunks_changed(name)

    async def delete(self, name: str, purge_db: bool) -> bool:
        """Start the asynchronous deletion; False when it was already under way (contract 3.2)."""
        await self.require(name)
        started = await self.index.mark_deleting(name, purge_db)
        if started:
            self._spawn_deleter(name)
        return started

    def _spawn_deleter(self, name: str) -> None:
        if name not in self._deleters or self._deleters[name].done():
            self._deleters[name] = asyncio.create_task(self._delete_worker(name), name=f"delete-kb-{name}")

    async def resume_deletions(self) -> None:
        """KBs a crash left `deleting` are deleted again at start-up."""
        for kb in await self.index.list_kbs():
            if kb.status == "deleting":
                self._spawn_deleter(kb.name)

    async def _delete_worker(self, name: str) -> None:
        try:
            await self.tasks.cancel_all_for_kb(name)
            # Polled, not awaited on an event: tasks may run in another replica.
            while await self.task_store.active_for_kb(name):  # noqa: ASYNC110
                await asyncio.sleep(DELETE_POLL_S)
            kb = await self.index.get_kb(name)
            purge = kb.purge_db if kb else True
            if purge:
                await self.vectors.drop(name)
                await self.graph.drop(name)
            await self.index.delete_kb_rows(name, purge)
            await asyncio.to_thread(shutil.rmtree, self.kb_root / name, True)
            self.on_chunks_changed(name)
            log.info("kb_deleted", kb=name, purge_db=purge)
        except Exception as exc:
            log.error("kb_delete_failed", kb=name, error=f"{type(exc).__name__}: {exc}")


def dataset_info(row: KbDatasetRow) -> KbDatasetInfo:
    return KbDatasetInfo(
        name=row.dataset,
        parsed=row.parsed,
        process_mode=row.process_mode,
        parsed_at=row.parsed_at.isoformat() if row.parsed_at else None,
    )


def overview_prompt(
    kb: KnowledgeBaseRow,
    datasets: list[KbDatasetInfo],
    entities: list[dict[str, Any]],
    relations: list[dict[str, Any]],
    chunk_count: int,
) -> str:
    """A ready-to-use description of the KB for an LLM prompt."""
    lines = [f"Knowledge base '{kb.name}' ({chunk_count} text chunks)."]
    if datasets:
        parts = [f"{d.name} ({'parsed' if d.parsed else 'not parsed yet'})" for d in datasets]
        lines.append("Datasets: " + ", ".join(parts) + ".")
    if entities:
        lines.append("Most connected entities:")
        lines.extend(f"- {e['name']} [{e['type']}]: {e['description'][:160]}" for e in entities)
    if relations:
        lines.append("Sample relations:")
        lines.extend(f"- {r['source']} — {r['target']}: {r['description'][:160]}" for r in relations)
    if not entities:
        lines.append("No knowledge graph entities yet (parse a dataset in mode 0 to build the graph).")
    lines.append("Answer questions using this knowledge base and cite the sources you use.")
    return "\n".join(lines)
