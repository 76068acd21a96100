"""docdb's relational tables, brought up to date at start-up by its migrations (`migrations/`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel import SQLModel

from lore_common.jobs import job_table
from lore_common.providers.cache import model_cache_table
from lore_common.stores.migrate import Schema, upgrade
from lore_docdb.datasets.models import RawDatasetRow, RawFileRow
from lore_docdb.knowledge_bases.models import (
    ChunkRow,
    KbDatasetRow,
    KbFileRow,
    KbVersionRow,
    KnowledgeBaseRow,
)
from lore_docdb.parse.store import TABLE as JOBS
from lore_docdb.schemas.models import SchemaRow
from lore_docdb.sources.models import SYNC_TABLE, SourceRow
from lore_docdb.uploads.models import UploadChunkRow, UploadSessionRow

MODEL_CACHE = "lore_docdb_model_cache"
TABLES: list[Any] = [job_table(JOBS), model_cache_table(MODEL_CACHE), job_table(SYNC_TABLE)] + [
    SQLModel.metadata.tables[str(model.__tablename__)]
    for model in (
        SchemaRow,
        KnowledgeBaseRow,
        KbDatasetRow,
        ChunkRow,
        KbFileRow,
        KbVersionRow,
        RawDatasetRow,
        RawFileRow,
        UploadSessionRow,
        UploadChunkRow,
        SourceRow,
    )
]


SCHEMA = Schema("docdb", Path(__file__).resolve().parent / "migrations", TABLES)


async def create_tables(engine: AsyncEngine) -> None:
    await upgrade(engine, SCHEMA)
