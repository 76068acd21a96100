"""Qdrant: local mode under the data dir by default (one owner process per path), a server by `url`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
from qdrant_client import AsyncQdrantClient, models

from lore_core.settings import VectorStoreConfig


def open_qdrant(config: VectorStoreConfig, data_dir: Path) -> AsyncQdrantClient:
    if config.url:
        return AsyncQdrantClient(url=config.url, api_key=config.api_key, prefer_grpc=config.prefer_grpc)
    path = Path(config.path) if config.path else data_dir / "qdrant"
    path.mkdir(parents=True, exist_ok=True)
    return AsyncQdrantClient(path=str(path))


async def ping(client: AsyncQdrantClient) -> None:
    await client.get_collections()


class MirrorBatch:
    """One page of a collection, as a mirror loads it: point ids, their vectors, their payloads."""

    def __init__(self, points: list[models.Record]) -> None:
        self.ids = [str(point.id) for point in points]
        self.vectors = np.asarray([point.vector for point in points], dtype=np.float32)
        self.payloads = [point.payload or {} for point in points]


async def mirror_pages(
    client: AsyncQdrantClient, collection: str, page: int = 2000
) -> AsyncIterator[MirrorBatch]:
    """Every point of a collection, page by page, with vectors and payloads: what an in-memory mirror of
    a Qdrant-local collection loads (local mode scans every point on a filtered search, so docdb's search
    child and vg's in-process mirror answer from memory, and Qdrant stays the durable copy)."""
    offset: Any = None
    while True:
        points, offset = await client.scroll(
            collection, limit=page, offset=offset, with_payload=True, with_vectors=True
        )
        if points:
            yield MirrorBatch(points)
        if offset is None:
            return
