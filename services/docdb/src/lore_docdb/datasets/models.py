"""The datasets domain's wire shapes (datasets, their files, simple uploads; see docs/docdb.md) and the
tables of the raw-file registry that the object-storage backend keeps (SQL in store.py)."""

from __future__ import annotations

from datetime import datetime

import msgspec
from sqlalchemy import BigInteger
from sqlmodel import Field, SQLModel

from lore_core.clock import utcnow
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
    ready: bool = False  # false while its object is being written
    modified_at: datetime = Field(default_factory=utcnow)
