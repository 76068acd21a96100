"""The datasets domain's wire shapes (datasets, their files, simple uploads; see docs/docdb.md) and the
tables of the raw-file registry that the object-storage backend keeps (SQL in store.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec
from sqlalchemy import BigInteger
from sqlmodel import Field, SQLModel

from lore_core.clock import utcnow
from lore_core.naming import Name
from lore_docdb.envelope import Success

DatasetName = Name
# A file's path in its dataset (`guide/README.md`), checked by datasets/paths.py.
PathRef = Annotated[str, msgspec.Meta(min_length=1, max_length=1024)]


class CreateDataset(msgspec.Struct, forbid_unknown_fields=True):
    name: DatasetName


class FileEntry(msgspec.Struct):
    name: str
    size: int
    modified_time: str  # ISO 8601 without zone (UTC)
    # The file's identity (datasets/paths.py): its path in the dataset (subfolders flattened into the
    # stored `name`) and the sha256 of its content (null while unknown: a chunked upload on object
    # storage that was joined in the store, never read by docdb).
    path: str = ""
    sha256: str | None = None


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


class PutFileInfo(msgspec.Struct, kw_only=True):
    name: str  # as stored and listed (the path flattened)
    path: str
    size: int
    sha256: str
    status: str  # added, replaced or unchanged (the same content was there: nothing was written)


class FilePut(Success, kw_only=True):
    """A file written by its path: a new file, or the new version of the file at that path."""

    message: str
    dataset: str
    data: PutFileInfo


class FileDeleted(Success, kw_only=True):
    message: str
    data: FileRef


# ------------------------------------------------------------ tables (SQL lives in store.py)


class RawDatasetRow(SQLModel, table=True):
    __tablename__ = "raw_datasets"

    name: str = Field(primary_key=True, max_length=64)
    created_at: datetime = Field(default_factory=utcnow)


class RawFileRow(SQLModel, table=True):
    __tablename__ = "raw_files"

    dataset: str = Field(primary_key=True, max_length=64)
    name: str = Field(primary_key=True, max_length=255)
    size: int = Field(default=0, sa_type=BigInteger)
    sha256: str | None = Field(default=None, max_length=64)
    ready: bool = False  # false while its object is being written
    modified_at: datetime = Field(default_factory=utcnow)
