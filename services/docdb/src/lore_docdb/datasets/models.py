"""Wire shapes of the datasets domain (contract 2.3, 4.3)."""

from __future__ import annotations

from typing import Annotated

import msgspec

from lore_core.naming import NAME_MAX, NAME_PATTERN
from lore_docdb.envelope import Success

DatasetName = Annotated[str, msgspec.Meta(pattern=NAME_PATTERN, max_length=NAME_MAX, min_length=1)]


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


class Done(Success, kw_only=True):
    message: str
    data: dict[str, object] | None = None
