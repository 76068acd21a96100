"""docdb: datasets, uploads, knowledge bases, parse tasks, schemas, config, chat and retrieval."""

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
from lore_docdb.config.routes import ConfigController
from lore_docdb.config.service import ConfigService

PREFIX = "/api/v1/docdb"
FILES = f"{PREFIX}/files"
DATASETS = f"{FILES}/raw-files/datasets"
KBS = f"{FILES}/knowledge-bases"
TASKS = f"{FILES}/processing"

PLANNED = [
    PlannedRoute(("POST",), f"{PREFIX}/chat", "chat"),
    PlannedRoute(("POST",), f"{PREFIX}/retrieve", "retrieval"),
    PlannedRoute(("GET", "POST"), DATASETS, "datasets"),
    PlannedRoute(("DELETE",), f"{DATASETS}/{{dataset:str}}", "datasets"),
    PlannedRoute(("GET", "POST"), f"{DATASETS}/{{dataset:str}}/files", "file upload"),
    PlannedRoute(("DELETE",), f"{DATASETS}/{{dataset:str}}/files/{{filename:str}}", "file delete"),
    PlannedRoute(("POST",), f"{DATASETS}/{{dataset:str}}/upload/init", "chunked upload"),
    PlannedRoute(("POST",), f"{DATASETS}/{{dataset:str}}/upload/{{upload_id:str}}/chunk", "chunked upload"),
    PlannedRoute(
        ("POST",), f"{DATASETS}/{{dataset:str}}/upload/{{upload_id:str}}/complete", "chunked upload"
    ),
    PlannedRoute(("DELETE",), f"{DATASETS}/{{dataset:str}}/upload/{{upload_id:str}}", "chunked upload"),
    PlannedRoute(("GET", "POST"), KBS, "knowledge bases"),
    PlannedRoute(("GET", "DELETE"), f"{KBS}/{{kb_name:str}}", "knowledge bases"),
    PlannedRoute(("GET",), f"{KBS}/{{kb_name:str}}/overview", "knowledge-base overview"),
    PlannedRoute(("DELETE",), f"{KBS}/{{kb_name:str}}/datasets/{{dataset_name:str}}", "knowledge bases"),
    PlannedRoute(("POST",), f"{KBS}/{{kb_name:str}}/parse", "the parse pipeline"),
    PlannedRoute(("GET",), f"{TASKS}/tasks", "processing tasks"),
    PlannedRoute(("GET",), f"{TASKS}/tasks/{{task_id:str}}", "processing tasks"),
    PlannedRoute(("POST",), f"{TASKS}/tasks/{{task_id:str}}/cancel", "processing tasks"),
    PlannedRoute(("GET",), f"{TASKS}/config", "processing configuration"),
    PlannedRoute(("GET", "POST"), f"{PREFIX}/schemas", "entity schemas"),
    PlannedRoute(("GET", "DELETE"), f"{PREFIX}/schemas/{{name:str}}", "entity schemas"),
]


def create_app(settings: Settings, config_dir: Path | None = None) -> Litestar:
    data_dir = Path(settings.docdb.server.data_dir)
    config_service = ConfigService(settings, config_dir)

    @contextlib.asynccontextmanager
    async def stores_lifespan(app: Litestar) -> AsyncIterator[None]:
        cfg = config_service.settings.docdb
        async with (
            open_stores(
                data_dir,
                name="docdb",
                database=cfg.database,
                vector_store=cfg.vector_store,
                graph_store=cfg.graph_store,
                object_storage=cfg.object_storage,
            ) as stores,
            open_providers(cfg.llm, cfg.embedding_api, cfg.query_defaults.reranker_url) as providers,
        ):
            app.state.stores = stores
            app.state.providers = providers
            yield

    return create_service_app(
        service="docdb",
        route_handlers=[ConfigController],
        planned=PLANNED,
        error_style="envelope",
        lifespan=[stores_lifespan],
        health_checks=lambda app: app.state.stores.health_checks(),
        state={"config_service": config_service},
        description="Document knowledge bases with cited answers.",
    )


def build_app() -> Litestar:
    """granian factory: settings from `$LORE_CONFIG_DIR` (default ./config) and `LORE__*`."""
    settings = load_settings()
    configure_logging(settings.logging, service="docdb")
    return create_app(settings)
