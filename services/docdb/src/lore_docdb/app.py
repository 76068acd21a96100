"""docdb: datasets, uploads, knowledge bases, parse tasks, schemas, config, chat and retrieval."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from litestar import Litestar, Router
from sqlalchemy.ext.asyncio import AsyncEngine

from lore_common.jobs import replica_id
from lore_common.providers.chat import create_chat_model
from lore_common.providers.container import open_providers
from lore_common.stores import open_stores
from lore_common.stores.objects import ObjectStore
from lore_common.stores.sql import Leadership
from lore_core.settings import DocdbConfig, Settings
from lore_core.tasks import periodic
from lore_core.web import PlannedRoute, build_from_environment, create_service_app
from lore_docdb.chat.offline import OFFLINE_SKILLS as CHAT_OFFLINE_SKILLS
from lore_docdb.chat.retrieval import Retriever
from lore_docdb.chat.routes import ChatController
from lore_docdb.chat.service import ChatService
from lore_docdb.config.routes import ConfigController
from lore_docdb.config.service import ConfigService
from lore_docdb.database import create_tables
from lore_docdb.datasets.objects import ObjectRawStore
from lore_docdb.datasets.routes import DatasetController
from lore_docdb.datasets.service import DatasetService
from lore_docdb.datasets.store import LocalRawStore, RawFiles, RawStore
from lore_docdb.index.bm25 import Bm25Cache
from lore_docdb.index.embedding import KbEmbedders
from lore_docdb.index.graph import GraphIndex
from lore_docdb.index.store import IndexStore
from lore_docdb.index.vectors import VectorIndex
from lore_docdb.knowledge_bases.routes import KnowledgeBaseController
from lore_docdb.knowledge_bases.service import KnowledgeBaseService
from lore_docdb.parsing.pipeline import ParsePipeline
from lore_docdb.schemas.routes import SchemaController
from lore_docdb.schemas.service import SchemaService
from lore_docdb.schemas.store import SchemaStore
from lore_docdb.tasks.routes import TaskController
from lore_docdb.tasks.service import TaskService
from lore_docdb.tasks.store import TaskStore
from lore_docdb.uploads.models import Uploads
from lore_docdb.uploads.objects import ObjectUploads
from lore_docdb.uploads.routes import UploadController
from lore_docdb.uploads.service import LocalUploads

PREFIX = "/api/v1/docdb"
MULTIPART_OVERHEAD = 1024 * 1024

PLANNED: list[PlannedRoute] = []


# A temp file untouched this long is a crashed write, not an upload in progress.
STALE_WRITE_S = 3600.0


async def open_raw_files(
    data_dir: Path, engine: AsyncEngine, objects: ObjectStore | None, tasks: TaskStore, cfg: DocdbConfig
) -> tuple[RawStore, Uploads, DatasetService]:
    """Raw files and chunked uploads in object storage when it is configured (replicas then share no
    disk), else on local disk."""
    local = data_dir / "raw"
    if objects is not None:
        store = ObjectRawStore(engine, objects, data_dir / "staging")
        if local.is_dir():
            await store.import_local(RawFiles(local))
        await store.sweep(0 if engine.dialect.name == "sqlite" else STALE_WRITE_S)
        datasets = DatasetService(store, tasks, cfg.max_upload_size)
        return store, ObjectUploads(store, datasets, engine), datasets
    files = RawFiles(local)
    await asyncio.to_thread(files.purge_trash)
    raw = LocalRawStore(files)
    # On SQLite this process owns the data dir; on PostgreSQL replicas may share it (a ReadWriteMany
    # volume), and a young temp file may be another replica's upload.
    await raw.sweep(0 if engine.dialect.name == "sqlite" else STALE_WRITE_S)
    datasets = DatasetService(raw, tasks, cfg.max_upload_size)
    return raw, LocalUploads(files, datasets, engine), datasets


async def sweep_uploads(uploads: Uploads, raw: RawStore, ttl: float) -> int:
    return await uploads.sweep(ttl) + await raw.sweep(STALE_WRITE_S)


def create_app(settings: Settings, config_dir: Path | None = None) -> Litestar:
    data_dir = Path(settings.docdb.server.data_dir)
    config_service = ConfigService(settings, config_dir)
    max_body = settings.docdb.max_upload_size + MULTIPART_OVERHEAD

    @contextlib.asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
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
            open_providers(
                cfg.llm, cfg.embedding_api, cfg.query_defaults.reranker_url, CHAT_OFFLINE_SKILLS
            ) as providers,
        ):
            assert stores.sql is not None and stores.vector is not None
            await create_tables(stores.sql)
            task_store = TaskStore(stores.sql)
            index = IndexStore(stores.sql, settings.postgres_batch_size)
            vectors = VectorIndex(stores.vector)
            graph, bm25 = (
                GraphIndex(stores.graph),
                Bm25Cache(index.chunks_of_kb, index.fresh_version.get if index.shared else None),
            )
            schemas = SchemaService(SchemaStore(stores.sql))
            raw, uploads, datasets = await open_raw_files(
                data_dir, stores.sql, stores.objects, task_store, cfg
            )
            # Pictures in PDF/DOCX files are captioned when a vision model is configured (docdb.vlm).
            vision = create_chat_model(cfg.vlm) if cfg.vlm.provider != "offline" else None
            embedders = KbEmbedders(providers.embedders, index)
            pipeline = ParsePipeline(settings, index, vectors, graph, embedders, providers.llm, bm25, vision)
            # With several replicas on one PostgreSQL, one of them runs the sweeps.
            leadership = Leadership(stores.sql, "lore-docdb-sweeps")
            owner = replica_id(cfg.server.port)
            tasks = TaskService(task_store, index, pipeline, raw, settings, owner, leadership.is_leader)
            kbs = KnowledgeBaseService(
                index, vectors, graph, tasks, task_store, schemas, raw, data_dir / "kbs", bm25.bump, embedders
            )
            retriever = Retriever(
                vectors=vectors,
                graph=graph,
                bm25=bm25,
                index=index,
                embedders=providers.embedders,
                reranker=providers.reranker,
                defaults=lambda: config_service.settings.docdb.query_defaults,
                search=cfg.search_params,
            )
            chat = ChatService(
                retriever=retriever,
                llm=providers.llm,
                index=index,
                objects=stores.objects,
                defaults=lambda: config_service.settings.docdb.query_defaults,
            )
            app.state.update(
                chat=chat,
                stores=stores,
                providers=providers,
                datasets=datasets,
                uploads=uploads,
                schemas=schemas,
                tasks=tasks,
                knowledge_bases=kbs,
                index=index,
                vectors=vectors,
                graph=graph,
                bm25=bm25,
            )
            # One process owns an embedded SQLite store: whatever it finds running died with the last one.
            await tasks.recover(shared=stores.sql.dialect.name != "sqlite")
            await kbs.resume_deletions()
            await tasks.start()
            try:
                async with periodic(
                    cfg.upload_sweep_interval,
                    lambda: sweep_uploads(uploads, raw, cfg.upload_session_ttl),
                    name="upload_sweep",
                    when=leadership.is_leader,
                ):
                    yield
            finally:
                await tasks.stop()
                await leadership.release()
                await vectors.close()
                if vision is not None:
                    await vision.aclose()

    return create_service_app(
        service="docdb",
        route_handlers=[
            ConfigController,
            # Simple uploads are capped per request (plus room for multipart framing); chunks are not.
            Router("/", route_handlers=[DatasetController], request_max_body_size=max_body),
            UploadController,
            SchemaController,
            KnowledgeBaseController,
            TaskController,
            ChatController,
        ],
        planned=PLANNED,
        error_style="envelope",
        lifespan=[lifespan],
        health_checks=lambda app: app.state.stores.health_checks(),
        state={"config_service": config_service},
        description="Document knowledge bases with cited answers.",
    )


def build_app() -> Litestar:
    return build_from_environment("docdb", create_app)
