"""Routes of sources: a dataset's source (set, show, remove), its syncs (run one, list, show), and every
source at once."""

from __future__ import annotations

from typing import Annotated

import msgspec
from litestar import Controller, delete, get, post, put
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, JSONBody

from lore_core.web import from_state
from lore_docdb.datasets.routes import DATASETS
from lore_docdb.envelope import Message
from lore_docdb.sources.models import (
    SourceInfo,
    SourceList,
    SourceSpec,
    SyncStarted,
    SyncTaskList,
    SyncTaskReply,
)
from lore_docdb.sources.service import SourceService

Limit = Annotated[int, msgspec.Meta(ge=1, le=500)]


class SourceController(Controller):
    path = DATASETS + "/{dataset:str}"
    tags = ["sources"]
    dependencies = {"sources": from_state("sources")}

    @put("/source", status_code=200, summary="Set the dataset's source (folder, s3, git or web)")
    async def set_source(
        self, sources: NamedDependency[SourceService], dataset: FromPath[str], data: JSONBody[SourceSpec]
    ) -> SourceInfo:
        return await sources.set(dataset, data)

    @get("/source", summary="The dataset's source (secrets shown as ***), next scheduled sync, last sync")
    async def get_source(self, sources: NamedDependency[SourceService], dataset: FromPath[str]) -> SourceInfo:
        return await sources.info(dataset)

    @delete("/source", status_code=200, summary="Remove the dataset's source (its files stay)")
    async def delete_source(self, sources: NamedDependency[SourceService], dataset: FromPath[str]) -> Message:
        await sources.remove(dataset)
        return Message(message=f"dataset {dataset!r} has no source now")

    @post("/sync", status_code=200, summary="Sync the dataset from its source now, as a task")
    async def sync(self, sources: NamedDependency[SourceService], dataset: FromPath[str]) -> SyncStarted:
        task = await sources.sync(dataset)
        return SyncStarted(message=f"sync {task.task_id} started", data=task)

    @get("/syncs", summary="The dataset's syncs, newest first, with their reports")
    async def list_syncs(
        self, sources: NamedDependency[SourceService], dataset: FromPath[str], limit: FromQuery[Limit] = 20
    ) -> SyncTaskList:
        return SyncTaskList(data=await sources.list_syncs(dataset, limit))

    @get("/syncs/{task_id:str}", summary="One sync: its state and report (added, changed, deleted, …)")
    async def get_sync(
        self, sources: NamedDependency[SourceService], dataset: FromPath[str], task_id: FromPath[str]
    ) -> SyncTaskReply:
        return SyncTaskReply(data=await sources.get_sync(dataset, task_id))


class SourceListController(Controller):
    path = "/api/v1/docdb/files/raw-files/sources"
    tags = ["sources"]
    dependencies = {"sources": from_state("sources")}

    @get("/", summary="Every dataset's source with its last sync")
    async def list_sources(self, sources: NamedDependency[SourceService]) -> SourceList:
        return SourceList(data=await sources.list_sources())
