"""docdb: datasets, uploads, knowledge bases, parse tasks, schemas, config, chat and retrieval."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from litestar import Litestar, Router
from sqlalchemy.ext.asyncio import AsyncEngine

from lore_common.jobs import replica_id
from lore_common.providers.cache import ModelCache
from lore_common.providers.chat import ChatModel, create_chat_model
from lore_common.providers.container import Providers, open_providers
from lore_common.stores import open_stores
from lore_common.stores.container import Stores
from lore_common.stores.objects import ObjectStore
from lore_common.stores.sql import Leadership
from lore_core.settings import DocdbConfig, QueryDefaults, Settings
from lore_core.tasks import background, periodic
from lore_core.web import PlannedRoute, build_from_environment, create_service_app
from lore_docdb.chat.offline import OFFLINE_SKILLS as CHAT_OFFLINE_SKILLS
from lore_docdb.chat.retrieval import Retriever
from lore_docdb.chat.routes import ChatController
from lore_docdb.chat.service import ChatService
from lore_docdb.config.routes import ConfigController
from lore_docdb.config.service import ConfigService
from lore_docdb.database import MODEL_CACHE, create_tables
from lore_docdb.datasets.disk import DiskRawStore, RawFiles
from lore_docdb.datasets.objects import ObjectRawStore
from lore_docdb.datasets.raw import RawStore
from lore_docdb.datasets.routes import DatasetController
from lore_docdb.datasets.service import DatasetService
from lore_docdb.index.bm25 import Bm25Cache
from lore_docdb.index.graph import GraphIndex
from lore_docdb.index.indexes import SearchIndexes
from lore_docdb.index.vectors import VectorIndex
from lore_docdb.knowledge_bases.embedders import KbEmbedders
from lore_docdb.knowledge_bases.routes import KnowledgeBaseController
from lore_docdb.knowledge_bases.service import KnowledgeBaseService
from lore_docdb.knowledge_bases.store import KnowledgeBaseStore
from lore_docdb.parse.pipeline import ParsePipeline
from lore_docdb.parse.routes import ParseController
from lore_docdb.parse.service import ParseService
from lore_docdb.parse.store import TaskStore
from lore_docdb.schemas.routes import SchemaController
from lore_docdb.schemas.service import SchemaService
from lore_docdb.schemas.store import SchemaStore
from lore_docdb.sources.fetch import Fetcher
from lore_docdb.sources.routes import SourceController, SourceListController
from lore_docdb.sources.service import SourceService, SyncStore, reparse_in
from lore_docdb.sources.store import SourceStore
from lore_docdb.uploads.disk import DiskUploads
from lore_docdb.uploads.objects import ObjectUploads
from lore_docdb.uploads.routes import UploadController
from lore_docdb.uploads.service import UploadBackend, UploadService
from lore_docdb.uploads.store import UploadSessionStore

PREFIX = "/api/v1/docdb"
MULTIPART_OVERHEAD = 1024 * 1024

PLANNED: list[PlannedRoute] = []


# A temp file untouched this long is a crashed write, not an upload in progress.
STALE_WRITE_S = 3600.0


async def open_raw_storage(
    data_dir: Path, engine: AsyncEngine, objects: ObjectStore | None
) -> tuple[RawStore, UploadBackend]:
    """Where raw files and upload sessions live: object storage when it is configured (replicas then
    share no disk), else local disk; what a crash left half-written is cleared first."""
    # On SQLite this process owns the data dir; on PostgreSQL replicas may share it (a ReadWriteMany
    # volume), and a young temp file may be another replica's upload.
    stale = 0 if engine.dialect.name == "sqlite" else STALE_WRITE_S
    local = data_dir / "raw"
    if objects is not None:
        store = ObjectRawStore(engine, objects, data_dir / "staging")
        if local.is_dir():
            await store.import_local(RawFiles(local))
        await store.sweep(stale)
        return store, ObjectUploads(store, UploadSessionStore(engine))
    files = RawFiles(local)
    await asyncio.to_thread(files.purge_trash)
    raw = DiskRawStore(files)
    await raw.sweep(stale)
    return raw, DiskUploads(files)


def active_parses_of(tasks: TaskStore) -> Callable[[str], Awaitable[list[str]]]:
    """The ids of the parse tasks still reading a dataset (which then cannot be deleted)."""

    async def active(dataset: str) -> list[str]:
        return [task.task_id for task in await tasks.active_for_dataset(dataset)]

    return active


async def sweep_uploads(uploads: UploadService, raw: RawStore, ttl: float) -> int:
    return await uploads.sweep(ttl) + await raw.sweep(STALE_WRITE_S)


@dataclass
class Domains:
    """docdb's services, wired: what the routes reach through `app.state`."""

    datasets: DatasetService
    uploads: UploadService
    schemas: SchemaService
    knowledge_bases: KnowledgeBaseService
    parse: ParseService
    chat: ChatService
    sources: SourceService
    # Below the services, kept for the start-up and shutdown steps (and for tests to look into).
    raw: RawStore
    kb_store: KnowledgeBaseStore
    indexes: SearchIndexes
    leadership: Leadership
    vision: ChatModel | None

    def state(self) -> dict[str, Any]:
        return {
            "datasets": self.datasets,
            "uploads": self.uploads,
            "schemas": self.schemas,
            "knowledge_bases": self.knowledge_bases,
            "parse": self.parse,
            "chat": self.chat,
            "sources": self.sources,
            "kb_store": self.kb_store,
            "vectors": self.indexes.vectors,
            "graph": self.indexes.graph,
            "bm25": self.indexes.bm25,
        }


