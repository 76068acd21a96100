"""Routes of contract 4.5."""

from __future__ import annotations

import json
from typing import Any, Literal

from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery

from lore_common.providers.container import Providers
from lore_core.bounds import LimitParam
from lore_core.web import from_state
from lore_docdb.config.service import ConfigService
from lore_docdb.envelope import ok
from lore_docdb.tasks.models import Task
from lore_docdb.tasks.service import TaskService

TaskStatus = Literal["pending", "running", "completed", "failed", "cancelling", "cancelled"]


def task_object(task: Task) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "kb_name": task.kb_name,
        "dataset": task.dataset,
        "mode": task.mode,
        "schema_name": task.schema_name,
    }
    if task.skipped_files:
        metadata["skipped_files"] = json.loads(task.skipped_files)
    return {
        "task_id": task.task_id,
        "status": task.status,
        "task_type": task.task_type,
        "metadata": metadata,
        "stage": task.stage,
        "created_at": task.created_at,
        "updated_at": task.updated_at,
        "error": task.error,
    }


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
    ) -> list[dict[str, Any]]:
        rows = await tasks.list_tasks(status, limit)
        return [task_object(t) for t in rows]

    @get("/tasks/{task_id:str}", summary="One task")
    async def get_task(self, tasks: NamedDependency[TaskService], task_id: FromPath[str]) -> dict[str, Any]:
        return task_object(await tasks.get(task_id))

    @post("/tasks/{task_id:str}/cancel", status_code=200, summary="Cancel a pending or running task")
    async def cancel(self, tasks: NamedDependency[TaskService], task_id: FromPath[str]) -> dict[str, Any]:
        status = await tasks.cancel(task_id)
        return ok(message=f"task {status}", data={"task_id": task_id, "status": status})

    @get("/config", summary="The processing configuration in effect")
    async def config(
        self, config_service: NamedDependency[ConfigService], providers: NamedDependency[Providers]
    ) -> dict[str, Any]:
        settings = config_service.settings
        llm, embedding, chunking = (
            settings.docdb.llm,
            settings.docdb.embedding_api,
            settings.parameter.chunk_config,
        )
        graph = settings.parameter.graph_config
        models = providers.describe()
        return ok(
            message="ok",
            data={
                "llm": {
                    "model": llm.model,
                    "max_concurrent": llm.max_concurrent_requests,
                    "timeout": llm.timeout,
                },
                "embedding": {
                    # `auto`: each KB's model (and dimension) is chosen by its first parse.
                    "model": models["embedder"],
                    "dim": models["embedding_dim"],
                    "batch_size": embedding.batch_size,
                },
                "graph": {
                    "chunk_size": chunking.chunk_size,
                    "overlap": chunking.overlap,
                    "batch_size": graph.batch_size,
                    "max_workers": graph.max_workers,
                },
                "parse_max_workers": settings.parse_max_workers,
            },
        )
