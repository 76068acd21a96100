"""The stores one service holds, opened together in its lifespan and closed together."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncEngine

from lore_common.stores import graph, objects, sql
from lore_common.stores.vector import VectorStore, open_vector_store
from lore_core.settings import DatabaseConfig, GraphStoreConfig, ObjectStorageConfig, VectorStoreConfig
from lore_core.web import HealthCheck


@dataclass
class Stores:
    data_dir: Path
    sql: AsyncEngine | None = None
    vector: VectorStore | None = None
    graph: graph.GraphStore | None = None
    objects: objects.ObjectStore | None = None
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
            stores.graph = await graph.open_graph_store(graph_store, data_dir)
            stack.push_async_callback(stores.graph.close)
        if object_storage is not None:
            stores.objects = await stack.enter_async_context(objects.open_object_store(object_storage))
        yield stores
