"""`python -m lore_gen move --to DIR`: copy gen's tasks, tag trees and generated tables into the
relational store `DIR/lore.yaml` names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lore_common.stores import open_stores
from lore_common.stores.transfer import copy_other_tables, copy_rows, embedded_clash, embedded_stores
from lore_core.settings import Settings
from lore_gen.database import SCHEMA


async def move(source: Settings, target: Settings) -> dict[str, Any]:
    s, t = source.gen, target.gen
    source_dir, target_dir = Path(s.server.data_dir), Path(t.server.data_dir)
    embedded_clash("gen", source_dir, target_dir, embedded_stores(t.database.url, None, False))
    async with (
        open_stores(source_dir, name="gen", database=s.database) as src,
        open_stores(target_dir, name="gen", database=t.database) as dst,
    ):
        assert src.sql is not None and dst.sql is not None
        return {
            "rows": await copy_rows(src.sql, dst.sql, SCHEMA),
            "generated_tables": await copy_other_tables(src.sql, dst.sql, SCHEMA),
        }
