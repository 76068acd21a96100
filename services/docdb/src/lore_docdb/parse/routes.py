"""Routes of processing tasks: list, detail, cancel, and the processing configuration in effect."""

from __future__ import annotations

from typing import Literal

from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery

from lore_core.bounds import LimitParam
from lore_core.web import from_state
from lore_docdb.parse.models import (
    ProcessingConfig,
    TaskCancelled,
    TaskObject,
    TaskState,
)
from lore_docdb.parse.service import ParseService

TaskStatus = Literal["pending", "running", "completed", "failed", "cancelling", "cancelled"]


class ParseController(Controller):
    path = "/api/v1/docdb/files/processing"
    tags = ["processing tasks"]
    dependencies = {"parse": from_state("parse")}

    @get("/tasks", summary="List tasks, newest first")
    async def list_tasks(
        self,
        parse: NamedDependency[ParseService],
        status: FromQuery[TaskStatus | None] = None,
        limit: LimitParam = 50,
    ) -> list[TaskObject]:
        return [TaskObject.of(t) for t in await parse.list_tasks(status, limit)]

    @get("/tasks/{task_id:str}", summary="One task")
    async def get_task(self, parse: NamedDependency[ParseService], task_id: FromPath[str]) -> TaskObject:
        return TaskObject.of(await parse.get(task_id))

    @post("/tasks/{task_id:str}/cancel", status_code=200, summary="Cancel a pending or running task")
    async def cancel(self, parse: NamedDependency[ParseService], task_id: FromPath[str]) -> TaskCancelled:
        status = await parse.cancel(task_id)
        return TaskCancelled(message=f"task {status}", data=TaskState(task_id=task_id, status=status))

    @get("/config", summary="The processing configuration in effect")
    async def config(self, parse: NamedDependency[ParseService]) -> ProcessingConfig:
        return ProcessingConfig(message="ok", data=parse.processing_config())
