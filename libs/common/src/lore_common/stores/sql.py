"""Async SQLModel engine: a SQLite file (WAL, busy timeout) by default, PostgreSQL via asyncpg at scale."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import ConnectionPoolEntry

from lore_common.settings import DatabaseConfig

SQLITE_BUSY_TIMEOUT_MS = 30_000


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
    return engine


async def ping(engine: AsyncEngine) -> None:
    async with engine.connect() as connection:
        await connection.execute(text("SELECT 1"))
