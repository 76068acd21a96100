"""The processing task as stored (contract 2.6). The parse pipeline that runs tasks is built on this."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlmodel import Field, SQLModel

ACTIVE_STATES = ("pending", "running", "cancelling")
TERMINAL_STATES = ("completed", "failed", "cancelled")


def utcnow() -> datetime:
    return datetime.now(UTC)


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
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
