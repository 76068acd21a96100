"""Routes of contract 4.3: datasets, files, simple upload."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, delete, get, post
from litestar.datastructures import UploadFile
from litestar.params import FromPath, JSONBody, MultipartBody

from lore_core.errors import BadRequest
from lore_docdb.datasets.models import CreateDataset, DatasetFiles, DatasetList, Done, UploadResult
from lore_docdb.datasets.service import DatasetService

DATASETS = "/api/v1/docdb/files/raw-files/datasets"


def datasets_of(request: Request[Any, Any, Any]) -> DatasetService:
    service: DatasetService = request.app.state.datasets
    return service


class DatasetController(Controller):
    path = DATASETS
    tags = ["datasets"]

    @get("/", summary="List dataset names")
    async def list_datasets(self, request: Request[Any, Any, Any]) -> DatasetList:
        names = await datasets_of(request).list_datasets()
        return DatasetList(success=True, message=f"{len(names)} dataset(s)", data=names)

    @post("/", status_code=200, summary="Create an empty dataset; 409 if it exists")
    async def create_dataset(self, request: Request[Any, Any, Any], data: JSONBody[CreateDataset]) -> Done:
        await datasets_of(request).create(data.name)
        return Done(success=True, message=f"dataset {data.name!r} created", data={"name": data.name})

    @delete("/{dataset:str}", status_code=200, summary="Delete a dataset and all its files")
    async def delete_dataset(self, request: Request[Any, Any, Any], dataset: FromPath[str]) -> Done:
        await datasets_of(request).delete(dataset)
        return Done(success=True, message=f"dataset {dataset!r} deleted", data={"name": dataset})

    @get("/{dataset:str}/files", summary="List the files of a dataset (hidden .uploads/ excluded)")
    async def list_files(self, request: Request[Any, Any, Any], dataset: FromPath[str]) -> DatasetFiles:
        files = await datasets_of(request).list_files(dataset)
        return DatasetFiles(success=True, dataset=dataset, files=files)

    @post(
        "/{dataset:str}/files",
        status_code=200,
        summary="Upload one or more files (multipart field `files`); taken names get `_<n>`",
    )
    async def upload_files(
        self,
        request: Request[Any, Any, Any],
        dataset: FromPath[str],
        data: MultipartBody[dict[str, Any]],
    ) -> UploadResult:
        service = datasets_of(request)
        service.require(dataset)
        raw = data.get("files")
        uploads = [u for u in (raw if isinstance(raw, list) else [raw]) if isinstance(u, UploadFile)]
        if not uploads:
            raise BadRequest("no files: send one or more files in the multipart field `files`")
        stored = []
        for upload in uploads:
            stored.append(await service.add_file(dataset, upload.filename, upload.file))
            await upload.close()
        return UploadResult(
            success=True, message=f"{len(stored)} file(s) uploaded", dataset=dataset, files=stored
        )

    @delete("/{dataset:str}/files/{filename:str}", status_code=200, summary="Delete one file")
    async def delete_file(
        self, request: Request[Any, Any, Any], dataset: FromPath[str], filename: FromPath[str]
    ) -> Done:
        await datasets_of(request).delete_file(dataset, filename)
        return Done(
            success=True,
            message=f"file {filename!r} deleted",
            data={"dataset": dataset, "filename": filename},
        )
