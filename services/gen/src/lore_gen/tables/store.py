"""Generated tables in gen's relational store, and the read-only SQL guard in front of them.

Model-written SQL is parsed with sqlglot and must be one read-only SELECT (or set operation) over the
task's own table: no writes, DDL, PRAGMA, ATTACH, SELECT INTO, locking clauses, other tables (the
catalogue included) or file/system functions. The canonical SQL that sqlglot prints, with a row limit,
is what runs, on a read-only connection (SQLite `mode=ro` + `query_only`; a PostgreSQL READ ONLY
transaction with a statement timeout) — two locks, so a guard bug alone cannot write.
"""

from __future__ import annotations

import decimal
import re
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any, Literal

import sqlglot
from sqlalchemy import Column, Float, Integer, MetaData, Table, Text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlglot import exp

ColumnKind = Literal["integer", "real", "text"]

_FORBIDDEN_NAMES = (
    "Insert Update Delete Drop Create Alter Command Pragma Attach Detach Into Lock Merge TruncateTable "
    "Copy Set Transaction Commit Rollback Use LoadData Analyze"
).split()
_FORBIDDEN_NODES: tuple[type[exp.Expression], ...] = tuple(
    node for node in (getattr(exp, name, None) for name in _FORBIDDEN_NAMES) if isinstance(node, type)
)
_FORBIDDEN_FUNCTION = re.compile(
    r"^(load_extension|readfile|writefile|edit|fts3_tokenizer|sqlite_\w*|pg_\w*|lo_\w*|dblink\w*|"
    r"current_setting|set_config|query_to_xml\w*|table_to_xml\w*|copy\w*|txid_\w*)$",
    re.I,
)


class UnsafeSQL(ValueError):
    """The SQL is not a single read-only query over the allowed table; the message says why."""


def dialect_of(engine: AsyncEngine) -> str:
    return "sqlite" if engine.dialect.name == "sqlite" else "postgres"


def guard_select(sql: str, table: str, dialect: str, row_limit: int) -> str:
    """The canonical, row-limited text of `sql` if it only reads `table`; `UnsafeSQL` otherwise."""
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except sqlglot.errors.SqlglotError as exc:
        raise UnsafeSQL(f"not valid SQL: {str(exc).splitlines()[0][:200]}") from None
    if len(statements) != 1:
        raise UnsafeSQL(f"expected exactly one statement, got {len(statements)}")
    tree = statements[0]
    if not isinstance(tree, (exp.Select, exp.SetOperation)):
        raise UnsafeSQL(f"only SELECT queries may run, not {tree.key.upper()}")
    for node in tree.walk():
        if isinstance(node, _FORBIDDEN_NODES):
            raise UnsafeSQL(f"{node.key.upper()} is not allowed in a read-only query")
        if isinstance(node, exp.Select) and node.args.get("locks"):
            raise UnsafeSQL("locking clauses (FOR UPDATE/SHARE) are not allowed")
        if isinstance(node, exp.Func):
            name = node.name if isinstance(node, exp.Anonymous) else node.sql_name()
            if _FORBIDDEN_FUNCTION.match(name or ""):
                raise UnsafeSQL(f"function {name} is not allowed")
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    for source in tree.find_all(exp.Table):
        if not isinstance(source.this, exp.Identifier):
            raise UnsafeSQL("table functions are not allowed; query the generated table only")
        if source.args.get("db") or source.args.get("catalog"):
            raise UnsafeSQL(f"schema-qualified table {source.sql(dialect=dialect)} is not allowed")
        if source.name.lower() not in ctes and source.name.lower() != table.lower():
            raise UnsafeSQL(f"table {source.name!r} is not allowed; the query may only read {table!r}")
    limited: exp.Expression
    if isinstance(tree, exp.Select):
        current = tree.args.get("limit")
        value = current.expression if isinstance(current, exp.Limit) else None
        if (
            value is None
            or not (isinstance(value, exp.Literal) and value.is_int)
            or int(value.name) > row_limit
        ):
            limited = tree.limit(row_limit)
        else:
            limited = tree
    else:
        limited = exp.select("*").from_(tree.subquery("lore_q")).limit(row_limit)
    return limited.sql(dialect=dialect)


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
