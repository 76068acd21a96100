"""Wire and model-reply structures of the table pipeline."""

from __future__ import annotations

from typing import Any

import msgspec


class SubmitRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    question: str
    sql_question: str | None = None
    top_k: int = 5
    threshold: float = 0.5
    max_workers: int = 16
    # Beyond the contract: the docdb KB whose passages ground the rows (default: gen.kb_name).
    kb_name: str | None = None


class TableSchema(msgspec.Struct, kw_only=True):
    title: str
    entities: list[str]
    columns: list[str]


class RowReply(msgspec.Struct):
    row: dict[str, Any]


class SqlReply(msgspec.Struct):
    sql: str
