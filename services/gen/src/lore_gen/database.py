"""gen's relational tables (its tasks and tag trees, as jobs), brought up to date at start-up by its
migrations (`migrations/`). The tables a table generation creates for its rows are data, not schema."""

from __future__ import annotations

from pathlib import Path

from lore_common.jobs import job_table
from lore_common.providers.cache import model_cache_table
from lore_common.stores.migrate import Schema
from lore_gen.tasks.store import TABLE

MODEL_CACHE = "lore_gen_model_cache"
SCHEMA = Schema(
    "gen", Path(__file__).resolve().parent / "migrations", [job_table(TABLE), model_cache_table(MODEL_CACHE)]
)
