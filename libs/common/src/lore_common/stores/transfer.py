"""Copy a service's data from one set of stores to another: what `lore-up move` does when an install
outgrows its embedded stores (SQLite, Qdrant local, embedded FalkorDB) for servers (PostgreSQL,
pgvector or a Qdrant server, a FalkorDB server).

The target must be empty: a move never merges two installs. The source is only read, so it stays a
complete backup until you delete it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog
from sqlalchemy import MetaData, func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from lore_common.stores.migrate import Schema, upgrade
from lore_core.settings import Settings, load_settings

if TYPE_CHECKING:
    from lore_common.stores.graph import GraphStore
    from lore_common.stores.vector import VectorStore

log = structlog.get_logger("lore.move")
ROWS_PER_BATCH = 1000


class TargetNotEmpty(RuntimeError):
    """The target already holds data: a move never merges two installs."""


async def copy_rows(source: AsyncEngine, target: AsyncEngine, schema: Schema) -> dict[str, int]:
    """Bring the target to the latest schema, then copy every table of `schema` (parents first)."""
    await upgrade(source, schema)  # the source may be from an older release: read it at the same revision
    await upgrade(target, schema)
    metadata = schema.metadata()
    tables = metadata.sorted_tables
    async with target.connect() as connection:
        for table in tables:
            if (await connection.execute(select(func.count()).select_from(table))).scalar():
                raise TargetNotEmpty(
                    f"the target's table {table.name!r} already holds rows: move into empty stores"
                )
    copied: dict[str, int] = {}
    async with source.connect() as reader, target.begin() as writer:
        for table in tables:
            count = 0
            result = await reader.stream(select(table))
            async for rows in result.mappings().partitions(ROWS_PER_BATCH):
                await writer.execute(table.insert(), [dict(row) for row in rows])
                count += len(rows)
            copied[table.name] = count
    return copied


async def copy_collection(source: VectorStore, target: VectorStore, name: str, keys: Sequence[str]) -> int:
    """Copy one vector collection with its vectors and payloads; 0 when the source has none."""
    dim = await source.dimension(name)
    if dim is None:
        return 0
    if await target.dimension(name) is not None and await target.count(name):
        raise TargetNotEmpty(f"the target's vector collection {name!r} already holds points")
    await target.create(name, dim, keys)
    copied = 0
    async for batch in source.pages(name):
        await target.upsert(name, batch.ids, batch.vectors, batch.payloads)
        copied += len(batch.ids)
    return copied


async def copy_graphs(source: GraphStore, target: GraphStore) -> list[str]:
    """Copy every graph of the source server as it is (Redis DUMP/RESTORE of each graph's key)."""
    names: list[str] = sorted(str(name) for name in await source.client.list_graphs())
    if clash := sorted(set(await target.client.list_graphs()) & set(names)):
        raise TargetNotEmpty(f"the target graph store already has the graphs {clash}")
    for name in names:
        payload: Any = await source.client.connection.dump(name)
        await target.client.connection.restore(name, 0, payload)
    return names


async def copy_other_tables(source: AsyncEngine, target: AsyncEngine, schema: Schema) -> dict[str, int]:
    """Copy the tables that are data rather than schema (gen's generated tables): every table of the
    source that the schema does not declare, as the source defines it."""
    known = set(schema.metadata().tables) | {schema.version_table}
    found = MetaData()
    async with source.connect() as connection:
        await connection.run_sync(lambda sync: found.reflect(sync))
    copied: dict[str, int] = {}
    for table in found.sorted_tables:
        if table.name in known or table.name.startswith("alembic_version"):
            continue
        async with target.begin() as writer:
            await writer.run_sync(table.create)
            async with source.connect() as reader:
                result = await reader.stream(select(table))
                count = 0
                async for rows in result.mappings().partitions(ROWS_PER_BATCH):
                    await writer.execute(table.insert(), [dict(row) for row in rows])
                    count += len(rows)
        copied[table.name] = count
    return copied


def move_command(
    service: str, run: Callable[[Settings, Settings], Coroutine[Any, Any, dict[str, Any]]]
) -> None:
    """`python -m lore_<service> move --to DIR`: copy this install's data (settings as the service
    reads them) into the stores that `DIR/lore.yaml` configures."""
    parser = argparse.ArgumentParser(prog=f"python -m lore_{service} move")
    parser.add_argument("--to", required=True, help="folder holding the target's lore.yaml")
    args = parser.parse_args(sys.argv[2:])
    source, target = load_settings(), load_settings(Path(args.to), environ={})
    try:
        report = asyncio.run(run(source, target))
    except TargetNotEmpty as exc:
        raise SystemExit(f"lore: {service}: {exc}") from exc
    print(f"lore: {service} moved: " + json.dumps(report, sort_keys=True), flush=True)


def embedded_clash(service: str, source_dir: Path, target_dir: Path, embedded: list[str]) -> None:
    """Refuse a target whose embedded stores would open the source's own files."""
    if embedded and source_dir.resolve() == target_dir.resolve():
        raise SystemExit(
            f"lore: {service}: the target keeps {', '.join(embedded)} in the same data_dir as the source "
            f"({source_dir}); give it servers or its own {service}.server.data_dir"
        )


def embedded_stores(
    database: str | None, vectors: tuple[str, str | None] | None, graph: str | bool | None
) -> list[str]:
    """The embedded stores a service's configuration uses (a URL that is None means embedded):
    `vectors` is (provider, url), `graph` is the graph URL, or False when the service has no graph."""
    found = [] if database else ["SQLite"]
    if vectors is not None and vectors[0] == "qdrant" and not vectors[1]:
        found.append("Qdrant local")
    if graph is not False and not graph:
        found.append("FalkorDB")
    return found
