"""gen: table generation with a WebSocket progress stream, and tag trees.

gen grounds its work in docdb over HTTP (`gen.docdb_url`) and keeps its generated tables and its task
records in its own relational store, so several replicas can share one PostgreSQL.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
from litestar import Litestar

from lore_common.jobs import replica_id
from lore_common.providers.cache import ModelCache
from lore_common.providers.chat import ChatModel, create_chat_model
from lore_common.stores import open_stores
from lore_common.stores.migrate import upgrade
from lore_common.stores.sql import Leadership
from lore_core.settings import Settings
from lore_core.tasks import background
from lore_core.web import build_from_environment, create_service_app
from lore_gen.database import MODEL_CACHE, SCHEMA
from lore_gen.docdb.client import DocdbClient
from lore_gen.tables.offline import OFFLINE_SKILLS as TABLE_OFFLINE_SKILLS
from lore_gen.tables.routes import TableController, pipeline_stream
from lore_gen.tables.service import TableService
from lore_gen.tables.store import TableStore
from lore_gen.tag_trees.offline import OFFLINE_SKILLS as TREE_OFFLINE_SKILLS
from lore_gen.tag_trees.routes import TagTreeController
from lore_gen.tag_trees.service import TagTreeService
from lore_gen.tasks.service import TaskService
from lore_gen.tasks.store import TaskStore

PREFIX = "/api/v1/gen"

log = structlog.get_logger("lore.gen")


@dataclass
class GenModels:
    """What `/health` reports under `models`: gen calls a chat model and docdb, no embedder."""

    llm: ChatModel
    docdb_url: str

    def describe(self) -> dict[str, Any]:
        return {"llm": self.llm.name, "docdb_url": self.docdb_url}


def create_app(settings: Settings) -> Litestar:
    config = settings.gen
    data_dir = Path(config.server.data_dir)

    @contextlib.asynccontextmanager
    async def services_lifespan(app: Litestar) -> AsyncIterator[None]:
        async with open_stores(data_dir, name="gen", database=config.database) as stores:
            assert stores.sql is not None
            llm = create_chat_model(config.llm, {**TABLE_OFFLINE_SKILLS, **TREE_OFFLINE_SKILLS})
            docdb = DocdbClient(config.docdb_url, timeout=config.llm.timeout)
            tables = TableStore(stores.sql, config.sql_row_limit, config.sql_timeout)
            await upgrade(stores.sql, SCHEMA)
            task_store = TaskStore(stores.sql)
            imported = await task_store.import_files(data_dir / "tasks") + await task_store.import_table()
            if imported:
                log.info("task_files_imported", count=imported)
            tasks = TaskService(
                task_store,
                replica_id(config.server.port),
                config.task_store_retry_for,
                resume_interrupted=config.resume_interrupted,
                resume_attempts=config.resume_attempts,
            )
            leadership = Leadership(stores.sql, "lore-gen-sweeps")
            app.state.stores = stores
            app.state.providers = GenModels(llm, config.docdb_url)
            app.state.tables = TableService(
                llm=llm,
                docdb=docdb,
                tables=tables,
                tasks=tasks,
                config=config,
                cache=ModelCache(stores.sql, MODEL_CACHE) if config.llm.provider != "offline" else None,
            )
            app.state.tag_trees = TagTreeService(llm=llm, docdb=docdb, tasks=tasks)
            # After the services: each says which of its tasks run again (the others fail).
            resumed, interrupted = await tasks.recover(shared=stores.sql.dialect.name != "sqlite")
            if resumed or interrupted:
                log.warning("tasks_recovered", resumed=resumed, interrupted=interrupted)
            try:
                maintenance = tasks.maintain(
                    config.task_heartbeat_interval, config.task_stale_after, leadership.is_leader
                )
                async with background(maintenance, "task-maintenance"):
                    yield
            finally:
                await tasks.shutdown()
                await leadership.release()
                await tables.aclose()
                await docdb.aclose()
                await llm.aclose()

    return create_service_app(
        service="gen",
        route_handlers=[TableController, pipeline_stream, TagTreeController],
        planned=[],
        lifespan=[services_lifespan],
        health_checks=lambda app: app.state.stores.health_checks(),
        state={"settings": settings},
        description="Table generation and tag trees.",
    )


def build_app() -> Litestar:
    return build_from_environment("gen", create_app)
