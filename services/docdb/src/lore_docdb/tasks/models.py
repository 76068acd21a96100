"""The processing task as stored (contract 2.6). The parse pipeline that runs tasks is built on this."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel

from lore_core.clock import utcnow

ACTIVE_STATES = ("pending", "running", "cancelling")
TERMINAL_STATES = ("completed", "failed", "cancelled")


class TaskRow(SQLModel, table=True):
    __tablename__ = "tasks"

    task_id: str = Field(primary_key=True, max_length=36)
    status: str = Field(index=True, max_length=16)
    task_type: str = Field(default="file_processing", max_length=32)
    kb_name: str = Field(index=True, max_length=64)
    dataset: str = Field(index=True, max_length=64)
    mode: int = 0
    schema_name: str | None = Field(default=None, max_length=255)
    stage: str | None = Field(default=None, max_length=32)
    error: str | None = None
    # The schema's entity definitions as they were when the parse started (a later delete can't hurt it).
    schema_entities: str | None = None
    skipped_files: str | None = None  # JSON list of files that were not parsed, with the reason
    heartbeat_at: datetime | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
