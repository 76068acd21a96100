"""Routes of processing tasks: list, detail, cancel, and the processing configuration in effect."""

from __future__ import annotations

from typing import Literal

from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery

from lore_common.providers.container import Providers
from lore_core.bounds import LimitParam
from lore_core.web import from_state
from lore_docdb.config.service import ConfigService
from lore_docdb.tasks.models import (
    EmbeddingSettings,
    GraphSettings,
    LlmSettings,
    ProcessingConfig,
    ProcessingSettings,
    TaskCancelled,
    TaskObject,
    TaskState,
)
from lore_docdb.tasks.service import TaskService

TaskStatus = Literal["pending", "running", "completed", "failed", "cancelling", "cancelled"]


class TaskController(Controller):
    path = "/api/v1/docdb/files/processing"
    tags = ["processing tasks"]
    dependencies = {
        "tasks": from_state("tasks"),
        "config_service": from_state("config_service"),
        "providers": from_state("providers"),
    }

    @get("/tasks", summary="List tasks, newest first")
    async def list_tasks(
        self,
        tasks: NamedDependency[TaskService],
        status: FromQuery[TaskStatus | None] = None,
        limit: LimitParam = 50,
    ) -> list[TaskObject]:
        return [TaskObject.of(t) for t in await tasks.list_tasks(status, limit)]

    @get("/tasks/{task_id:str}", summary="One task")
    async def get_task(self, tasks: NamedDependency[TaskService], task_id: FromPath[str]) -> TaskObject:
        return TaskObject.of(await tasks.get(task_id))

    @post("/tasks/{task_id:str}/cancel", status_code=200, summary="Cancel a pending or running task")
    async def cancel(self, tasks: NamedDependency[TaskService], task_id: FromPath[str]) -> TaskCancelled:
        status = await tasks.cancel(task_id)
        return TaskCancelled(message=f"task {status}", data=TaskState(task_id=task_id, status=status))

    @get("/config", summary="The processing configuration in effect")
    async def config(
        self, config_service: NamedDependency[ConfigService], providers: NamedDependency[Providers]
    ) -> ProcessingConfig:
        settings = config_service.settings
        llm, embedding, chunking = (
            settings.docdb.llm,
            settings.docdb.embedding_api,
            settings.parameter.chunk_config,
        )
        graph = settings.parameter.graph_config
        models = providers.describe()
        return ProcessingConfig(
            message="ok",
            data=ProcessingSettings(
                llm=LlmSettings(
                    model=llm.model, max_concurrent=llm.max_concurrent_requests, timeout=llm.timeout
                ),
                # `auto`: each KB's model (and dimension) is chosen by its first parse.
                embedding=EmbeddingSettings(
                    model=models["embedder"], dim=models["embedding_dim"], batch_size=embedding.batch_size
                ),
                graph=GraphSettings(
                    chunk_size=chunking.chunk_size,
                    overlap=chunking.overlap,
                    batch_size=graph.batch_size,
                    max_workers=graph.max_workers,
                ),
                parse_max_workers=settings.parse_max_workers,
            ),
        )
