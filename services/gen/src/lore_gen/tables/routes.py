"""The table pipeline's routes: submit, status and the WebSocket progress stream (see docs/gen.md)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import msgspec
from litestar import Controller, Request, WebSocket, get, post, websocket
from litestar.di import NamedDependency
from litestar.exceptions import WebSocketDisconnect
from litestar.params import FromPath, JSONBody

from lore_core.errors import LoreError
from lore_core.internal import CALLER_HEADER
from lore_core.web import from_state
from lore_gen.tables.models import SubmitRequest
from lore_gen.tables.service import TableService
from lore_gen.tasks.models import TaskAccepted, TaskStatus

STREAM_DESCRIPTION = """\
After connecting, send one JSON text message: the submit body
(`{"question": str, "sql_question": str|null, "top_k": 5, "threshold": 0.5, "max_workers": 16,
"kb_name": str|null}`). The server answers with `{"type": "progress", "step": n, "name", "task_id", ...}`
for each step (1 schema, 2 rows — repeated with `done`/`total` —, 3 table, 4 sql), then
`{"type": "result", "data": {table_name, schema, csv_data, sql, query_results}}` or
`{"type": "error", "message"}`, and closes. A malformed message gets an `error` message. The task also
keeps running, and stays readable at `/pipeline/status/{task_id}`, if the client disconnects."""


class TableController(Controller):
    path = "/api/v1/gen/pipeline"
    tags = ["table generation"]
    dependencies = {"tables": from_state("tables")}

    @post(
        "/submit",
        status_code=200,
        summary="Start the table pipeline; returns `{task_id, status}` at once",
        description="Poll `/pipeline/status/{task_id}` or use the WebSocket `/pipeline/stream`.",
    )
    async def submit(
        self,
        request: Request[Any, Any, Any],
        tables: NamedDependency[TableService],
        data: JSONBody[SubmitRequest],
    ) -> TaskAccepted:
        record = await tables.submit(data, caller=request.headers.get(CALLER_HEADER))
        return record.accepted()

    @get(
        "/status/{task_id:str}",
        summary="`{task_id, status, result}`: pending, running (with `step`), completed or failed (`error`)",
    )
    async def status(
        self, request: Request[Any, Any, Any], tables: NamedDependency[TableService], task_id: FromPath[str]
    ) -> TaskStatus:
        record = await tables.status(task_id, request.headers.get(CALLER_HEADER))
        return record.public()


@websocket(
    "/api/v1/gen/pipeline/stream",
    description=STREAM_DESCRIPTION,
    tags=["table generation"],
    dependencies={"tables": from_state("tables")},
)
async def pipeline_stream(socket: WebSocket[Any, Any, Any], tables: NamedDependency[TableService]) -> None:
    await socket.accept()
    try:
        raw = await socket.receive_data(mode="text")
    except WebSocketDisconnect:
        return
    try:
        body = msgspec.json.decode(raw, type=SubmitRequest)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        await socket.send_json({"type": "error", "message": f"invalid submit message: {exc}"})
        await socket.close(code=1008, reason="invalid submit message")
        return

    events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    try:
        record = await tables.submit(
            body, listener=events.put_nowait, caller=socket.headers.get(CALLER_HEADER)
        )
    except LoreError as exc:
        await socket.send_json({"type": "error", "message": exc.message})
        await socket.close(code=1000)
        return
    try:
        while True:
            event = await events.get()
            if event["type"] == "progress":
                event = {**event, "task_id": record.task_id}
            await socket.send_json(event)
            if event["type"] in ("result", "error"):
                break
        await socket.close(code=1000)
    except (WebSocketDisconnect, OSError, RuntimeError):
        pass  # the client left; the task runs on and its status stays readable
    finally:
        with contextlib.suppress(Exception):
            tables.detach(record.task_id, events.put_nowait)
