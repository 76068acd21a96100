"""Qdrant: local mode under the data dir by default (one owner process per path), a server by `url`."""

from __future__ import annotations

from pathlib import Path

from qdrant_client import AsyncQdrantClient

from lore_core.settings import VectorStoreConfig


def open_qdrant(config: VectorStoreConfig, data_dir: Path) -> AsyncQdrantClient:
    if config.url:
        return AsyncQdrantClient(url=config.url, api_key=config.api_key, prefer_grpc=config.prefer_grpc)
    path = Path(config.path) if config.path else data_dir / "qdrant"
    path.mkdir(parents=True, exist_ok=True)
    return AsyncQdrantClient(path=str(path))


async def ping(client: AsyncQdrantClient) -> None:
    await client.get_collections()
