"""mem's relational tables (vg history, the kb graph and its insert jobs), brought up to date at
start-up by its migrations (`migrations/`)."""

from __future__ import annotations

from pathlib import Path

from sqlmodel import SQLModel

from lore_common.jobs import job_table
from lore_common.providers.cache import model_cache_table
from lore_common.stores.migrate import Schema
from lore_mem.kb.store import TABLES as KB_TABLES
from lore_mem.vg.models import CollectionRow, HistoryRow

KB_JOBS_TABLE = "lore_mem_kb_jobs"
MODEL_CACHE = "lore_mem_model_cache"

SCHEMA = Schema(
    "mem",
    Path(__file__).resolve().parent / "migrations",
    [
        job_table(KB_JOBS_TABLE),
        model_cache_table(MODEL_CACHE),
        SQLModel.metadata.tables[HistoryRow.__tablename__],
        SQLModel.metadata.tables[CollectionRow.__tablename__],
        *(SQLModel.metadata.tables[str(row.__tablename__)] for row in KB_TABLES),
    ],
)
