"""Routes of contract 4.10 (`kb` memory), plus the insert job's status (beyond the contract)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from pathlib import Path
from typing import Any

from litestar import Controller, Request, get, post
from litestar.datastructures import UploadFile
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody
from litestar.response import Stream

from lore_core.errors import BadRequest
from lore_core.sse import event_stream
from lore_core.web import from_state
from lore_mem.kb.models import QueryRequest
from lore_mem.kb.service import MEDIA_KINDS, KbMemory

MAX_INSERT_BYTES = 512 * 1024 * 1024
COPY_CHUNK = 1024 * 1024


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


class KbController(Controller):
    path = "/api/v1/mem/kb"
    tags = ["kb memory"]
    dependencies = {"kb": from_state("kb")}

    @post(
        "/insert",
        status_code=202,
        request_max_body_size=MAX_INSERT_BYTES,
        summary="Queue text (and optional video, audio, image) for the knowledge-graph memory",
        description=(
            "multipart: `query` (text, required), `video`, `audio`, `image` (files, optional). Answers 202 "
            "with the insert job `{id, query, status: accepted, videocaption, audiocaption, imagecaption}`; "
            "follow it at `GET /api/v1/mem/kb/insert/{id}` (accepted → processing → done | failed)."
        ),
    )
    async def insert(self, request: Request[Any, Any, Any], kb: NamedDependency[KbMemory]) -> dict[str, Any]:
        # request.form() reads multipart (the contract) and also a plain url-encoded form (`curl -d`).
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
            job = await kb.insert(query, media)
        finally:
            for _, path in media.values():
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
        return job.accepted()

    @get("/insert/{job_id:str}", summary="An insert job: accepted → processing → done | failed")
    async def insert_status(self, kb: NamedDependency[KbMemory], job_id: FromPath[str]) -> dict[str, Any]:
        return (await kb.job(job_id)).public()

    @post(
        "/query",
        status_code=200,
        summary="Ask the knowledge-graph memory (hybrid, local, global, naive)",
        description=(
            "With `stream: true` the answer is `text/event-stream`: `passages` (the retrieved context), "
            "`delta` events as the model writes, `citations`, then `done` holding the body the "
            "non-streaming call returns; a failure mid-way is an `error` event `{status, detail}`."
        ),
    )
    async def query(
        self, kb: NamedDependency[KbMemory], data: JSONBody[QueryRequest]
    ) -> dict[str, Any] | Stream:
        if data.stream:
            kb.checked(data)  # a bad question is a 400, not a stream
            return event_stream(kb.events(data))
        return await kb.query(data)
