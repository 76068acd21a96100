"""Routes of contract 4.3: datasets, files, simple upload."""

from __future__ import annotations

from typing import Any

from litestar import Controller, delete, get, post
from litestar.datastructures import UploadFile
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody, MultipartBody

from lore_core.errors import BadRequest
from lore_core.web import from_state
from lore_docdb.datasets.models import CreateDataset, DatasetFiles, DatasetList, Done, UploadResult
from lore_docdb.datasets.service import DatasetService

DATASETS = "/api/v1/docdb/files/raw-files/datasets"


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
    ) -> Done:
        await datasets.create(data.name)
        return Done(message=f"dataset {data.name!r} created", data={"name": data.name})

    @delete("/{dataset:str}", status_code=200, summary="Delete a dataset and all its files")
    async def delete_dataset(self, datasets: NamedDependency[DatasetService], dataset: FromPath[str]) -> Done:
        await datasets.delete(dataset)
        return Done(message=f"dataset {dataset!r} deleted", data={"name": dataset})

    @get("/{dataset:str}/files", summary="List the files of a dataset (hidden .uploads/ excluded)")
    async def list_files(
        self, datasets: NamedDependency[DatasetService], dataset: FromPath[str]
    ) -> DatasetFiles:
        files = await datasets.list_files(dataset)
        return DatasetFiles(dataset=dataset, files=files)

    @post(
        "/{dataset:str}/files",
        status_code=200,
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
        if not uploads:
            raise BadRequest("no files: send one or more files in the multipart field `files`")
        stored = []
        for upload in uploads:
            stored.append(await datasets.add_file(dataset, upload.filename, upload.file))
            await upload.close()
        return UploadResult(message=f"{len(stored)} file(s) uploaded", dataset=dataset, files=stored)

    @delete("/{dataset:str}/files/{filename:str}", status_code=200, summary="Delete one file")
    async def delete_file(
        self, datasets: NamedDependency[DatasetService], dataset: FromPath[str], filename: FromPath[str]
    ) -> Done:
        await datasets.delete_file(dataset, filename)
        return Done(
            message=f"file {filename!r} deleted",
            data={"dataset": dataset, "filename": filename},
        )