async def wire(settings: Settings, config: ConfigService, stores: Stores, providers: Providers) -> Domains:
    """Build docdb's stores, search adapters and services, bottom up (see CONTRIBUTING.md's map)."""
    cfg = settings.docdb
    data_dir = Path(cfg.server.data_dir)
    assert stores.sql is not None and stores.vector is not None
    sql = stores.sql

    def query_defaults() -> QueryDefaults:
        return config.settings.docdb.query_defaults

    kb_store = KnowledgeBaseStore(sql, settings.postgres_batch_size)
    indexes = SearchIndexes(
        vectors=VectorIndex(stores.vector),
        graph=GraphIndex(stores.graph),
        bm25=Bm25Cache(
            kb_store.passages_of_kb, kb_store.fresh_version.get, data_dir / "kbs", shared=kb_store.shared
        ),
    )
    embedders = KbEmbedders(providers.embedders, kb_store)
    schemas = SchemaService(SchemaStore(sql))
    task_store = TaskStore(sql)
    raw, upload_backend = await open_raw_storage(data_dir, sql, stores.objects)
    datasets = DatasetService(
        raw=raw, active_parses=active_parses_of(task_store), max_upload_size=cfg.max_upload_size
    )
    uploads = UploadService(backend=upload_backend, datasets=datasets, engine=sql)
    # With several replicas on one PostgreSQL, one of them runs the sweeps.
    leadership = Leadership(sql, "lore-docdb-sweeps")
    # Pictures in PDF/DOCX files are captioned when a vision model is configured (docdb.vlm).
    vision = create_chat_model(cfg.vlm) if cfg.vlm.provider != "offline" else None
    pipeline = ParsePipeline(
        settings=settings,
        kbs=kb_store,
        indexes=indexes,
        embedders=embedders,
        llm=providers.llm,
        vision=vision,
        # A remote model's extraction results are kept (the offline model is cheaper than the lookup).
        cache=ModelCache(sql, MODEL_CACHE) if cfg.llm.provider != "offline" else None,
    )
    parse = ParseService(
        store=task_store,
        kbs=kb_store,
        pipeline=pipeline,
        raw=raw,
        settings=settings,
        owner=replica_id(cfg.server.port),
        leads=leadership.is_leader,
        current_settings=lambda: config.settings,
        embedders=embedders,
    )
    knowledge_bases = KnowledgeBaseService(
        store=kb_store,
        parses=parse,
        indexes=indexes,
        embedders=embedders,
        schemas=schemas,
        raw=raw,
        kb_root=data_dir / "kbs",
        label_language=settings.display.language,
    )
    retriever = Retriever(
        vectors=indexes.vectors,
        graph=indexes.graph,
        bm25=indexes.bm25,
        kb_store=kb_store,
        embedders=providers.embedders,
        reranker=providers.reranker,
        defaults=query_defaults,
        search=cfg.search_params,
    )
    chat = ChatService(
        retriever=retriever,
        llm=providers.llm,
        kb_store=kb_store,
        objects=stores.objects,
        defaults=query_defaults,
    )
    sources = SourceService(
        store=SourceStore(sql),
        syncs=SyncStore(sql),
        datasets=datasets,
        raw=raw,
        fetcher=Fetcher(cfg.sources, settings.network.allow_ranges),
        config=cfg.sources,
        owner=replica_id(cfg.server.port),
        reparse=reparse_in(knowledge_bases),
    )
    datasets.on_deleted.append(sources.forget)
    parse.on_stale.append(knowledge_bases.parse_changes)
    return Domains(
        datasets=datasets,
        uploads=uploads,
        schemas=schemas,
        knowledge_bases=knowledge_bases,
        parse=parse,
        chat=chat,
        sources=sources,
        raw=raw,
        kb_store=kb_store,
        indexes=indexes,
        leadership=leadership,
        vision=vision,
    )


