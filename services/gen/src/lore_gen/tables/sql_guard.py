"""The read-only guard in front of model-written SQL.

The SQL is parsed with sqlglot and must be one read-only SELECT (or set operation) over the task's own
table: no writes, DDL, PRAGMA, ATTACH, SELECT INTO, locking clauses, other tables (the catalogue
included) or file/system functions. What runs is the canonical SQL that sqlglot prints, with a row limit.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlglot import exp

_FORBIDDEN_NAMES = (
    "Insert Update Delete Drop Create Alter Command Pragma Attach Detach Into Lock Merge TruncateTable "
    "Copy Set Transaction Commit Rollback Use LoadData Analyze"
).split()


@functools.cache
def _forbidden_nodes() -> tuple[type[exp.Expression], ...]:
    from sqlglot import exp

    return tuple(
        node for node in (getattr(exp, name, None) for name in _FORBIDDEN_NAMES) if isinstance(node, type)
    )


_FORBIDDEN_FUNCTION = re.compile(
    r"^(load_extension|readfile|writefile|edit|fts3_tokenizer|sqlite_\w*|pg_\w*|lo_\w*|dblink\w*|"
    r"current_setting|set_config|query_to_xml\w*|table_to_xml\w*|copy\w*|txid_\w*)$",
    re.I,
)


class UnsafeSQL(ValueError):
    """The SQL is not a single read-only query over the allowed table; the message says why."""


def guard_select(sql: str, table: str, dialect: str, row_limit: int) -> str:
    """The canonical, row-limited text of `sql` if it only reads `table`; `UnsafeSQL` otherwise."""
    # sqlglot (a parser for some thirty dialects) loads with the first query guarded, not at gen's start.
    import sqlglot
    from sqlglot import exp

    forbidden = _forbidden_nodes()
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
        if isinstance(node, forbidden):
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
