"""Sources of datasets (see docs/sources.md): where a dataset's documents live, and the syncs that copy
them in. Wire shapes, the sync task record, and the `dataset_sources` table (SQL in store.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec
from sqlmodel import Field, SQLModel

from lore_core.clock import utcnow
from lore_docdb.envelope import Success

SYNC_TABLE = "lore_docdb_sync_jobs"  # the job table of sync tasks
Interval = Annotated[int, msgspec.Meta(ge=1, le=30 * 24 * 3600)]
Url = Annotated[str, msgspec.Meta(min_length=1, max_length=2048)]
Share = Annotated[float, msgspec.Meta(ge=0, le=1)]


class _Spec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, tag_field="kind"):
    # Seconds between scheduled syncs (run by one replica); none: only `POST …/sync`.
    interval: Interval | None = None
    # After a sync that changed something, parse the dataset again in each KB that holds it.
    auto_parse: bool = True
    # The largest share of the dataset's files one sync may delete; a sync that would delete more (or,
    # in a dataset of fewer than 4 files, all of them) fails and changes nothing: an empty or unmounted
    # folder, a wrong prefix or branch reads as "every file is gone". 1: no limit.
    max_delete: Share = 0.5


class FolderSource(_Spec, tag="folder"):
    """A folder on the server, under one of `docdb.sources.folder_roots`."""

    path: Annotated[str, msgspec.Meta(min_length=1, max_length=4096)]


class S3Source(_Spec, tag="s3"):
    """The objects under `prefix` in an S3 bucket (any S3-compatible store)."""

    bucket: Annotated[str, msgspec.Meta(min_length=3, max_length=63)]
    prefix: str = ""
    endpoint_url: Url | None = None
    region: str = "us-east-1"
    access_key: str | None = None  # secret
    secret_key: str | None = None  # secret


class GitSource(_Spec, tag="git"):
    """A branch of a git repository: an http(s) URL, or a local path under `folder_roots`."""

    url: Url
    branch: str | None = None  # the remote's default branch when unset
    subdir: str = ""  # only the files under this folder of the repository
    token: str | None = None  # secret: sent as the password of https URLs


class WebSource(_Spec, tag="web"):
    """Web pages: the `urls` and the pages they link to on the same host (to `max_depth` links away),
    or the pages a `sitemap` lists; at most `max_pages`, and never what robots.txt disallows."""

    urls: list[Url] = []
    sitemap: Url | None = None
    max_depth: Annotated[int, msgspec.Meta(ge=0, le=10)] = 1
    max_pages: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 100


SourceSpec = FolderSource | S3Source | GitSource | WebSource


class SyncFailure(msgspec.Struct):
    path: str
    reason: str


class SyncReport(msgspec.Struct, kw_only=True):
    """What a sync did to the dataset: paths added, changed and deleted, how many were unchanged, and
    the files it could not fetch (left as they were), each with its reason."""

    added: list[str] = []
    changed: list[str] = []
    deleted: list[str] = []
    unchanged: int = 0
    failed: list[SyncFailure] = []


class SyncTask(msgspec.Struct, kw_only=True):
    """A sync's record: `pending`, `running`, then `completed` or `failed` (with `error`; a failed sync
    leaves the dataset as it was)."""

    task_id: str
    dataset: str
    kind: str
    trigger: str  # manual or schedule
    status: str
    created_at: str
    updated_at: str
    error: str | None = None
    report: SyncReport | None = None
    parse_tasks: list[str] = []  # the parses queued after it (auto_parse)


class SourceInfo(Success, kw_only=True):
    dataset: str
    source: SourceSpec  # secrets shown as "***"
    next_sync_at: str | None = None
    last_sync: SyncTask | None = None


class SourceList(Success, kw_only=True):
    data: list[SourceInfo]


class SyncStarted(Success, kw_only=True):
    message: str
    data: SyncTask


class SyncTaskReply(Success, kw_only=True):
    data: SyncTask


class SyncTaskList(Success, kw_only=True):
    data: list[SyncTask]


# ------------------------------------------------------------ tables (SQL lives in store.py)


class SourceRow(SQLModel, table=True):
    __tablename__ = "dataset_sources"

    dataset: str = Field(primary_key=True, max_length=64)
    spec: str  # the SourceSpec as JSON, secrets included (shown redacted)
    interval_s: int | None = None
    next_sync_at: datetime | None = Field(default=None, index=True)
    last_task_id: str | None = Field(default=None, max_length=36)
    created_at: datetime = Field(default_factory=utcnow)
