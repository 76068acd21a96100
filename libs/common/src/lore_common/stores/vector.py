"""Vector stores behind one interface: Qdrant (local mode under the data dir by default, or a server by
`url`) and PostgreSQL with pgvector (`lore_common.stores.pgvector`).

A collection holds points: a string id (a UUID), a vector compared by cosine, and a JSON payload. The
payload keys named when a collection is created are indexed and are the only keys a `where` filter may
use, so that every filter is an index lookup on a server, never a scan of JSON."""

from __future__ import annotations

import abc
import re
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from qdrant_client import AsyncQdrantClient, models

from lore_core.settings import DatabaseConfig, VectorStoreConfig

Where = Mapping[str, str]
_COLLECTION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,199}$")
_KEY = re.compile(r"^[a-z][a-z0-9_]{0,40}$")


class VectorStoreError(RuntimeError):
    """The vector store is misconfigured or refused an operation; the message says what to fix."""


@dataclass(frozen=True)
class Point:
    id: str
    payload: dict[str, Any]
    score: float = 0.0


class MirrorBatch:
    """One page of a collection, as an in-memory mirror loads it: point ids, vectors and payloads."""

    def __init__(self, ids: list[str], vectors: np.ndarray[Any, Any], payloads: list[dict[str, Any]]) -> None:
        self.ids = ids
        self.vectors = np.asarray(vectors, dtype=np.float32).reshape(len(ids), -1)
        self.payloads = payloads


def check_collection(name: str) -> str:
    if not _COLLECTION.match(name):
        raise VectorStoreError(f"invalid collection name {name!r}")
    return name


def check_keys(keys: Sequence[str]) -> tuple[str, ...]:
    for key in keys:
        if not _KEY.match(key) or key in {"id", "embedding", "payload"}:
            raise VectorStoreError(f"invalid indexed payload key {key!r}")
    return tuple(keys)


class VectorStore(abc.ABC):
    """What docdb's KB index and mem's vg memories need from a vector store."""

    # True for Qdrant local mode: it scans every point in Python on a search, so callers that search
    # often keep an in-memory mirror (loaded with `pages`) and use the store as the durable copy only.
    # Every other backend searches with its own index and is never mirrored.
    local: bool = False

    @abc.abstractmethod
    async def ping(self) -> None: ...

    @abc.abstractmethod
    async def close(self) -> None: ...

    @abc.abstractmethod
    async def dimension(self, collection: str) -> int | None:
        """The collection's vector size, or None when it does not exist."""

    @abc.abstractmethod
    async def create(self, collection: str, dim: int, keys: Sequence[str]) -> None:
        """Create the collection (cosine distance) with `keys` indexed; a no-op when it exists."""

    @abc.abstractmethod
    async def drop(self, collection: str) -> None: ...

    @abc.abstractmethod
    async def upsert(
        self,
        collection: str,
        ids: Sequence[str],
        vectors: np.ndarray[Any, Any],
        payloads: Sequence[dict[str, Any]],
    ) -> None: ...

    @abc.abstractmethod
    async def delete(self, collection: str, ids: Sequence[str]) -> None: ...

    @abc.abstractmethod
    async def delete_where(self, collection: str, where: Where) -> None: ...

    @abc.abstractmethod
    async def count(self, collection: str, where: Where | None = None) -> int: ...

    @abc.abstractmethod
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
        """The `limit` nearest points by cosine similarity (best first), at or above `threshold`.
        `ef` is the HNSW candidate list of an unfiltered search; filtered searches are exact."""

    @abc.abstractmethod
    async def scroll(self, collection: str, where: Where, limit: int) -> list[Point]:
        """Up to `limit` points matching `where`, payloads only."""

    @abc.abstractmethod
    async def retrieve(self, collection: str, ids: Sequence[str]) -> list[Point]: ...

    @abc.abstractmethod
    def pages(self, collection: str, page: int = 2000) -> AsyncIterator[MirrorBatch]:
        """Every point with its vector, page by page: what an in-memory mirror loads."""


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


