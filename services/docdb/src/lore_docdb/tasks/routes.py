"""Routes of contract 4.5."""

from __future__ import annotations

import json
from typing import Any, Literal

from litestar import Controller, Request, get, post
from litestar.params import FromPath, FromQuery

from lore_docdb.tasks.models import TaskRow
from lore_docdb.tasks.service import TaskService

TaskStatus = Literal["pending", "running", "completed", "failed", "cancelling", "cancelled"]


def tasks_of(request: Request[Any, Any, Any]) -> TaskService:
    service: TaskService = request.app.state.tasks
    return service


def task_object(task: TaskRow) -> dict[str, Any]:
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
        "created_at": task.created_at.isoformat(),
        "updated_at": task.updated_at.isoformat(),
        "error": task.error,
    }


class TaskController(Controller):
    path = "/api/v1/docdb/files/processing"
    tags = ["processing tasks"]

    @get("/tasks", summary="List tasks, newest first")
    async def list_tasks(
        self,
        request: Request[Any, Any, Any],
        status: FromQuery[TaskStatus | None] = None,
        limit: FromQuery[int] = 50,
    ) -> list[dict[str, Any]]:
        rows = await tasks_of(request).list_tasks(status, max(1, min(limit, 1000)))
        return [task_object(t) for t in rows]

    @get("/tasks/{task_id:str}", summary="One task")
    async def get_task(self, request: Request[Any, Any, Any], task_id: FromPath[str]) -> dict[str, Any]:
        return task_object(await tasks_of(request).get(task_id))

    @post("/tasks/{task_id:str}/cancel", status_code=200, summary="Cancel a pending or running task")
    async def cancel(self, request: Request[Any, Any, Any], task_id: FromPath[str]) -> dict[str, Any]:
        status = await tasks_of(request).cancel(task_id)
        return {"success": True, "message": f"task {status}", "data": {"task_id": task_id, "status": status}}

    @get("/config", summary="The processing configuration in effect")
    async def config(self, request: Request[Any, Any, Any]) -> dict[str, Any]:
        settings = request.app.state.config_service.settings
        providers = request.app.state.providers
        llm, embedding, chunking = (
            settings.docdb.llm,
            settings.docdb.embedding_api,
            settings.parameter.chunk_config,
        )
        graph = settings.parameter.graph_config
        return {
            "success": True,
            "message": "ok",
            "data": {
                "llm": {
                    "model": llm.model,
                    "max_concurrent": llm.max_concurrent_requests,
                    "timeout": llm.timeout,
                },
                "embedding": {
                    "model": providers.embedder.name,
                    "dim": providers.embedder.dim,
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
        }
