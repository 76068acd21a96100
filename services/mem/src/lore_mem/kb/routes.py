"""Routes of the memory graph (mem kb): insert, the insert job's status, the list of inserts, forgetting
one, query (see docs/mem.md)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from litestar import Controller, Request, delete, get, post
from litestar.datastructures import UploadFile
from litestar.di import NamedDependency
from litestar.openapi.spec import OpenAPIFormat, OpenAPIMediaType, OpenAPIType, Operation, RequestBody, Schema
from litestar.params import FromPath, JSONBody, QueryParameter
from litestar.response import Stream

from lore_core.errors import BadRequest
from lore_core.sse import event_stream
from lore_core.web import from_state
from lore_mem.kb.models import (
    DEFAULT_WORKSPACE,
    WORKSPACE_CHARS,
    InsertAccepted,
    InsertDeleted,
    InsertPage,
    InsertStatus,
    KbAnswer,
    QueryRequest,
)
from lore_mem.kb.service import MEDIA_KINDS, KbService

MAX_INSERT_BYTES = 512 * 1024 * 1024
COPY_CHUNK = 1024 * 1024
MAX_PAGE = 1000
# Every kb route takes `?workspace=`: the graph the call belongs to (see docs/mem.md). The gateway
# puts in the one a key limited to some memories may use.
Workspace = Annotated[
    str,
    QueryParameter(
        min_length=1,
        max_length=WORKSPACE_CHARS,
        pattern=r"^[^\x00-\x1f\x7f]+$",
        description=f"the graph this call belongs to; `{DEFAULT_WORKSPACE}` unless named",
    ),
]


async def _spool(upload: UploadFile, folder: Path) -> Path:
    """Stream an upload into a file of ours (never whole in memory)."""
    await asyncio.to_thread(folder.mkdir, parents=True, exist_ok=True)
    target = folder / uuid.uuid4().hex
    handle = await asyncio.to_thread(open, target, "wb")
    try:
        while chunk := await upload.read(COPY_CHUNK):
            await asyncio.to_thread(handle.write, chunk)
    finally:
        await asyncio.to_thread(handle.close)
        await upload.close()
    return target


_TEXT = Schema(type=OpenAPIType.STRING, description="the text to remember")
_FILE = Schema(type=OpenAPIType.STRING, format=OpenAPIFormat.BINARY)
INSERT_FORM = Schema(
    type=OpenAPIType.OBJECT,
    required=["query"],
    properties={"query": _TEXT, **{kind: _FILE for kind in MEDIA_KINDS}},
)


@dataclass
class InsertOperation(Operation):
    """The insert form in the OpenAPI document: the route reads it itself (`request.form()`), so that
    a url-encoded form works as well as multipart."""

    def __post_init__(self) -> None:
        self.request_body = RequestBody(
            required=True,
            content={
                "multipart/form-data": OpenAPIMediaType(schema=INSERT_FORM),
                "application/x-www-form-urlencoded": OpenAPIMediaType(
                    schema=Schema(type=OpenAPIType.OBJECT, required=["query"], properties={"query": _TEXT})
                ),
            },
        )


class KbController(Controller):
    path = "/api/v1/mem/kb"
    tags = ["kb memory"]
    dependencies = {"kb": from_state("kb")}

    @post(
        "/insert",
        status_code=202,
        request_max_body_size=MAX_INSERT_BYTES,
        operation_class=InsertOperation,
        summary="Queue text (and optional video, audio, image) for the memory graph (mem kb)",
        description=(
            "multipart: `query` (text, required), `video`, `audio`, `image` (files, optional). Answers 202 "
            "with the insert job `{id, query, status: accepted, videocaption, audiocaption, imagecaption}`; "
            "follow it at `GET /api/v1/mem/kb/insert/{id}` (accepted → processing → done | failed)."
        ),
    )
    async def insert(
        self,
        request: Request[Any, Any, Any],
        kb: NamedDependency[KbService],
        workspace: Workspace = DEFAULT_WORKSPACE,
    ) -> InsertAccepted:
        # request.form() reads multipart (as documented) and also a plain url-encoded form (`curl -d`).
        data = await request.form()
        query = data.get("query")
        if not isinstance(query, str) or not query.strip():
            for value in data.values():
                if isinstance(value, UploadFile):
                    await value.close()
            raise BadRequest("query is empty: send the text to remember in the form field `query`")
        incoming = kb.media_dir / ".incoming"
        media: dict[str, tuple[str, Path]] = {}
        try:
            for kind in MEDIA_KINDS:
                value = data.get(kind)
                if isinstance(value, UploadFile) and value.filename:
                    media[kind] = (value.filename, await _spool(value, incoming))
            job = await kb.insert(query, media, workspace)
        finally:
            for _, path in media.values():
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
        return job.accepted()

    @get("/insert/{job_id:str}", summary="An insert job: accepted → processing → done | failed")
    async def insert_status(
        self, kb: NamedDependency[KbService], job_id: FromPath[str], workspace: Workspace = DEFAULT_WORKSPACE
    ) -> InsertStatus:
        return (await kb.job(job_id, workspace)).public()

    @get("/inserts", summary="The workspace's inserts, newest first (id, status, the text's opening)")
    async def inserts(
        self,
        kb: NamedDependency[KbService],
        workspace: Workspace = DEFAULT_WORKSPACE,
        offset: Annotated[int, QueryParameter(ge=0)] = 0,
        limit: Annotated[int, QueryParameter(ge=1, le=MAX_PAGE)] = 100,
    ) -> InsertPage:
        return await kb.inserts(workspace, offset, limit)

    @delete(
        "/insert/{job_id:str}",
        status_code=200,
        summary="Forget an insert: its chunks, and the entities and relations only it brought",
        description=(
            "Removes the insert's chunks and their vectors, the entities no other insert mentions, the "
            "relations no other chunk supports, the descriptions quoted from its text alone, and its job "
            "record, in one transaction; the communities it touched are recomputed. 404 for an unknown "
            "insert, 409 while it is accepted or processing."
        ),
    )
    async def forget(
        self, kb: NamedDependency[KbService], job_id: FromPath[str], workspace: Workspace = DEFAULT_WORKSPACE
    ) -> InsertDeleted:
        return await kb.forget(job_id, workspace)

    @post(
        "/query",
        status_code=200,
        summary="Ask the memory graph (mem kb): hybrid, local, global or naive",
        description=(
            "With `stream: true` the answer is `text/event-stream`: `passages` `{rag_memory, passages}`, "
            "`delta` `{text}` events as the model writes, `citations` `{citations: [{index, passage}]}`, "
            "then `done` holding the body the non-streaming call returns. A failure at any point is an "
            "`error` event `{code, message}`, then `done` holding the error body (what the non-streaming "
            "call answers with status `code`). docdb's `/api/v1/docdb/chat` streams the same events. An "
            "empty or too long question is a 400 before any event."
        ),
    )
    async def query(
        self,
        kb: NamedDependency[KbService],
        data: JSONBody[QueryRequest],
        workspace: Workspace = DEFAULT_WORKSPACE,
    ) -> KbAnswer | Stream:
        if data.stream:
            return event_stream(kb.events(data, workspace))  # checks the question first: a bad one is a 400
        return await kb.query(data, workspace)
