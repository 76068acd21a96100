"""Routes of datasets: datasets, their files, simple (multipart) upload."""

from __future__ import annotations

import mimetypes
from dataclasses import dataclass
from typing import Any, Literal

from litestar import Controller, Request, delete, get, post, put
from litestar.datastructures import UploadFile
from litestar.di import NamedDependency
from litestar.openapi.spec import OpenAPIFormat, OpenAPIMediaType, OpenAPIType, Operation, RequestBody, Schema
from litestar.params import FromPath, FromQuery, JSONBody, MultipartBody
from litestar.response import File, Redirect

from lore_core.errors import BadRequest
from lore_core.web import from_state
from lore_docdb.datasets.models import (
    CreateDataset,
    DatasetChanged,
    DatasetFiles,
    DatasetList,
    DatasetRef,
    FileDeleted,
    FilePut,
    FileRef,
    PathRef,
    UploadResult,
)
from lore_docdb.datasets.paths import flatten, path_of
from lore_docdb.datasets.service import DatasetService

DATASETS = "/api/v1/docdb/files/raw-files/datasets"
BINARY = Schema(type=OpenAPIType.STRING, format=OpenAPIFormat.BINARY)


def stored_name(given: str) -> str:
    """The listed name a file route was given, or the name stored for a path in the dataset: citations
    and `lore kb show` give paths (`docs/guide.md`), and a client that sends one encoded as
    `docs%2Fguide.md` reaches the route decoded, with its slash."""
    given = given.lstrip("/")
    return flatten(given) if "/" in given else given


@dataclass
class FilesOperation(Operation):
    """The simple-upload form in the OpenAPI document: the handler takes the form as a dict (a field
    other than `files` is ignored, no file is a 400 naming the field), so the form is described here."""

    def __post_init__(self) -> None:
        files = Schema(type=OpenAPIType.ARRAY, items=BINARY, description="one or more files")
        form = Schema(type=OpenAPIType.OBJECT, required=["files"], properties={"files": files})
        self.request_body = RequestBody(
            required=True, content={"multipart/form-data": OpenAPIMediaType(schema=form)}
        )


@dataclass
class RawBodyOperation(Operation):
    """The file is the raw request body, streamed to storage as it arrives."""

    def __post_init__(self) -> None:
        self.request_body = RequestBody(
            required=True, content={"application/octet-stream": OpenAPIMediaType(schema=BINARY)}
        )


def shown_as(name: str) -> tuple[str, Literal["inline", "attachment"]]:
    """How a browser may show an uploaded file: a PDF or a picture as itself, text as plain text, the
    rest as a download. Never as a page (HTML, SVG, XML): a page served from Lore's origin could run
    its scripts with the console's API key."""
    media = mimetypes.guess_type(name)[0] or "application/octet-stream"
    if media == "application/pdf" or (media.startswith("image/") and media != "image/svg+xml"):
        return media, "inline"
    if media.startswith("text/") or media in ("application/json", "application/xml", "image/svg+xml"):
        return "text/plain; charset=utf-8", "inline"
    return "application/octet-stream", "attachment"


