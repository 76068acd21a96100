"""Wire shapes of the datasets domain: datasets, their files, simple uploads (see docs/docdb.md)."""

from __future__ import annotations

import msgspec

from lore_core.naming import Name
from lore_docdb.envelope import Success

DatasetName = Name


class CreateDataset(msgspec.Struct, forbid_unknown_fields=True):
    name: DatasetName


class FileEntry(msgspec.Struct):
    name: str
    size: int
    modified_time: str  # ISO 8601 without zone (UTC)


class DatasetFiles(Success, kw_only=True):
    dataset: str
    files: list[FileEntry]


class UploadedFile(msgspec.Struct):
    filename: str
    size: int


class UploadResult(Success, kw_only=True):
    message: str
    dataset: str
    files: list[UploadedFile]


class DatasetList(Success, kw_only=True):
    message: str
    data: list[str]


class DatasetRef(msgspec.Struct):
    name: str


class DatasetChanged(Success, kw_only=True):
    """A dataset created or deleted."""

    message: str
    data: DatasetRef


class FileRef(msgspec.Struct):
    dataset: str
    filename: str


class FileDeleted(Success, kw_only=True):
    message: str
    data: FileRef
