"""`python -m lore_mem move --to DIR`: copy mem's data (vg memories and their history, the kb graph
with its vectors and jobs, the vg graph) into the stores `DIR/lore.yaml` names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lore_common.stores import open_stores
from lore_common.stores.transfer import (
    copy_collection,
    copy_graphs,
    copy_rows,
    embedded_clash,
    embedded_stores,
)
from lore_core.settings import GraphStoreConfig, MemConfig, Settings
from lore_mem.database import SCHEMA
from lore_mem.kb.models import DEFAULT_WORKSPACE
from lore_mem.kb.store import VECTOR_COLLECTIONS, collection_name, workspaces
from lore_mem.vg.store import INDEXED_KEYS


def graph_config(config: MemConfig) -> GraphStoreConfig | None:
    vg = config.memoryvg
    if not vg.graph_store.enabled:
        return None
    return GraphStoreConfig(
        url=vg.graph_store.url or config.graph_store.url,
        password=vg.graph_store.password or config.graph_store.password,
    )


def embedded(config: MemConfig) -> list[str]:
    graph = graph_config(config)
    vectors = (config.vector_store.provider, config.vector_store.url)
    return embedded_stores(config.database.url, vectors, graph.url if graph is not None else False)


async def move(source: Settings, target: Settings) -> dict[str, Any]:
    s, t = source.mem, target.mem
    source_dir, target_dir = Path(s.server.data_dir), Path(t.server.data_dir)
    embedded_clash("mem", source_dir, target_dir, embedded(t))
    vg_name, vg_target = (c.memoryvg.vector_store.config.collection_name for c in (s, t))
    if vg_target != vg_name:
        raise SystemExit(
            f"lore: mem: keep memoryvg.vector_store.config.collection_name {vg_name!r} in the target"
        )
    async with (
        open_stores(
            source_dir,
            name="mem",
            database=s.database,
            vector_store=s.vector_store,
            graph_store=graph_config(s),
        ) as src,
        open_stores(
            target_dir,
            name="mem",
            database=t.database,
            vector_store=t.vector_store,
            graph_store=graph_config(t),
        ) as dst,
    ):
        assert (
            src.sql is not None and dst.sql is not None and src.vector is not None and dst.vector is not None
        )
        report: dict[str, Any] = {"rows": await copy_rows(src.sql, dst.sql, SCHEMA)}
        collections = [(vg_name, INDEXED_KEYS), *VECTOR_COLLECTIONS]
        for workspace in await workspaces(src.sql):  # each kb workspace has collections of its own
            if workspace != DEFAULT_WORKSPACE:
                collections += [(collection_name(name, workspace), keys) for name, keys in VECTOR_COLLECTIONS]
        report["vectors"] = {
            name: await copy_collection(src.vector, dst.vector, name, keys) for name, keys in collections
        }
        if src.graph is not None and dst.graph is not None:
            report["graphs"] = await copy_graphs(src.graph, dst.graph)
        return report
