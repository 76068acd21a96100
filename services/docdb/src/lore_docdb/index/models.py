"""Relational rows of the index: knowledge bases, their datasets, and chunk texts."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel

from lore_core.clock import utcnow


class KnowledgeBaseRow(SQLModel, table=True):
    __tablename__ = "knowledge_bases"

    name: str = Field(primary_key=True, max_length=64)
    status: str = Field(default="ready", max_length=16)  # ready | deleting
    mode: int | None = None  # fixed by the first parse: every dataset of a KB shares one mode
    # The embedder its vectors come from (`local:minilm`, `openai:…`), fixed at creation, or `auto` until
    # the first parse chooses by language; None for a KB made before KBs recorded theirs.
    embedding_model: str | None = Field(default=None, max_length=160)
    purge_db: bool = True
    created_at: datetime = Field(default_factory=utcnow)


class KbVersionRow(SQLModel, table=True):
    """Counts the changes of a KB's chunks and row, in the transaction that makes them: a replica whose
    cached BM25 index or KB row carries an older count reloads it."""

    __tablename__ = "kb_versions"

    kb_name: str = Field(primary_key=True, max_length=64)
    version: int = 0


class KbDatasetRow(SQLModel, table=True):
    __tablename__ = "kb_datasets"

    kb_name: str = Field(primary_key=True, max_length=64)
    dataset: str = Field(primary_key=True, max_length=64)
    parsed: bool = False
    process_mode: int = 0
    parsed_at: datetime | None = None
    schema_name: str | None = Field(default=None, max_length=255)
    task_id: str | None = Field(default=None, max_length=36)


class ChunkRow(SQLModel, table=True):
    __tablename__ = "chunks"

    chunk_id: str = Field(primary_key=True, max_length=80)
    kb_name: str = Field(index=True, max_length=64)
    dataset: str = Field(index=True, max_length=64)
    task_id: str = Field(index=True, max_length=36)
    file: str = Field(max_length=255)
    position: int = 0
    text: str
