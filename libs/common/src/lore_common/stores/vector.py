"""The interface every vector store implements: the embedded Qdrant Edge engine under the data dir
(`lore_common.stores.edge`, the default), a Qdrant server by `url` (`lore_common.stores.qdrant`) and
PostgreSQL with pgvector (`lore_common.stores.pgvector`).
`lore_common.stores.open_vector_store` opens the one a service's `vector_store` names.

A collection holds points: a string id (a UUID), a vector compared by cosine, and a JSON payload. The
payload keys named when a collection is created are indexed and are the only keys a `where` filter may
use, so that every filter is an index lookup on a server, never a scan of JSON."""

from __future__ import annotations

import abc
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

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
    """One page of a collection with its vectors: point ids, vectors and payloads (a copy or a migration)."""

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

    # True for the embedded engine: it runs on this machine with the data on local disk, so a read of
    # a few thousand points costs no network round trips (mem's vg reads a whole scope there).
    embedded: bool = False

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
        """Every point with its vector, page by page (copies between stores read this)."""
