"""Routes of chunked upload: init, chunk (raw body), progress, complete, abort."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from litestar import Controller, Request, delete, get, post
from litestar.di import NamedDependency
from litestar.openapi.spec import OpenAPIMediaType, Operation, RequestBody
from litestar.params import FromPath, FromQuery, JSONBody

from lore_core.web import from_state
from lore_docdb.datasets.routes import BINARY, DATASETS
from lore_docdb.uploads.models import (
    ChunkInfo,
    ChunkStored,
    InitUpload,
    UploadAborted,
    UploadCompleted,
    UploadInfo,
    UploadRef,
    UploadStarted,
    UploadStatus,
)
from lore_docdb.uploads.service import UploadService


@dataclass
class ChunkOperation(Operation):
    """A chunk is the raw request body, streamed to storage as it arrives (never parsed)."""

    def __post_init__(self) -> None:
        self.request_body = RequestBody(
            required=True, content={"application/octet-stream": OpenAPIMediaType(schema=BINARY)}
        )


class UploadController(Controller):
    path = DATASETS + "/{dataset:str}/upload"
    tags = ["chunked upload"]
    dependencies = {"uploads": from_state("uploads")}

    @post("/init", status_code=200, summary="Start a chunked upload; returns its upload_id")
    async def init(
        self,
        uploads: NamedDependency[UploadService],
        dataset: FromPath[str],
        data: JSONBody[InitUpload],
    ) -> UploadStarted:
        session = await uploads.init(dataset, data.filename, data.total_chunks, data.total_size)
        return UploadStarted(
            message="upload session created",
            upload_id=session.upload_id,
            data=UploadInfo(
                upload_id=session.upload_id,
                filename=session.filename,
                total_chunks=session.total_chunks,
                total_size=session.total_size,
                created_at=session.created_at,
            ),
        )

    @post(
        "/{upload_id:str}/chunk",
        status_code=200,
        request_max_body_size=None,
        operation_class=ChunkOperation,
        summary="Send one chunk as the raw request body (not multipart); chunks may arrive in parallel",
    )
    async def chunk(
        self,
        request: Request[Any, Any, Any],
        uploads: NamedDependency[UploadService],
        dataset: FromPath[str],
        upload_id: FromPath[str],
        chunk_index: FromQuery[int],
    ) -> ChunkStored:
        length = request.headers.get("content-length")
        declared = int(length) if length and length.isdigit() else None
        size = await uploads.put_chunk(dataset, upload_id, chunk_index, request.stream(), declared)
        return ChunkStored(
            message=f"chunk {chunk_index} stored",
            data=ChunkInfo(upload_id=upload_id, chunk_index=chunk_index, size=size),
        )

    @get(
        "/{upload_id:str}",
        summary="An upload's progress: the chunks the server holds (to resume, send the others)",
    )
    async def progress(
        self, uploads: NamedDependency[UploadService], dataset: FromPath[str], upload_id: FromPath[str]
    ) -> UploadStatus:
        return UploadStatus(message="upload in progress", data=await uploads.progress(dataset, upload_id))

    @post("/{upload_id:str}/complete", status_code=200, summary="Merge all chunks into the dataset")
    async def complete(
        self, uploads: NamedDependency[UploadService], dataset: FromPath[str], upload_id: FromPath[str]
    ) -> UploadCompleted:
        stored = await uploads.complete(dataset, upload_id)
        return UploadCompleted(message=f"upload complete: {stored.filename}", data=stored)

    @delete("/{upload_id:str}", status_code=200, summary="Abort: delete the session and its chunks")
    async def abort(
        self, uploads: NamedDependency[UploadService], dataset: FromPath[str], upload_id: FromPath[str]
    ) -> UploadAborted:
        await uploads.abort(dataset, upload_id)
        return UploadAborted(message=f"upload {upload_id} aborted", data=UploadRef(upload_id=upload_id))