class QdrantStore(VectorStore):
    def __init__(self, client: AsyncQdrantClient, *, local: bool) -> None:
        self.client = client
        self.local = local

    @staticmethod
    def _filter(where: Where | None) -> models.Filter | None:
        if not where:
            return None
        return models.Filter(
            must=[models.FieldCondition(key=k, match=models.MatchValue(value=v)) for k, v in where.items()]
        )

    async def ping(self) -> None:
        await self.client.get_collections()

    async def close(self) -> None:
        await self.client.close()

    async def dimension(self, collection: str) -> int | None:
        if not await self.client.collection_exists(collection):
            return None
        params = (await self.client.get_collection(collection)).config.params.vectors
        return params.size if isinstance(params, models.VectorParams) else None

    async def create(self, collection: str, dim: int, keys: Sequence[str]) -> None:
        check_collection(collection)
        check_keys(keys)
        if await self.client.collection_exists(collection):
            return
        await self.client.create_collection(
            collection, vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE)
        )
        if not self.local:  # local mode ignores payload indexes (and warns)
            for key in keys:
                await self.client.create_payload_index(collection, key, models.PayloadSchemaType.KEYWORD)

    async def drop(self, collection: str) -> None:
        if await self.client.collection_exists(collection):
            await self.client.delete_collection(collection)

    async def upsert(
        self,
        collection: str,
        ids: Sequence[str],
        vectors: np.ndarray[Any, Any],
        payloads: Sequence[dict[str, Any]],
    ) -> None:
        rows = np.asarray(vectors, dtype=np.float32).reshape(len(ids), -1)
        points = [
            models.PointStruct(id=i, vector=v.tolist(), payload=dict(p))
            for i, v, p in zip(ids, rows, payloads, strict=True)
        ]
        await self.client.upsert(collection, points=points, wait=True)

    async def delete(self, collection: str, ids: Sequence[str]) -> None:
        if ids:
            selector = models.PointIdsList(points=list(ids))
            await self.client.delete(collection, points_selector=selector, wait=True)

    async def delete_where(self, collection: str, where: Where) -> None:
        flt = self._filter(where)
        if flt is None or not await self.client.collection_exists(collection):
            return
        await self.client.delete(collection, points_selector=models.FilterSelector(filter=flt), wait=True)

    async def count(self, collection: str, where: Where | None = None) -> int:
        if not await self.client.collection_exists(collection):
            return 0
        return (await self.client.count(collection, count_filter=self._filter(where), exact=True)).count

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
        if not await self.client.collection_exists(collection):
            return []
        result = await self.client.query_points(
            collection,
            query=np.asarray(vector, dtype=np.float32).tolist(),
            query_filter=self._filter(where),
            limit=limit,
            score_threshold=threshold,
            # Local mode searches exactly and ignores (with a warning) any search params.
            search_params=models.SearchParams(hnsw_ef=ef) if ef and not self.local else None,
            with_payload=True,
        )
        return [Point(str(p.id), p.payload or {}, float(p.score)) for p in result.points]

    async def scroll(self, collection: str, where: Where, limit: int) -> list[Point]:
        points, _ = await self.client.scroll(
            collection, scroll_filter=self._filter(where), limit=limit, with_payload=True
        )
        return [Point(str(p.id), p.payload or {}) for p in points]

    async def retrieve(self, collection: str, ids: Sequence[str]) -> list[Point]:
        wanted = [i for i in ids if _is_uuid(i)]  # an id that is not a UUID is simply not there
        if not wanted:
            return []
        points = await self.client.retrieve(collection, ids=wanted, with_payload=True)
        return [Point(str(p.id), p.payload or {}) for p in points]

    async def pages(self, collection: str, page: int = 2000) -> AsyncIterator[MirrorBatch]:
        offset: Any = None
        while True:
            points, offset = await self.client.scroll(
                collection, limit=page, offset=offset, with_payload=True, with_vectors=True
            )
            if points:
                yield MirrorBatch(
                    [str(p.id) for p in points],
                    np.asarray([p.vector for p in points], dtype=np.float32),
                    [p.payload or {} for p in points],
                )
            if offset is None:
                return


async def open_vector_store(
    config: VectorStoreConfig, data_dir: Path, database: DatabaseConfig | None = None
) -> VectorStore:
    """The store a service's `vector_store` names. pgvector takes its connection from `url`, else from
    the service's `database.url`, which must then be a PostgreSQL one."""
    if config.provider == "pgvector":
        from lore_common.stores.pgvector import PgVectorStore

        url = config.url or (database.url if database is not None else None)
        if not url or not url.startswith(("postgres://", "postgresql://", "postgresql+asyncpg://")):
            raise VectorStoreError(
                "vector_store.provider is pgvector but no PostgreSQL URL is set: give vector_store.url "
                "or the service's database.url (postgresql://user:pass@host:5432/db)"
            )
        return await PgVectorStore.connect(url, pool_size=config.pool_size)
    if config.url:
        client = AsyncQdrantClient(url=config.url, api_key=config.api_key, prefer_grpc=config.prefer_grpc)
        return QdrantStore(client, local=False)
    path = Path(config.path) if config.path else data_dir / "qdrant"
    path.mkdir(parents=True, exist_ok=True)
    return QdrantStore(AsyncQdrantClient(path=str(path)), local=True)
