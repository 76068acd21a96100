"""Routes of contract 4.4."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Response, delete, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, JSONBody

from lore_core.bounds import GraphPage, Offset, OverviewCount
from lore_core.web import from_state
from lore_docdb.envelope import ok
from lore_docdb.knowledge_bases.models import CreateKnowledgeBase, ParseRequest, query_modes_for
from lore_docdb.knowledge_bases.service import KnowledgeBaseService


class KnowledgeBaseController(Controller):
    path = "/api/v1/docdb/files/knowledge-bases"
    tags = ["knowledge bases"]
    dependencies = {"knowledge_bases": from_state("knowledge_bases")}

    @get("/", summary="List knowledge bases")
    async def list_kbs(self, knowledge_bases: NamedDependency[KnowledgeBaseService]) -> dict[str, Any]:
        rows = await knowledge_bases.list_all()
        return ok(
            data=[{"name": r.name, "created_at": r.created_at.isoformat(), "status": r.status} for r in rows],
        )

    @post("/", status_code=200, summary="Create an empty knowledge base; 409 if it exists")
    async def create(
        self, knowledge_bases: NamedDependency[KnowledgeBaseService], data: JSONBody[CreateKnowledgeBase]
    ) -> dict[str, Any]:
        row = await knowledge_bases.create(data.name, data.embedding_model)
        return ok(
            message=f"knowledge base {row.name!r} created",
            data={
                "name": row.name,
                "created_at": row.created_at.isoformat(),
                "status": row.status,
                "embedding_model": knowledge_bases.embedders.shown(row.embedding_model),
            },
        )

    @get("/{kb_name:str}", summary="Knowledge-base detail: datasets and the query modes it supports")
    async def detail(
        self, knowledge_bases: NamedDependency[KnowledgeBaseService], kb_name: FromPath[str]
    ) -> dict[str, Any]:
        kb, datasets = await knowledge_bases.detail(kb_name)
        return ok(
            name=kb.name,
            created_at=kb.created_at.isoformat(),
            status=kb.status,
            process_mode=kb.mode,
            embedding_model=knowledge_bases.embedders.shown(kb.embedding_model),
            datasets=[
                {
                    "name": d.dataset,
                    "parsed": d.parsed,
                    "process_mode": d.process_mode,
                    "parsed_at": d.parsed_at.isoformat() if d.parsed_at else None,
                }
                for d in datasets
            ],
            available_query_modes=query_modes_for(kb.mode),
        )

    @get("/{kb_name:str}/overview", summary="Most connected entities, sample relations and an LLM prompt")
    async def overview(
        self,
        knowledge_bases: NamedDependency[KnowledgeBaseService],
        kb_name: FromPath[str],
        top_nodes: OverviewCount = 20,
        sample_relations: OverviewCount = 15,
    ) -> dict[str, Any]:
        overview = await knowledge_bases.overview(kb_name, top_nodes, sample_relations)
        return ok(overview=overview, prompt=overview["prompt"])

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
    ) -> dict[str, Any]:
        return ok(**await knowledge_bases.graph_page(kb_name, offset, limit))

    @delete(
        "/{kb_name:str}", status_code=202, summary="Delete asynchronously: 202, or 200 when already deleting"
    )
    async def remove(
        self,
        knowledge_bases: NamedDependency[KnowledgeBaseService],
        kb_name: FromPath[str],
        purge_db: FromQuery[bool] = True,
    ) -> Response[dict[str, Any]]:
        started = await knowledge_bases.delete(kb_name, purge_db)
        body = ok(
            message=f"knowledge base {kb_name!r} is being deleted"
            if started
            else "deletion already in progress",
            data={"name": kb_name, "status": "deleting", "purge_db": purge_db},
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
    ) -> dict[str, Any]:
        await knowledge_bases.remove_dataset(kb_name, dataset_name)
        return ok(
            message=f"dataset {dataset_name!r} removed from {kb_name!r}; its raw files are untouched",
            data={"kb_name": kb_name, "dataset": dataset_name},
        )

    @post("/{kb_name:str}/parse", status_code=200, summary="Start one background parse task per dataset")
    async def parse(
        self,
        knowledge_bases: NamedDependency[KnowledgeBaseService],
        kb_name: FromPath[str],
        data: JSONBody[ParseRequest],
    ) -> dict[str, Any]:
        tasks = await knowledge_bases.parse(kb_name, data.datasets, data.mode, data.schema_name, data.force)
        return ok(
            message=f"{len(tasks)} parse task(s) queued",
            data={
                "tasks": [{"task_id": t.task_id, "dataset": t.dataset} for t in tasks],
                "mode": data.mode,
            },
        )
