"""The processing task as stored (contract 2.6). The parse pipeline that runs tasks is built on this."""

from __future__ import annotations

import msgspec

from lore_common.jobs import Lifecycle
from lore_core.clock import utc_iso

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


def _now() -> str:
    # Microseconds: tasks submitted in one request are claimed in the order they were created.
    return utc_iso("microseconds")


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
    created_at: str = msgspec.field(default_factory=_now)
    updated_at: str = msgspec.field(default_factory=_now)
