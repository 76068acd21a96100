"""Generated tables in gen's relational store, and the read-only connection their queries run on.

What runs here has passed `sql_guard` first; it runs on a read-only connection (SQLite `mode=ro` +
`query_only`; a PostgreSQL READ ONLY transaction with a statement timeout): two locks, so a guard bug
alone cannot write.
"""

from __future__ import annotations

import decimal
import re
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any, Literal

from sqlalchemy import Column, Float, Integer, MetaData, Table, Text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

ColumnKind = Literal["integer", "real", "text"]


def dialect_of(engine: AsyncEngine) -> str:
    return "sqlite" if engine.dialect.name == "sqlite" else "postgres"


def identifier(name: str, taken: set[str]) -> str:
    """A column or table identifier safe to quote anywhere: lower-case word characters, unique."""
    base = re.sub(r"\W+", "_", name.strip().lower()).strip("_")[:60] or "column"
    if base[0].isdigit():
        base = f"c_{base}"
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        candidate = f"{base}_{n}"
    taken.add(candidate)
    return candidate


_NUMBER = re.compile(r"^[+-]?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?$")


def _as_number(value: Any) -> int | float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str) and _NUMBER.match(value.strip()):
        cleaned = value.strip().replace(",", "")
        return float(cleaned) if "." in cleaned else int(cleaned)
    return None


def infer_kinds(columns: Sequence[str], rows: Sequence[dict[str, Any]]) -> dict[str, ColumnKind]:
    """INTEGER or REAL when every filled cell of a column is a number, so SQL can compare and sum."""
    kinds: dict[str, ColumnKind] = {}
    for column in columns:
        values = [row.get(column) for row in rows if row.get(column) not in (None, "")]
        numbers = [_as_number(v) for v in values]
        if values and all(n is not None for n in numbers):
            kinds[column] = "integer" if all(isinstance(n, int) for n in numbers) else "real"
        else:
            kinds[column] = "text"
    return kinds


def coerce(value: Any, kind: ColumnKind) -> Any:
    if value in (None, ""):
        return None
    if kind != "text":
        number = _as_number(value)
        return float(number) if kind == "real" and number is not None else number
    return value if isinstance(value, str) else str(value)


def _plain(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    return value


class TableStore:
    """Creates the generated tables and runs guarded queries over them on a read-only connection."""

    def __init__(self, engine: AsyncEngine, row_limit: int, statement_timeout_s: float = 10.0) -> None:
        self.engine = engine
        self.row_limit = row_limit
        self.statement_timeout_s = statement_timeout_s
        self.dialect = dialect_of(engine)
        self._reader: AsyncEngine | None = None

    def _read_engine(self) -> AsyncEngine:
        if self.dialect == "postgres":
            return self.engine
        if self._reader is None:
            database = self.engine.url.database or ""
            self._reader = create_async_engine(f"sqlite+aiosqlite:///file:{database}?mode=ro&uri=true")
        return self._reader

    async def aclose(self) -> None:
        if self._reader is not None:
            await self._reader.dispose()

    async def create(
        self, table_name: str, kinds: dict[str, ColumnKind], rows: Sequence[dict[str, Any]]
    ) -> None:
        sql_types = {"integer": Integer, "real": Float, "text": Text}
        table = Table(
            table_name, MetaData(), *(Column(name, sql_types[kind]()) for name, kind in kinds.items())
        )
        async with self.engine.begin() as connection:
            # One transaction: the table is there whole or not at all. A resumed task builds its table
            # again under the same name, so one left by the run its process stopped goes first.
            await connection.run_sync(table.drop, checkfirst=True)
            await connection.run_sync(table.create)
            if rows:
                await connection.execute(table.insert(), [dict(row) for row in rows])

    async def query(self, sql: str) -> list[dict[str, Any]]:
        """Run already-guarded SQL read-only; at most `row_limit` rows come back."""
        engine = self._read_engine()
        async with engine.connect() as connection:
            if self.dialect == "postgres":
                # The first statements of the transaction SQLAlchemy opens: read only, bounded in time.
                await connection.exec_driver_sql("SET TRANSACTION READ ONLY")
                timeout_ms = int(self.statement_timeout_s * 1000)
                await connection.exec_driver_sql(f"SET LOCAL statement_timeout = {timeout_ms}")
            else:
                await connection.exec_driver_sql("PRAGMA query_only = 1")
            try:
                # exec_driver_sql: the text goes to the driver as is (no `:name` bind parsing).
                result = await connection.exec_driver_sql(sql)
                keys = list(result.keys())
                rows = result.fetchmany(self.row_limit)
            finally:
                await connection.rollback()
        return [{key: _plain(value) for key, value in zip(keys, row, strict=False)} for row in rows]
