"""The stores one service holds, opened together in its lifespan and closed together.

Each store's client library is imported when a service asks for that store, so a service that keeps
only relational tables (gen) never loads numpy, Qdrant or FalkorDB, and need not install them (they
are lore-common's `vectors` and `graph` extras; object storage imports boto only when configured).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.ext.asyncio import AsyncEngine

from lore_common.stores import sql
from lore_common.stores.objects import ObjectStore, open_object_store
from lore_core.settings import DatabaseConfig, GraphStoreConfig, ObjectStorageConfig, VectorStoreConfig
from lore_core.web import HealthCheck

if TYPE_CHECKING:
    from lore_common.stores.graph import GraphStore
    from lore_common.stores.vector import VectorStore

POSTGRES_URL_PREFIXES = ("postgres://", "postgresql://", "postgresql+asyncpg://")


@dataclass
class Stores:
    data_dir: Path
    sql: AsyncEngine | None = None
    vector: VectorStore | None = None
    graph: GraphStore | None = None
    objects: ObjectStore | None = None
    extra_checks: dict[str, HealthCheck] = field(default_factory=dict)

    def health_checks(self) -> dict[str, HealthCheck]:
        checks: dict[str, HealthCheck] = {}
        if self.sql is not None:
            engine = self.sql
            checks["relational"] = lambda: sql.ping(engine)
        if self.vector is not None:
            checks["vector"] = self.vector.ping
        if self.graph is not None:
            checks["graph"] = self.graph.ping
        if self.objects is not None:
            checks["objects"] = self.objects.ping
        checks.update(self.extra_checks)
        return checks


async def open_vector_store(
    config: VectorStoreConfig, data_dir: Path, database: DatabaseConfig | None = None
) -> VectorStore:
    """The store a service's `vector_store` names. pgvector takes its connection from `url`, else from
    the service's `database.url`, which must then be a PostgreSQL one."""
    if config.provider == "pgvector":
        from lore_common.stores.pgvector import PgVectorStore
        from lore_common.stores.vector import VectorStoreError

        url = config.url or (database.url if database is not None else None)
        if not url or not url.startswith(POSTGRES_URL_PREFIXES):
            raise VectorStoreError(
                "vector_store.provider is pgvector but no PostgreSQL URL is set: give vector_store.url "
                "or the service's database.url (postgresql://user:pass@host:5432/db)"
            )
        return await PgVectorStore.connect(url, pool_size=config.pool_size)
    if config.url:
        from lore_common.stores.qdrant import open_qdrant

        return open_qdrant(config)
    from lore_common.stores.edge import open_edge

    return await open_edge(Path(config.path) if config.path else data_dir / "qdrant")


@contextlib.asynccontextmanager
async def open_stores(
    data_dir: Path,
    *,
    name: str,
    database: DatabaseConfig | None = None,
    vector_store: VectorStoreConfig | None = None,
    graph_store: GraphStoreConfig | None = None,
    object_storage: ObjectStorageConfig | None = None,
) -> AsyncIterator[Stores]:
    """Open the stores a service asked for; whatever opened is closed again, even on a failed start."""
    await asyncio.to_thread(data_dir.mkdir, parents=True, exist_ok=True)
    stores = Stores(data_dir=data_dir)
    async with contextlib.AsyncExitStack() as stack:
        if database is not None:
            stores.sql = sql.create_engine(database, data_dir, name)
            stack.push_async_callback(stores.sql.dispose)
        if vector_store is not None:
            stores.vector = await open_vector_store(vector_store, data_dir, database)
            stack.push_async_callback(stores.vector.close)
        if graph_store is not None and graph_store.enabled:
            from lore_common.stores.graph import open_graph_store

            stores.graph = await open_graph_store(graph_store, data_dir)
            stack.push_async_callback(stores.graph.close)
        if object_storage is not None:
            stores.objects = await stack.enter_async_context(open_object_store(object_storage))
        yield stores