class DatasetController(Controller):
    path = DATASETS
    tags = ["datasets"]
    dependencies = {"datasets": from_state("datasets")}

    @get("/", summary="List dataset names")
    async def list_datasets(self, datasets: NamedDependency[DatasetService]) -> DatasetList:
        names = await datasets.list_datasets()
        return DatasetList(message=f"{len(names)} dataset(s)", data=names)

    @post("/", status_code=200, summary="Create an empty dataset; 409 if it exists")
    async def create_dataset(
        self, datasets: NamedDependency[DatasetService], data: JSONBody[CreateDataset]
    ) -> DatasetChanged:
        await datasets.create(data.name)
        return DatasetChanged(message=f"dataset {data.name!r} created", data=DatasetRef(name=data.name))

    @delete("/{dataset:str}", status_code=200, summary="Delete a dataset and all its files")
    async def delete_dataset(
        self, datasets: NamedDependency[DatasetService], dataset: FromPath[str]
    ) -> DatasetChanged:
        await datasets.delete(dataset)
        return DatasetChanged(message=f"dataset {dataset!r} deleted", data=DatasetRef(name=dataset))

    @get("/{dataset:str}/files", summary="List the files of a dataset (hidden .uploads/ excluded)")
    async def list_files(
        self, datasets: NamedDependency[DatasetService], dataset: FromPath[str]
    ) -> DatasetFiles:
        files = await datasets.list_files(dataset)
        return DatasetFiles(dataset=dataset, files=files)

    @post(
        "/{dataset:str}/files",
        status_code=200,
        operation_class=FilesOperation,
        summary="Upload one or more files (multipart field `files`); taken names get `_<n>`",
    )
    async def upload_files(
        self,
        datasets: NamedDependency[DatasetService],
        dataset: FromPath[str],
        data: MultipartBody[dict[str, Any]],
    ) -> UploadResult:
        await datasets.require(dataset)
        raw = data.get("files")
        uploads = [u for u in (raw if isinstance(raw, list) else [raw]) if isinstance(u, UploadFile)]
        if not uploads and raw is not None:
            # A part without a filename (or a blank one) reaches us as a text field.
            raise BadRequest(
                "a part of `files` has a blank filename: send each file as a file part named after "
                'the file (filename="report.pdf")'
            )
        if not uploads:
            raise BadRequest("no files: send one or more files in the multipart field `files`")
        stored = []
        for upload in uploads:
            stored.append(await datasets.add_file(dataset, upload.filename, upload.file))
            await upload.close()
        return UploadResult(message=f"{len(stored)} file(s) uploaded", dataset=dataset, files=stored)

    @get(
        "/{dataset:str}/files/{filename:path}",
        summary="The file itself (by its listed name), to open a cited page: its bytes, or a redirect "
        "to a presigned URL on object storage",
    )
    async def download_file(
        self, datasets: NamedDependency[DatasetService], dataset: FromPath[str], filename: FromPath[str]
    ) -> File | Redirect:
        filename = stored_name(filename)
        found = await datasets.source(dataset, filename)
        if isinstance(found, str):
            return Redirect(found, status_code=307)
        shown = path_of(filename).rsplit("/", 1)[-1]  # the name the user gave it, without its folders
        media, disposition = shown_as(shown)
        return File(
            found,
            filename=shown,
            media_type=media,
            content_disposition_type=disposition,
            headers={"x-content-type-options": "nosniff", "content-security-policy": "sandbox"},
        )

    @delete(
        "/{dataset:str}/files/{filename:path}",
        status_code=200,
        summary="Delete one file, by its listed name or its path in the dataset (`docs/guide.md`)",
    )
    async def delete_file(
        self, datasets: NamedDependency[DatasetService], dataset: FromPath[str], filename: FromPath[str]
    ) -> FileDeleted:
        filename = stored_name(filename)
        await datasets.delete_file(dataset, filename)
        return FileDeleted(
            message=f"file {filename!r} deleted", data=FileRef(dataset=dataset, filename=filename)
        )

    @put(
        "/{dataset:str}/files",
        status_code=200,
        request_max_body_size=None,
        operation_class=RawBodyOperation,
        summary="Write the file at `path` (subfolders allowed) from the raw body, replacing the file "
        "there; the same content writes nothing (status `unchanged`)",
    )
    async def put_file(
        self,
        request: Request[Any, Any, Any],
        datasets: NamedDependency[DatasetService],
        dataset: FromPath[str],
        path: FromQuery[PathRef],
    ) -> FilePut:
        stored = await datasets.put_file(dataset, path, request.stream())
        return FilePut(message=f"file {stored.path!r} {stored.status}", dataset=dataset, data=stored)