@contextlib.asynccontextmanager
async def running(domains: Domains, sql: AsyncEngine, cfg: DocdbConfig) -> AsyncIterator[None]:
    """Start the background work (recovered tasks, pending deletions, workers, the upload sweep) and
    stop it on the way out."""
    leadership = domains.leadership
    # One process owns an embedded SQLite store: whatever it finds running died with the last one.
    await domains.parse.recover(shared=sql.dialect.name != "sqlite")
    await domains.knowledge_bases.resume_deletions()
    await domains.parse.start()
    await domains.sources.recover(shared=sql.dialect.name != "sqlite")
    try:
        async with (
            periodic(
                cfg.upload_sweep_interval,
                lambda: sweep_uploads(domains.uploads, domains.raw, cfg.upload_session_ttl),
                name="upload_sweep",
                when=leadership.is_leader,
            ),
            periodic(
                cfg.sources.schedule_check,
                domains.sources.run_due,
                name="scheduled_syncs",
                when=leadership.is_leader,
            ),
            background(
                domains.sources.maintain(
                    cfg.task_heartbeat_interval, cfg.task_stale_after, leadership.is_leader
                ),
                "sync_maintenance",
            ),
        ):
            yield
    finally:
        await domains.sources.shutdown()
        await domains.knowledge_bases.stop_deletions()
        await domains.parse.stop()
        await leadership.release()
        await domains.indexes.vectors.close()
        if domains.vision is not None:
            await domains.vision.aclose()


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
            assert stores.sql is not None
            await create_tables(stores.sql)
            domains = await wire(settings, config_service, stores, providers)
            app.state.update(stores=stores, providers=providers, **domains.state())
            async with running(domains, stores.sql, cfg):
                yield

    return create_service_app(
        service="docdb",
        route_handlers=[
            ConfigController,
            # Simple uploads are capped per request (plus room for multipart framing); chunks are not.
            Router("/", route_handlers=[DatasetController], request_max_body_size=max_body),
            UploadController,
            SourceController,
            SourceListController,
            SchemaController,
            KnowledgeBaseController,
            ParseController,
            ChatController,
        ],
        planned=PLANNED,
        lifespan=[lifespan],
        health_checks=lambda app: app.state.stores.health_checks(),
        state={"config_service": config_service},
        description="Document knowledge bases with cited answers.",
    )


def build_app() -> Litestar:
    return build_from_environment("docdb", create_app)
