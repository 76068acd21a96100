"""mem: `kb` knowledge-graph memory and `vg` conversational fact memory."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from litestar import Litestar

from lore_common.logging import configure_logging
from lore_common.providers.container import open_providers
from lore_common.settings import Settings, load_settings
from lore_common.stores import open_stores
from lore_common.web import PlannedRoute, create_service_app

PREFIX = "/api/v1/mem"

PLANNED = [
    PlannedRoute(("POST",), f"{PREFIX}/kb/insert", "kb memory insert"),
    PlannedRoute(("POST",), f"{PREFIX}/kb/query", "kb memory query"),
    PlannedRoute(("POST",), f"{PREFIX}/vg/add", "vg memory add"),
    PlannedRoute(("POST",), f"{PREFIX}/vg/search", "vg memory search"),
    PlannedRoute(("GET", "DELETE"), f"{PREFIX}/vg", "vg memory list and delete"),
    PlannedRoute(("GET", "PUT", "DELETE"), f"{PREFIX}/vg/{{memory_id:str}}", "vg memory get, update, delete"),
    PlannedRoute(("GET",), f"{PREFIX}/vg/{{memory_id:str}}/history", "vg memory history"),
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
                graph_store=vg.graph_store if vg.graph_store.enabled else None,
            ) as stores,
            open_providers(vg.llm, settings.mem.embedding_api) as providers,
        ):
            app.state.stores = stores
            app.state.providers = providers
            yield

    return create_service_app(
        service="mem",
        route_handlers=[],
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
