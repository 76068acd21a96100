"""`python -m lore_docdb move --to DIR`: copy docdb's data into the stores `DIR/lore.yaml` names
(rows, each KB's vectors, the graphs, and the raw files into object storage when the target has it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import select

from lore_common.stores import open_stores
from lore_common.stores.transfer import (
    copy_collection,
    copy_graphs,
    copy_rows,
    embedded_clash,
    embedded_stores,
)
from lore_core.settings import DocdbConfig, Settings
from lore_docdb.database import SCHEMA
from lore_docdb.datasets.disk import RawFiles
from lore_docdb.datasets.objects import ObjectRawStore
from lore_docdb.index.vectors import PAYLOAD_KEYS, collection_name
from lore_docdb.knowledge_bases.models import KnowledgeBaseRow


def embedded(config: DocdbConfig) -> list[str]:
    graph = config.graph_store.url if config.graph_store.enabled else False
    vectors = (config.vector_store.provider, config.vector_store.url)
    return embedded_stores(config.database.url, vectors, graph)


async def move(source: Settings, target: Settings) -> dict[str, Any]:
    s, t = source.docdb, target.docdb
    source_dir, target_dir = Path(s.server.data_dir), Path(t.server.data_dir)
    embedded_clash("docdb", source_dir, target_dir, embedded(t))
    async with (
        open_stores(
            source_dir,
            name="docdb",
            database=s.database,
            vector_store=s.vector_store,
            graph_store=s.graph_store,
        ) as src,
        open_stores(
            target_dir,
            name="docdb",
            database=t.database,
            vector_store=t.vector_store,
            graph_store=t.graph_store,
            object_storage=t.object_storage,
        ) as dst,
    ):
        assert (
            src.sql is not None and dst.sql is not None and src.vector is not None and dst.vector is not None
        )
        report: dict[str, Any] = {"rows": await copy_rows(src.sql, dst.sql, SCHEMA)}
        async with src.sql.connect() as connection:
            kbs = [str(name) for (name,) in await connection.execute(select(KnowledgeBaseRow.name))]  # type: ignore[call-overload]
        report["vectors"] = {
            kb: await copy_collection(src.vector, dst.vector, collection_name(kb), PAYLOAD_KEYS) for kb in kbs
        }
        if src.graph is not None and dst.graph is not None:
            report["graphs"] = await copy_graphs(src.graph, dst.graph)
        raw = source_dir / "raw"
        if dst.objects is not None and raw.is_dir():
            store = ObjectRawStore(dst.sql, dst.objects, target_dir / "staging")
            report["raw_files"] = await store.import_local(RawFiles(raw), rename=False)
        return report
