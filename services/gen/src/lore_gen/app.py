"""gen: table generation with a WebSocket progress stream, and tag trees."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from litestar import Litestar, WebSocket, websocket

from lore_common.logging import configure_logging
from lore_common.providers.container import open_providers
from lore_common.settings import Settings, load_settings
from lore_common.stores import open_stores
from lore_common.web import PlannedRoute, create_service_app

PREFIX = "/api/v1/gen"

PLANNED = [
    PlannedRoute(("POST",), f"{PREFIX}/pipeline/submit", "the table-generation pipeline"),
    PlannedRoute(("GET",), f"{PREFIX}/pipeline/status/{{task_id:str}}", "the table-generation pipeline"),
    PlannedRoute(("POST",), f"{PREFIX}/tag-tree/generate", "tag-tree generation"),
    PlannedRoute(("POST",), f"{PREFIX}/tag-tree/submit", "spreadsheet tag trees"),
    PlannedRoute(("GET",), f"{PREFIX}/tag-tree/status/{{task_id:str}}", "tag-tree generation"),
]


@websocket(f"{PREFIX}/pipeline/stream")
async def pipeline_stream(socket: WebSocket[Any, Any, Any]) -> None:
    """Until the pipeline lands, answer the client's first message with an `error` message and close."""
    await socket.accept()
    with contextlib.suppress(Exception):
        await socket.receive_data(mode="text")
    await socket.send_json(
        {"type": "error", "message": "the table-generation pipeline is not built yet in this version of Lore"}
    )
    await socket.close(code=1011, reason="not built yet")


def create_app(settings: Settings) -> Litestar:
    data_dir = Path(settings.gen.server.data_dir)

    @contextlib.asynccontextmanager
    async def stores_lifespan(app: Litestar) -> AsyncIterator[None]:
        async with (
            open_stores(data_dir, name="gen", database=settings.gen.database) as stores,
            open_providers(settings.gen.llm, settings.gen.embedding_api) as providers,
        ):
            app.state.stores = stores
            app.state.providers = providers
            yield

    return create_service_app(
        service="gen",
        route_handlers=[pipeline_stream],
        planned=PLANNED,
        lifespan=[stores_lifespan],
        health_checks=lambda app: app.state.stores.health_checks(),
        state={"settings": settings},
        description="Table generation and tag trees.",
    )


def build_app() -> Litestar:
    settings = load_settings()
    configure_logging(settings.logging, service="gen")
    return create_app(settings)
