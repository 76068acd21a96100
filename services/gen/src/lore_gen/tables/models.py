"""Wire and model-reply structures of the table pipeline."""

from __future__ import annotations

from typing import Any

import msgspec

from lore_core.bounds import QueryText, Score, TopK, Workers
from lore_core.naming import NameRef


class SubmitRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    question: QueryText
    sql_question: QueryText | None = None
    top_k: TopK = 5
    threshold: Score = 0.5
    max_workers: Workers = 16
    # Beyond the contract: the docdb KB whose passages ground the rows (default: gen.kb_name).
    kb_name: NameRef | None = None


class TableSchema(msgspec.Struct, kw_only=True):
    title: str
    entities: list[str]
    columns: list[str]


class RowReply(msgspec.Struct):
    row: dict[str, Any]


class SqlReply(msgspec.Struct):
    sql: str
