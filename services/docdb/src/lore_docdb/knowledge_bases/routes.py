"""Routes of knowledge bases: list, create, detail, overview, graph, delete, dataset removal, parse."""

from __future__ import annotations

from litestar import Controller, Response, delete, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, JSONBody

from lore_core.bounds import GraphPage, Offset, OverviewCount
from lore_core.clock import iso
from lore_core.web import from_state
from lore_docdb.knowledge_bases.models import (
    CreateKnowledgeBase,
    KbCreated,
    KbDatasetRef,
    KbDatasetRemoved,
    KbDeleting,
    KbDeletingInfo,
    KbDetail,
    KbFilePage,
    KbGraphPage,
    KbList,
    KbOverviewReply,
    KbSummary,
    ParseQueued,
    ParseRequest,
    ParseStarted,
    QueuedTask,
)
from lore_docdb.knowledge_bases.service import KnowledgeBaseService


class KnowledgeBaseController(Controller):
    path = "/api/v1/docdb/files/knowledge-bases"
    tags = ["knowledge bases"]
    dependencies = {"knowledge_bases": from_state("knowledge_bases")}

    @get("/", summary="List knowledge bases")
    async def list_kbs(self, knowledge_bases: NamedDependency[KnowledgeBaseService]) -> KbList:
        rows = await knowledge_bases.list_all()
        return KbList(
            data=[KbSummary(name=r.name, created_at=iso(r.created_at), status=r.status) for r in rows]
        )

    @post("/", status_code=200, summary="Create an empty knowledge base; 409 if it exists")
    async def create(
        self, knowledge_bases: NamedDependency[KnowledgeBaseService], data: JSONBody[CreateKnowledgeBase]
    ) -> KbCreated:
        created = await knowledge_bases.create(data.name, data.embedding_model)
        return KbCreated(message=f"knowledge base {created.name!r} created", data=created)

    @get("/{kb_name:str}", summary="Knowledge-base detail: datasets and the query modes it supports")
    async def detail(
        self, knowledge_bases: NamedDependency[KnowledgeBaseService], kb_name: FromPath[str]
    ) -> KbDetail:
        return await knowledge_bases.detail(kb_name)

    @get("/{kb_name:str}/overview", summary="Most connected entities, sample relations and an LLM prompt")
    async def overview(
        self,
        knowledge_bases: NamedDependency[KnowledgeBaseService],
        kb_name: FromPath[str],
        top_nodes: OverviewCount = 20,
        sample_relations: OverviewCount = 15,
    ) -> KbOverviewReply:
        overview = await knowledge_bases.overview(kb_name, top_nodes, sample_relations)
        return KbOverviewReply(overview=overview, prompt=overview.prompt)

    @get(
        "/{kb_name:str}/graph",
        summary="The knowledge graph by pages: entities by degree, relations among those paged so far",
    )
    async def graph(
        self,
        knowledge_bases: NamedDependency[KnowledgeBaseService],
        kb_name: FromPath[str],
        offset: Offset = 0,
        limit: GraphPage = 500,
    ) -> KbGraphPage:
        return await knowledge_bases.graph_page(kb_name, offset, limit)

    @get("/{kb_name:str}/files", summary="The KB's files by pages: chunks per file, or why a file has none")
    async def files(
        self,
        knowledge_bases: NamedDependency[KnowledgeBaseService],
        kb_name: FromPath[str],
        offset: Offset = 0,
        limit: GraphPage = 500,
    ) -> KbFilePage:
        return await knowledge_bases.file_page(kb_name, offset, limit)

    @delete(
        "/{kb_name:str}", status_code=202, summary="Delete asynchronously: 202, or 200 when already deleting"
    )
    async def remove(
        self,
        knowledge_bases: NamedDependency[KnowledgeBaseService],
        kb_name: FromPath[str],
        purge_db: FromQuery[bool] = True,
    ) -> Response[KbDeleting]:
        started = await knowledge_bases.delete(kb_name, purge_db)
        body = KbDeleting(
            message=f"knowledge base {kb_name!r} is being deleted"
            if started
            else "deletion already in progress",
            data=KbDeletingInfo(name=kb_name, status="deleting", purge_db=purge_db),
        )
        return Response(body, status_code=202 if started else 200)

    @delete(
        "/{kb_name:str}/datasets/{dataset_name:str}", status_code=200, summary="Remove a dataset from a KB"
    )
    async def remove_dataset(
        self,
        knowledge_bases: NamedDependency[KnowledgeBaseService],
        kb_name: FromPath[str],
        dataset_name: FromPath[str],
    ) -> KbDatasetRemoved:
        await knowledge_bases.remove_dataset(kb_name, dataset_name)
        return KbDatasetRemoved(
            message=f"dataset {dataset_name!r} removed from {kb_name!r}; its raw files are untouched",
            data=KbDatasetRef(kb_name=kb_name, dataset=dataset_name),
        )

    @post("/{kb_name:str}/parse", status_code=200, summary="Start one background parse task per dataset")
    async def parse(
        self,
        knowledge_bases: NamedDependency[KnowledgeBaseService],
        kb_name: FromPath[str],
        data: JSONBody[ParseRequest],
    ) -> ParseStarted:
        tasks = await knowledge_bases.parse(
            kb_name, data.datasets, data.mode, data.schema_name, data.force, data.incremental
        )
        return ParseStarted(
            message=f"{len(tasks)} parse task(s) queued",
            data=ParseQueued(
                tasks=[QueuedTask(task_id=t.task_id, dataset=t.dataset) for t in tasks], mode=data.mode
            ),
        )
