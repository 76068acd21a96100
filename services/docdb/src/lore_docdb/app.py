"""docdb: datasets, uploads, knowledge bases, parse tasks, schemas, config, chat and retrieval."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from litestar import Litestar, Router

from lore_common.logging import configure_logging
from lore_common.providers.container import open_providers
from lore_common.settings import Settings, load_settings
from lore_common.stores import open_stores
from lore_common.tasks import periodic
from lore_common.web import PlannedRoute, create_service_app
from lore_docdb.config.routes import ConfigController
from lore_docdb.config.service import ConfigService
from lore_docdb.datasets.routes import DatasetController
from lore_docdb.datasets.service import DatasetService
from lore_docdb.datasets.store import RawFiles
from lore_docdb.schemas.routes import SchemaController
from lore_docdb.schemas.service import SchemaService
from lore_docdb.tables import create_tables
from lore_docdb.tasks.store import TaskStore
from lore_docdb.uploads.routes import UploadController
from lore_docdb.uploads.service import UploadService

PREFIX = "/api/v1/docdb"
FILES = f"{PREFIX}/files"
KBS = f"{FILES}/knowledge-bases"
TASKS = f"{FILES}/processing"
MULTIPART_OVERHEAD = 1024 * 1024

PLANNED = [
    PlannedRoute(("POST",), f"{PREFIX}/chat", "chat"),
    PlannedRoute(("POST",), f"{PREFIX}/retrieve", "retrieval"),
    PlannedRoute(("GET", "POST"), KBS, "knowledge bases"),
    PlannedRoute(("GET", "DELETE"), f"{KBS}/{{kb_name:str}}", "knowledge bases"),
    PlannedRoute(("GET",), f"{KBS}/{{kb_name:str}}/overview", "knowledge-base overview"),
    PlannedRoute(("DELETE",), f"{KBS}/{{kb_name:str}}/datasets/{{dataset_name:str}}", "knowledge bases"),
    PlannedRoute(("POST",), f"{KBS}/{{kb_name:str}}/parse", "the parse pipeline"),
    PlannedRoute(("GET",), f"{TASKS}/tasks", "processing tasks"),
    PlannedRoute(("GET",), f"{TASKS}/tasks/{{task_id:str}}", "processing tasks"),
    PlannedRoute(("POST",), f"{TASKS}/tasks/{{task_id:str}}/cancel", "processing tasks"),
    PlannedRoute(("GET",), f"{TASKS}/config", "processing configuration"),
]


def create_app(settings: Settings, config_dir: Path | None = None) -> Litestar:
    data_dir = Path(settings.docdb.server.data_dir)
    config_service = ConfigService(settings, config_dir)
    max_body = settings.docdb.max_upload_size + MULTIPART_OVERHEAD

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
            assert stores.sql is not None
            await create_tables(stores.sql)
            tasks = TaskStore(stores.sql)
            raw = RawFiles(data_dir / "raw")
            await asyncio.to_thread(raw.purge_trash)
            await asyncio.to_thread(lambda: list(raw.sweep_temp_files()))
            datasets = DatasetService(raw, tasks, stores.objects, cfg.max_upload_size)
            uploads = UploadService(datasets)
            app.state.stores = stores
            app.state.providers = providers
            app.state.datasets = datasets
            app.state.uploads = uploads
            app.state.schemas = SchemaService(stores.sql)
            async with periodic(cfg.upload_sweep_interval, lambda: uploads.sweep(cfg.upload_session_ttl)):
                yield

    return create_service_app(
        service="docdb",
        route_handlers=[
            ConfigController,
            # Simple uploads are capped per request (plus room for multipart framing); chunks are not.
            Router("/", route_handlers=[DatasetController], request_max_body_size=max_body),
            UploadController,
            SchemaController,
        ],
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
