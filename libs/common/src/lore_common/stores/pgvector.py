"""Vectors in PostgreSQL with the pgvector extension: one table per collection.

A table holds `id text`, `embedding vector(dim)` with an HNSW index (`vector_cosine_ops`), the whole
`payload` as jsonb, and one indexed text column per filter key named at creation, so a filter is a
b-tree lookup and never a scan of JSON. Vectors travel in pgvector's binary format through its asyncpg
codec (the `pgvector` package). An unfiltered search walks the HNSW index (`hnsw.ef_search` per query);
a filtered one (a vg scope: one user's memories) ranks the filter's rows exactly, because an HNSW scan
filters after it has picked its candidates and would return too few rows for a selective scope.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar

import asyncpg
import msgspec
import numpy as np
from pgvector import Vector
from pgvector.asyncpg import register_vector

from lore_common.stores.vector import (
    MirrorBatch,
    Point,
    VectorStore,
    VectorStoreError,
    Where,
    check_collection,
    check_keys,
)

# pgvector indexes at most 2,000 dimensions; a wider collection is searched exactly.
HNSW_MAX_DIM = 2000
MAX_EF_SEARCH = 1000
# The graph of the embedded engine (32 links a point): pgvector's default (16, ef_construction 64)
# stops at recall@10 0.94 at a million chunks even at its widest ef_search; this one costs about
# twice the index build and 1.5 times its size. ef_construction 128 rather than the engine's 200
# keeps a million-point build within an hour on two cores.
HNSW_M, HNSW_EF_CONSTRUCTION = 32, 128
_FIXED_COLUMNS = ("id", "embedding", "payload")


def plain_dsn(url: str) -> str:
    """An asyncpg DSN from the URLs people configure (`postgresql+asyncpg://`, `postgres://`)."""
    for prefix in ("postgresql+asyncpg://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql://" + url[len(prefix) :]
    return url


def table_name(collection: str) -> str:
    name = f"lore_vec_{check_collection(collection)}"
    if len(name.encode()) <= 63:  # PostgreSQL truncates longer identifiers
        return name
    return f"lore_vec_{collection[:30]}_{_digest(collection)}"


def _digest(collection: str) -> str:
    return hashlib.sha256(collection.encode()).hexdigest()[:16]


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


async def _init_connection(connection: asyncpg.Connection) -> None:
    await register_vector(connection)
    await connection.set_type_codec(
        "jsonb",
        schema="pg_catalog",
        encoder=lambda value: msgspec.json.encode(value).decode(),
        decoder=msgspec.json.decode,
        format="text",
    )


async def ensure_extension(dsn: str) -> None:
    """Create the `vector` extension if the database lacks it, or say exactly what is missing."""
    connection = await asyncpg.connect(dsn)
    try:
        if await connection.fetchval("SELECT 1 FROM pg_extension WHERE extname = 'vector'"):
            return
        if not await connection.fetchval("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"):
            version = await connection.fetchval("SHOW server_version_num")
            raise VectorStoreError(
                "vector_store.provider is pgvector but this PostgreSQL server has no pgvector extension: "
                f"install it on the server (Debian: postgresql-{int(version) // 10000}-pgvector), "
                "or use vector_store.provider: qdrant"
            )
        try:
            await connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except asyncpg.InsufficientPrivilegeError as exc:
            database = await connection.fetchval("SELECT current_database()")
            raise VectorStoreError(
                f"the database user may not create the pgvector extension: run `CREATE EXTENSION vector` "
                f"as a superuser in database {database!r} once"
            ) from exc
        except asyncpg.UniqueViolationError:  # another replica created it at the same moment
            pass
    finally:
        await connection.close()


P = ParamSpec("P")
R = TypeVar("R")


def _fresh(
    method: Callable[Concatenate[PgVectorStore, str, P], Coroutine[Any, Any, R]],
) -> Callable[Concatenate[PgVectorStore, str, P], Coroutine[Any, Any, R]]:
    """Another replica dropped (or re-created) the collection's table since its columns were cached:
    forget them and run the call once more against what is there now."""

    @functools.wraps(method)
    async def wrapper(self: PgVectorStore, collection: str, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await method(self, collection, *args, **kwargs)
        except asyncpg.UndefinedTableError:
            self._keys.pop(collection, None)
            return await method(self, collection, *args, **kwargs)

    return wrapper


class PgVectorStore(VectorStore):
    local = False

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool
        # Per collection: its filter columns (None: the table does not exist). Filled on first use.
        self._keys: dict[str, tuple[str, ...]] = {}

    @classmethod
    async def connect(cls, url: str, *, pool_size: int = 10) -> PgVectorStore:
        dsn = plain_dsn(url)
        await ensure_extension(dsn)
        pool = await asyncpg.create_pool(dsn, min_size=1, max_size=max(1, pool_size), init=_init_connection)
        return cls(pool)

    async def ping(self) -> None:
        await self.pool.fetchval("SELECT 1")

    async def close(self) -> None:
        await self.pool.close()

    async def _columns(self, collection: str) -> tuple[str, ...] | None:
        """The collection's filter keys, or None when its table does not exist."""
        cached = self._keys.get(collection)
        if cached is not None:
            return cached
        rows = await self.pool.fetch(
            "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 "
            "AND NOT attisdropped ORDER BY attnum",
            _quote(table_name(collection)),
        )
        if not rows:
            return None
        keys = tuple(r["attname"] for r in rows if r["attname"] not in _FIXED_COLUMNS)
        self._keys[collection] = keys
        return keys

    async def _where(self, collection: str, where: Where | None, first: int) -> tuple[str, list[str]] | None:
        """A WHERE clause on the filter columns (`$first`, …) and its values; None: no such table."""
        keys = await self._columns(collection)
        if keys is None:
            return None
        if not where:
            return "", []
        unknown = sorted(set(where) - set(keys))
        if unknown:
            raise VectorStoreError(f"collection {collection!r} has no indexed payload key {unknown}")
        terms = [f"{_quote(k)} = ${first + n}" for n, k in enumerate(where)]
        return " WHERE " + " AND ".join(terms), [str(v) for v in where.values()]

    async def dimension(self, collection: str) -> int | None:
        size = await self.pool.fetchval(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'embedding'",
            _quote(table_name(collection)),
        )
        return int(size) if size is not None else None

    async def create(self, collection: str, dim: int, keys: Sequence[str]) -> None:
        keys = check_keys(keys)
        table, digest = _quote(table_name(collection)), _digest(collection)
        columns = "".join(f", {_quote(k)} text" for k in keys)
        async with self.pool.acquire() as connection, connection.transaction():
            # Replicas creating the same collection at once would race on the catalog.
            await connection.execute("SELECT pg_advisory_xact_lock(hashtext($1))", f"lore_vec:{collection}")
            await connection.execute(
                f"CREATE TABLE IF NOT EXISTS {table} "
                f"(id text PRIMARY KEY, embedding vector({int(dim)}) NOT NULL, "
                f"payload jsonb NOT NULL{columns})"
            )
            if dim <= HNSW_MAX_DIM:
                await connection.execute(
                    f"CREATE INDEX IF NOT EXISTS {_quote(f'lore_vec_{digest}_hnsw')} ON {table} "
                    "USING hnsw (embedding vector_cosine_ops) "
                    f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"
                )
            for n, key in enumerate(keys):
                index = _quote(f"lore_vec_{digest}_k{n}")
                await connection.execute(f"CREATE INDEX IF NOT EXISTS {index} ON {table} ({_quote(key)})")
        self._keys.pop(collection, None)

    async def drop(self, collection: str) -> None:
        async with self.pool.acquire() as connection, connection.transaction():
            await connection.execute("SELECT pg_advisory_xact_lock(hashtext($1))", f"lore_vec:{collection}")
            await connection.execute(f"DROP TABLE IF EXISTS {_quote(table_name(collection))}")
        self._keys.pop(collection, None)

    @_fresh
    async def upsert(
        self,
        collection: str,
        ids: Sequence[str],
        vectors: np.ndarray[Any, Any],
        payloads: Sequence[dict[str, Any]],
    ) -> None:
        keys = await self._columns(collection)
        if keys is None:
            raise VectorStoreError(f"collection {collection!r} does not exist")
        rows = np.asarray(vectors, dtype=np.float32).reshape(len(ids), -1)
        names = ["id", "embedding", "payload", *keys]
        values = ", ".join(f"${n + 1}" for n in range(len(names)))
        updates = ", ".join(f"{_quote(c)} = EXCLUDED.{_quote(c)}" for c in names[1:])
        statement = (
            f"INSERT INTO {_quote(table_name(collection))} ({', '.join(map(_quote, names))}) "  # noqa: S608
            f"VALUES ({values}) ON CONFLICT (id) DO UPDATE SET {updates}"
        )
        records = [
            (i, v, p, *(None if p.get(k) is None else str(p[k]) for k in keys))
            for i, v, p in zip(ids, rows, payloads, strict=True)
        ]
        async with self.pool.acquire() as connection, connection.transaction():
            await connection.executemany(statement, records)

    @_fresh
    async def delete(self, collection: str, ids: Sequence[str]) -> None:
        if ids and await self._columns(collection) is not None:
            await self.pool.execute(
                f"DELETE FROM {_quote(table_name(collection))} WHERE id = ANY($1::text[])",  # noqa: S608
                list(ids),
            )

    @_fresh
    async def delete_where(self, collection: str, where: Where) -> None:
        clause = await self._where(collection, where, 1)
        if clause is not None and clause[0]:
            table = _quote(table_name(collection))
            await self.pool.execute(f"DELETE FROM {table}{clause[0]}", *clause[1])  # noqa: S608

    @_fresh
    async def count(self, collection: str, where: Where | None = None) -> int:
        clause = await self._where(collection, where, 1)
        if clause is None:
            return 0
        table = _quote(table_name(collection))
        return int(await self.pool.fetchval(f"SELECT count(*) FROM {table}{clause[0]}", *clause[1]))  # noqa: S608

    @_fresh
    async def search(
        self,
        collection: str,
        vector: np.ndarray[Any, Any] | Sequence[float],
        limit: int,
        *,
        threshold: float | None = None,
        where: Where | None = None,
        ef: int | None = None,
    ) -> list[Point]:
        clause = await self._where(collection, where, 3)
        if clause is None or limit <= 0:
            return []
        table = _quote(table_name(collection))
        query = Vector(np.asarray(vector, dtype=np.float32).ravel())
        async with self.pool.acquire() as connection, connection.transaction():
            if clause[0]:
                rows = await connection.fetch(
                    f"WITH scope AS MATERIALIZED (SELECT id, payload, embedding <=> $1 AS distance "  # noqa: S608
                    f"FROM {table}{clause[0]}) SELECT id, payload, distance FROM scope "
                    "ORDER BY distance LIMIT $2",
                    query,
                    limit,
                    *clause[1],
                )
            else:
                await connection.execute(
                    f"SET LOCAL hnsw.ef_search = {int(min(MAX_EF_SEARCH, max(ef or 40, limit)))}"
                )
                rows = await connection.fetch(
                    f"SELECT id, payload, embedding <=> $1 AS distance FROM {table} "  # noqa: S608
                    "ORDER BY embedding <=> $1 LIMIT $2",
                    query,
                    limit,
                )
        points = [Point(r["id"], r["payload"], 1.0 - float(r["distance"])) for r in rows]
        return points if threshold is None else [p for p in points if p.score >= threshold]

    @_fresh
    async def scroll(self, collection: str, where: Where, limit: int) -> list[Point]:
        clause = await self._where(collection, where, 2)
        if clause is None:
            return []
        rows = await self.pool.fetch(
            f"SELECT id, payload FROM {_quote(table_name(collection))}{clause[0]} ORDER BY id LIMIT $1",  # noqa: S608
            limit,
            *clause[1],
        )
        return [Point(r["id"], r["payload"]) for r in rows]

    @_fresh
    async def retrieve(self, collection: str, ids: Sequence[str]) -> list[Point]:
        if not ids or await self._columns(collection) is None:
            return []
        rows = await self.pool.fetch(
            f"SELECT id, payload FROM {_quote(table_name(collection))} WHERE id = ANY($1::text[])",  # noqa: S608
            list(ids),
        )
        return [Point(r["id"], r["payload"]) for r in rows]

    async def pages(self, collection: str, page: int = 2000) -> AsyncIterator[MirrorBatch]:
        if await self._columns(collection) is None:
            return
        after = ""
        while True:
            rows = await self.pool.fetch(
                f"SELECT id, embedding, payload FROM {_quote(table_name(collection))} "  # noqa: S608
                "WHERE id > $1 ORDER BY id LIMIT $2",
                after,
                page,
            )
            if not rows:
                return
            yield MirrorBatch(
                [r["id"] for r in rows],
                np.stack([r["embedding"].to_numpy() for r in rows]),
                [r["payload"] for r in rows],
            )
            after = rows[-1]["id"]
