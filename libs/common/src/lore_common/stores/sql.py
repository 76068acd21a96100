"""Async SQLModel engine: a SQLite file (WAL, busy timeout) by default, PostgreSQL via asyncpg at scale."""

from __future__ import annotations

import contextlib
import time
import zlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import Table, event, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import ConnectionPoolEntry
from sqlmodel import SQLModel

from lore_core import metrics
from lore_core.settings import DatabaseConfig

SQLITE_BUSY_TIMEOUT_MS = 30_000
SCHEMA_LOCK = zlib.crc32(b"lore-schema") & 0x7FFFFFFF


def database_url(config: DatabaseConfig, data_dir: Path, name: str) -> str:
    if config.url:
        url = config.url
        # Accept the URLs people paste; we always talk asyncpg / aiosqlite.
        if url.startswith(("postgres://", "postgresql://")):
            url = "postgresql+asyncpg://" + url.split("://", 1)[1]
        elif url.startswith("sqlite:///"):
            url = "sqlite+aiosqlite:///" + url[len("sqlite:///") :]
        return url
    data_dir.mkdir(parents=True, exist_ok=True)
    return f"sqlite+aiosqlite:///{(data_dir / f'{name}.db').resolve()}"


def _sqlite_pragmas(dbapi_connection: DBAPIConnection, _: ConnectionPoolEntry) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def create_engine(config: DatabaseConfig, data_dir: Path, name: str) -> AsyncEngine:
    url = database_url(config, data_dir, name)
    kwargs: dict[str, Any] = {"echo": config.echo}
    if url.startswith("sqlite"):
        kwargs["connect_args"] = {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
    else:
        kwargs["pool_size"] = config.pool_size
        kwargs["pool_pre_ping"] = True
    engine = create_async_engine(url, **kwargs)
    if url.startswith("sqlite"):
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
    event.listen(engine.sync_engine, "before_cursor_execute", _statement_started)
    event.listen(engine.sync_engine, "after_cursor_execute", _statement_done)
    event.listen(engine.sync_engine, "handle_error", _statement_failed)
    return engine


# Each statement's time, as the `relational` store's latency (by its verb: SELECT, INSERT, …).
_STARTED = "lore_statement_started"


def _statement_started(connection: Any, cursor: Any, statement: str, *args: Any) -> None:
    connection.info[_STARTED] = time.perf_counter()


def _verb(statement: str) -> str:
    word = statement.lstrip().split(None, 1)[0].upper() if statement.strip() else "OTHER"
    return word if word in _VERBS else "OTHER"


_VERBS = frozenset({"SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "CREATE", "ALTER", "DROP", "PRAGMA"})


def _statement_done(connection: Any, cursor: Any, statement: str, *args: Any) -> None:
    started = connection.info.pop(_STARTED, None)
    if started is not None and metrics.ENABLED:
        metrics.child(metrics.STORE_SECONDS, "relational", _verb(statement)).observe(
            time.perf_counter() - started
        )


def _statement_failed(context: Any) -> None:
    if metrics.ENABLED:
        metrics.STORE_ERRORS.labels("relational", _verb(context.statement or "")).inc()


async def create_tables(engine: AsyncEngine, tables: Sequence[Any]) -> None:
    """Create what is missing of `tables` (SQLModel tables or their `Table`s). Replicas starting at
    once on a fresh PostgreSQL would race on the catalogue, so there one creates at a time."""
    resolved = [getattr(table, "__table__", table) for table in tables]
    async with engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            await connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": SCHEMA_LOCK})
        await connection.run_sync(SQLModel.metadata.create_all, tables=resolved)


def lock_key(name: str) -> int:
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


async def transaction_lock(connection: AsyncConnection, name: str) -> None:
    """Serialise transactions that take the lock `name` (released at commit or rollback): across every
    replica on PostgreSQL; on SQLite by taking the database's write lock now. SQLite serialises writes,
    but Python's driver opens the transaction only at its first write, so what a transaction read
    before it was read outside it: a check then a write (mem kb's community save against a forget that
    committed between them) could act on what was already stale."""
    if connection.dialect.name == "postgresql":
        await connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": lock_key(name)})
    elif connection.dialect.name == "sqlite":
        raw = await connection.get_raw_connection()
        if not raw.driver_connection.in_transaction:  # type: ignore[union-attr]  # aiosqlite's
            await connection.exec_driver_sql("BEGIN IMMEDIATE")


async def increment(
    connection: AsyncConnection, table: Table, key: dict[str, Any], column: str, to: int | None = None
) -> None:
    """Add one to `column` of the row `key` of `table` (a counter), creating the row at 1, or set it to
    `to` when given: one statement, safe when replicas write the same row at once."""
    dialect = postgresql if connection.dialect.name == "postgresql" else sqlite
    first = 1 if to is None else to
    statement = dialect.insert(table).values(**key, **{column: first})
    value = getattr(table.c, column) + 1 if to is None else to
    await connection.execute(statement.on_conflict_do_update(index_elements=list(key), set_={column: value}))


async def ping(engine: AsyncEngine) -> None:
    async with engine.connect() as connection:
        await connection.execute(text("SELECT 1"))


@contextlib.asynccontextmanager
async def advisory_lock(engine: AsyncEngine, name: str) -> AsyncIterator[None]:
    """Hold a lock named `name` across every replica on this PostgreSQL (a session-level advisory lock
    on a connection kept for the purpose); on SQLite one process owns the store and this is a no-op."""
    if engine.dialect.name == "sqlite":
        yield
        return
    key = lock_key(name)
    async with engine.connect() as connection:
        await connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": key})
        await connection.commit()
        try:
            yield
        finally:
            await connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": key})
            await connection.commit()


class Leadership:
    """One replica among several sharing a PostgreSQL database runs the periodic sweeps.

    The leader holds a session-level `pg_try_advisory_lock` on a connection it keeps open; if the
    leader dies its connection drops, the lock goes with it, and the next replica to ask takes over.
    On SQLite one process owns the store, so it always leads.
    """

    def __init__(self, engine: AsyncEngine, name: str) -> None:
        self.engine = engine
        self.key = lock_key(name)
        self._connection: AsyncConnection | None = None

    async def is_leader(self) -> bool:
        if self.engine.dialect.name == "sqlite":
            return True
        if self._connection is not None:
            try:
                await self._connection.execute(text("SELECT 1"))
                return True
            except Exception:  # the connection (and with it the lock) is gone
                await self.release()
        connection = await self.engine.connect()
        try:
            got = (
                await connection.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": self.key})
            ).scalar()
            await connection.commit()
        except Exception:
            await connection.close()
            raise
        if got:
            self._connection = connection
            return True
        await connection.close()
        return False

    async def release(self) -> None:
        if self._connection is not None:
            connection, self._connection = self._connection, None
            with contextlib.suppress(Exception):
                await connection.close()
