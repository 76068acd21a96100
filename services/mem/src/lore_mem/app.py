"""mem: `kb` knowledge-graph memory and `vg` conversational fact memory."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from litestar import Litestar

from lore_common.logging import configure_logging
from lore_common.providers.container import open_providers
from lore_common.settings import GraphStoreConfig, Settings, load_settings
from lore_common.stores import open_stores
from lore_common.web import PlannedRoute, create_service_app
from lore_mem.vg.graph import VgGraph
from lore_mem.vg.routes import VgController
from lore_mem.vg.service import VgMemory
from lore_mem.vg.store import HistoryStore, MemoryStore

PREFIX = "/api/v1/mem"

PLANNED = [
    PlannedRoute(("POST",), f"{PREFIX}/kb/insert", "kb memory insert"),
    PlannedRoute(("POST",), f"{PREFIX}/kb/query", "kb memory query"),
]


def create_app(settings: Settings) -> Litestar:
    data_dir = Path(settings.mem.server.data_dir)

    @contextlib.asynccontextmanager
    async def stores_lifespan(app: Litestar) -> AsyncIterator[None]:
        vg = settings.mem.memoryvg
        async with (
            open_stores(
                data_dir,
                name="mem",
                database=settings.mem.database,
                vector_store=settings.mem.vector_store,
                # The vg graph inherits the main graph connection unless it names its own (contract §8).
                graph_store=GraphStoreConfig(
                    url=vg.graph_store.url or settings.mem.graph_store.url,
                    password=vg.graph_store.password or settings.mem.graph_store.password,
                )
                if vg.graph_store.enabled
                else None,
            ) as stores,
            open_providers(vg.llm, settings.mem.embedding_api) as providers,
        ):
            assert stores.sql is not None and stores.vector is not None
            history = HistoryStore(stores.sql)
            await history.create_tables()
            memories = MemoryStore(
                stores.vector,
                vg.vector_store.config.collection_name,
                server=settings.mem.vector_store.url is not None,
            )
            await memories.ensure(providers.embedder.dim)
            app.state.stores = stores
            app.state.providers = providers
            graph = VgGraph(stores.graph, providers.llm) if stores.graph is not None else None
            if graph is not None:
                await graph.ensure()
            app.state.vg = VgMemory(memories, history, providers.embedder, providers.llm, graph)
            yield

    return create_service_app(
        service="mem",
        route_handlers=[VgController],
        planned=PLANNED,
        lifespan=[stores_lifespan],
        health_checks=lambda app: app.state.stores.health_checks(),
        state={"settings": settings},
        description="Long-term memory for agents: `kb` graph memory and `vg` fact memory.",
    )


def build_app() -> Litestar:
    settings = load_settings()
    configure_logging(settings.logging, service="mem")
    return create_app(settings)
