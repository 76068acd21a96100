"""The read-only guard alone: what model-written SQL it lets through, how it rewrites it, what it refuses."""

from __future__ import annotations

import pytest

from lore_gen.tables.sql_guard import UnsafeSQL, guard_select

TABLE = "scientists"


@pytest.mark.parametrize("dialect", ["sqlite", "postgres"])
def test_a_plain_select_runs_with_the_row_limit_added(dialect: str) -> None:
    sql = guard_select("select name, born from scientists where born > 1800", TABLE, dialect, 100)
    assert sql.upper().startswith("SELECT NAME, BORN FROM SCIENTISTS WHERE BORN > 1800")
    assert sql.upper().endswith("LIMIT 100")


def test_a_smaller_limit_is_kept_and_a_larger_one_is_capped() -> None:
    assert guard_select("SELECT * FROM scientists LIMIT 5", TABLE, "sqlite", 100).endswith("LIMIT 5")
    assert guard_select("SELECT * FROM scientists LIMIT 5000", TABLE, "sqlite", 100).endswith("LIMIT 100")


def test_set_operations_and_ctes_over_the_table_are_reads() -> None:
    union = guard_select(
        "SELECT name FROM scientists WHERE born < 1900 UNION SELECT name FROM scientists", TABLE, "sqlite", 10
    )
    assert "UNION" in union and union.endswith("LIMIT 10")
    cte = guard_select("WITH old AS (SELECT * FROM scientists) SELECT name FROM old", TABLE, "sqlite", 10)
    assert "WITH old AS" in cte


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("DELETE FROM scientists", "only SELECT"),
        ("UPDATE scientists SET name = 'x'", "only SELECT"),
        ("DROP TABLE scientists", "only SELECT"),
        ("SELECT 1; DELETE FROM scientists", "exactly one statement"),
        ("PRAGMA writable_schema = 1", "only SELECT"),
        ("ATTACH DATABASE '/tmp/x.db' AS x", "only SELECT"),
        ("SELECT * INTO copy FROM scientists", "INTO"),
        ("SELECT * FROM scientists FOR UPDATE", "locking"),
        ("SELECT * FROM sqlite_master", "sqlite_master"),
        ("SELECT * FROM other_table", "other_table"),
        ("SELECT * FROM main.scientists", "schema-qualified"),
        ("SELECT readfile('/etc/passwd') FROM scientists", "readfile"),
        ("SELECT load_extension('evil') FROM scientists", "load_extension"),
        ("SELECT pg_read_file('/etc/passwd') FROM scientists", "pg_read_file"),
        ("SELECT * FROM generate_series(1, 10)", "table functions"),
        ("SELEC name FRM scientists", "not valid SQL"),
    ],
)
def test_anything_but_one_read_of_the_table_is_refused_with_the_reason(sql: str, reason: str) -> None:
    with pytest.raises(UnsafeSQL) as refused:
        guard_select(sql, TABLE, "sqlite", 100)
    assert reason.lower() in str(refused.value).lower()


def test_postgres_catalogue_and_system_functions_are_refused() -> None:
    for sql in (
        "SELECT * FROM pg_catalog.pg_tables",
        "SELECT current_setting('data_directory') FROM scientists",
    ):
        with pytest.raises(UnsafeSQL):
            guard_select(sql, TABLE, "postgres", 100)
