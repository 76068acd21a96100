"""The `kb` store: the graph in mem's relational store, the vectors in its vector store.

One code path for every profile: SQLite and Qdrant local mode under the data dir by default (vectors
mirrored in memory, see `Collection`), PostgreSQL with pgvector or a Qdrant server when replicas share
them. Tables: chunks, entities, which chunks mention which entity, relations (one row per entity
pair), communities and two counters (`models.py`). Vectors: the chunks, the entities and the
community summaries, each collection keyed by a UUID derived from the record's id.

Each workspace is a graph of its own: its rows carry its name (every read and write of a `KbStore`
names the one it was made for, see `in_workspace`), its vectors are collections of their own (the
default workspace keeps the collections of earlier releases), its communities and counters are its own.

An insert writes its vectors first, then its rows in one transaction (serialised across replicas by
an advisory lock, so merged descriptions and weights never lose an update). Reads start from the
rows: a vector whose rows were never committed (a failed insert) is never answered.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import delete, func, or_, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlmodel import col, select

from lore_common.stores.collection import Collection
from lore_common.stores.sql import increment, transaction_lock
from lore_common.stores.vector import VectorStore
from lore_mem.kb.models import (
    DEFAULT_WORKSPACE,
    MAX_KEY,
    ChunkRow,
    Community,
    CommunityRow,
    CounterRow,
    EntityRecord,
    EntityRow,
    MentionRow,
    RelationRecord,
    RelationRow,
    Segment,
)

MAX_DESCRIPTIONS = 8
MIN_NAME_CHARS = 3
MAX_NAME_WORDS = 6
COMMIT_LOCK = "lore-mem-kb-commit"
# The kb's vector collections and their indexed payload keys.
VECTOR_COLLECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("kb_chunks", ("job_id",)),
    ("kb_entities", ("job_id",)),
    ("kb_communities", ()),
)
TABLES = (ChunkRow, EntityRow, MentionRow, RelationRow, CommunityRow, CounterRow)
_POINTS = uuid.UUID("6f1d1c4e-6b0a-4f57-9a52-4b4c6f7265b1")


def name_form(text: str) -> str:
    """The form names are matched in: lower-case words joined by one space, punctuation dropped."""
    return " ".join(re.findall(r"\w+", text.lower()))


def relation_key(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a <= b else (b, a)


def point_id(kind: str, ref: str) -> str:
    return str(uuid.uuid5(_POINTS, f"{kind}:{ref}"))


def collection_name(base: str, workspace: str) -> str:
    """A workspace's vector collection: the default workspace keeps the earlier releases' names."""
    if workspace == DEFAULT_WORKSPACE:
        return base
    return f"{base}_w{hashlib.sha256(workspace.encode()).hexdigest()[:24]}"


def _merge(target: list[str], extra: Iterable[str], cap: int | None = None) -> bool:
    changed = False
    for item in extra:
        if item not in target and (cap is None or len(target) < cap):
            target.append(item)
            changed = True
    return changed


def _flat(text: str) -> str:
    """Text with its whitespace runs made one space (a description quotes a chunk across its lines)."""
    return " ".join(text.split())


@dataclass
class Forgotten:
    """What forgetting an insert removed: its chunk count, the entities that went, the communities
    that are recomputed."""

    chunks: int = 0
    entities: list[str] = field(default_factory=list)
    communities: list[str] = field(default_factory=list)


def _matrix(data: bytes, count: int, dim: int) -> np.ndarray[Any, Any]:
    matrix = np.frombuffer(data, dtype=np.float32)
    if matrix.size != count * dim:
        raise ValueError(
            f"expected {count} vectors of {dim} values, found {matrix.size} values: the embedding model "
            "changed (mem.memorykb.embedding)?"
        )
    return matrix.reshape(count, dim)


async def workspaces(engine: AsyncEngine) -> list[str]:
    """Every workspace an insert was committed to (each has its `changes` counter)."""
    async with engine.connect() as connection:
        rows = await connection.execute(select(CounterRow.workspace).distinct())
        return sorted(str(w) for w in rows.scalars())


class KbStore:
    """The graph of one workspace (the default one unless made by `in_workspace`)."""

    def __init__(
        self, engine: AsyncEngine, vectors: VectorStore, dim: int, workspace: str = DEFAULT_WORKSPACE
    ) -> None:
        self.engine = engine
        self.vectors = vectors
        self.dim = dim
        self.workspace = workspace
        chunks, entities, communities = (
            Collection(vectors, collection_name(name, workspace), keys) for name, keys in VECTOR_COLLECTIONS
        )
        self.chunk_vectors, self.entity_vectors, self.community_vectors = chunks, entities, communities
        self._workspaces: dict[str, KbStore] = {workspace: self}
        self._ensured = False
        self._making = asyncio.Lock()  # one insert makes a new workspace's collections, not two at once

    async def in_workspace(self, workspace: str) -> KbStore:
        """The store of `workspace`, its vector collections made on first use."""
        store = self._workspaces.get(workspace)
        if store is None:
            store = KbStore(self.engine, self.vectors, self.dim, workspace)
            store._workspaces = self._workspaces
            self._workspaces[workspace] = store
        if not store._ensured:
            async with store._making:
                if not store._ensured:
                    await store.ensure()
        return store

    async def existing(self, workspace: str) -> KbStore | None:
        """The store of `workspace` to read, or None when nothing was ever inserted into it (a query
        naming any workspace makes no collections)."""
        store = self._workspaces.get(workspace)
        if store is not None and store._ensured:
            return store
        probe = store or KbStore(self.engine, self.vectors, self.dim, workspace)
        if await self.vectors.dimension(probe.chunk_vectors.name) is None:
            return None
        return await self.in_workspace(workspace)

    async def ensure(self) -> None:
        """Check the vector collections (the tables come from mem's migrations)."""
        for collection in (self.chunk_vectors, self.entity_vectors, self.community_vectors):
            found = await collection.store.dimension(collection.name)
            if found is not None and found != self.dim:
                raise ValueError(
                    f"the kb collection {collection.name!r} holds {found}-d vectors but the embedder "
                    f"makes {self.dim}-d ones: use the same mem.memorykb.embedding model, or a new store"
                )
            await collection.ensure(self.dim)
        self._ensured = True

    # ------------------------------------------------------------------ writing

    async def commit(self, segment: Segment) -> None:
        """Store what one insert adds: vectors, then every row in one transaction."""
        chunks = segment.chunks
        await self.chunk_vectors.upsert(
            [point_id("chunk", c.id) for c in chunks],
            _matrix(segment.chunk_vectors, len(chunks), self.dim),
            [{"ref": c.id, "job_id": segment.job_id} for c in chunks],
        )
        await self.entity_vectors.upsert(
            [point_id("entity", key) for key in segment.vector_keys],
            _matrix(segment.entity_vectors, len(segment.vector_keys), self.dim),
            [{"ref": key, "job_id": segment.job_id} for key in segment.vector_keys],
        )
        try:
            async with self.engine.begin() as connection:
                await transaction_lock(connection, COMMIT_LOCK)
                await self._write_rows(connection, segment)
        except BaseException:
            await self.discard(segment.job_id, segment.vector_keys)
            raise

    async def discard(self, job_id: str, entity_keys: Sequence[str]) -> None:
        """Remove the vectors of an insert whose rows were not committed."""
        await self.chunk_vectors.delete_where({"job_id": job_id})
        known = await self.known_entities(entity_keys)
        await self.entity_vectors.delete([point_id("entity", k) for k in entity_keys if k not in known])

    async def _write_rows(self, connection: AsyncConnection, segment: Segment) -> None:
        if segment.chunks:
            await connection.execute(
                ChunkRow.__table__.insert(),  # type: ignore[attr-defined]
                [
                    {"id": c.id, "job_id": c.job_id, "text": c.text, "workspace": self.workspace}
                    for c in segment.chunks
                ],
            )
        keys = [e.key for e in segment.entities]
        rows = await connection.execute(
            select(EntityRow.key, EntityRow.descriptions).where(
                EntityRow.workspace == self.workspace, col(EntityRow.key).in_(keys)
            )
        )
        known = {str(key): list(descriptions) for key, descriptions in rows.all()} if keys else {}
        fresh: list[dict[str, Any]] = []
        mentions: list[dict[str, str]] = []
        for entity in segment.entities:
            mentions.extend(
                {"workspace": self.workspace, "entity_key": entity.key, "chunk_id": c}
                for c in dict.fromkeys(entity.chunk_ids)
            )
            stored = known.get(entity.key)
            if stored is None:
                fresh.append(
                    {
                        "key": entity.key,
                        "name": entity.name[:MAX_KEY],
                        "type": entity.type[:100],
                        "name_form": name_form(entity.name)[:MAX_KEY],
                        "descriptions": list(entity.descriptions[:MAX_DESCRIPTIONS]),
                        "job_id": segment.job_id,
                        "workspace": self.workspace,
                    }
                )
            else:
                if _merge(stored, entity.descriptions, MAX_DESCRIPTIONS):
                    await connection.execute(
                        update(EntityRow)
                        .where(col(EntityRow.workspace) == self.workspace, col(EntityRow.key) == entity.key)
                        .values(descriptions=stored)
                    )
        if fresh:
            await connection.execute(EntityRow.__table__.insert(), fresh)  # type: ignore[attr-defined]
        if mentions:
            await connection.execute(MentionRow.__table__.insert(), mentions)  # type: ignore[attr-defined]
        pairs = [relation_key(r.source, r.target) for r in segment.relations]
        existing: dict[tuple[str, str], list[str]] = {}
        for source in {a for a, _ in pairs}:
            targets = [b for a, b in pairs if a == source]
            found = await connection.execute(
                select(RelationRow.target, RelationRow.descriptions).where(
                    RelationRow.workspace == self.workspace,
                    RelationRow.source == source,
                    col(RelationRow.target).in_(targets),
                )
            )
            existing.update({(source, str(target)): list(d) for target, d in found.all()})
        new_relations = []
        for relation, pair in zip(segment.relations, pairs, strict=True):
            descriptions = existing.get(pair)
            if descriptions is None:
                new_relations.append(
                    {
                        "source": pair[0],
                        "target": pair[1],
                        "descriptions": list(relation.descriptions[:MAX_DESCRIPTIONS]),
                        "weight": relation.weight,
                        "workspace": self.workspace,
                    }
                )
            else:
                _merge(descriptions, relation.descriptions, MAX_DESCRIPTIONS)
                await connection.execute(
                    update(RelationRow)
                    .where(
                        col(RelationRow.workspace) == self.workspace,
                        col(RelationRow.source) == pair[0],
                        col(RelationRow.target) == pair[1],
                    )
                    .values(weight=RelationRow.weight + relation.weight, descriptions=descriptions)
                )
        if new_relations:
            await connection.execute(RelationRow.__table__.insert(), new_relations)  # type: ignore[attr-defined]
        await self._bump(connection, "changes")

    async def forget(self, job_id: str, also: Callable[[AsyncConnection], Awaitable[None]]) -> Forgotten:
        """Remove what the insert `job_id` added, in one transaction (`also` writes what goes with it,
        the job's own record): its chunks and mentions; the entities no other chunk mentions (rows and
        vectors); the relations whose ends went or that no other chunk mentions both ends of; the
        descriptions quoted from its text alone; the communities holding any entity it touched (the
        next community run recomputes them, as after an insert). Its vectors go after the commit: a
        vector without rows is never answered, so a failure there only leaves dead points."""
        async with self.engine.begin() as connection:
            await transaction_lock(connection, COMMIT_LOCK)
            forgotten = await self._forget_rows(connection, job_id)
            await also(connection)
        await self.chunk_vectors.delete_where({"job_id": job_id})
        await self.entity_vectors.delete([point_id("entity", k) for k in forgotten.entities])
        await self.community_vectors.delete([point_id("community", c) for c in forgotten.communities])
        return forgotten

    async def _forget_rows(self, connection: AsyncConnection, job_id: str) -> Forgotten:
        ws = self.workspace
        chunks = dict(
            (
                await connection.execute(
                    select(ChunkRow.id, ChunkRow.text).where(
                        ChunkRow.workspace == ws, ChunkRow.job_id == job_id
                    )
                )
            ).all()
        )
        if not chunks:
            return Forgotten()
        ids = list(chunks)
        touched = sorted(
            {
                str(k)
                for k in (
                    await connection.execute(
                        select(MentionRow.entity_key).where(
                            MentionRow.workspace == ws, col(MentionRow.chunk_id).in_(ids)
                        )
                    )
                ).scalars()
            }
        )
        await connection.execute(
            delete(MentionRow).where(col(MentionRow.workspace) == ws, col(MentionRow.chunk_id).in_(ids))
        )
        await connection.execute(
            delete(ChunkRow).where(col(ChunkRow.workspace) == ws, col(ChunkRow.id).in_(ids))
        )
        # What other chunks still say of each touched entity: which of them mention it, and their text.
        left: dict[str, set[str]] = defaultdict(set)
        for key, chunk_id in (
            await connection.execute(
                select(MentionRow.entity_key, MentionRow.chunk_id).where(
                    MentionRow.workspace == ws, col(MentionRow.entity_key).in_(touched)
                )
            )
        ).all():
            left[str(key)].add(str(chunk_id))
        gone = [k for k in touched if not left.get(k)]
        kept_texts = await self._texts(connection, {c for cs in left.values() for c in cs})
        removed_text = "\n".join(_flat(t) for t in chunks.values())

        def only_here(description: str, others: set[str]) -> bool:
            said = _flat(description)
            return said in removed_text and not any(said in kept_texts.get(c, "") for c in others)

        entities = await connection.execute(
            select(EntityRow.key, EntityRow.descriptions).where(
                EntityRow.workspace == ws, col(EntityRow.key).in_(touched)
            )
        )
        for key, descriptions in entities.all():
            if key in gone:
                continue
            kept = [d for d in descriptions if not only_here(d, left[str(key)])]
            if kept != list(descriptions):
                await connection.execute(
                    update(EntityRow)
                    .where(col(EntityRow.workspace) == ws, col(EntityRow.key) == key)
                    .values(descriptions=kept)
                )
        if gone:
            await connection.execute(
                delete(EntityRow).where(col(EntityRow.workspace) == ws, col(EntityRow.key).in_(gone))
            )
        relations = await connection.execute(
            select(RelationRow.source, RelationRow.target, RelationRow.descriptions).where(
                RelationRow.workspace == ws,
                or_(col(RelationRow.source).in_(touched), col(RelationRow.target).in_(touched)),
            )
        )
        touched_set, gone_set = set(touched), set(gone)
        for source, target, descriptions in relations.all():
            where = (
                col(RelationRow.workspace) == ws,
                col(RelationRow.source) == source,
                col(RelationRow.target) == target,
            )
            if source in gone_set or target in gone_set:
                await connection.execute(delete(RelationRow).where(*where))
                continue
            if source not in touched_set or target not in touched_set:
                continue  # an end its chunks never named: another insert's relation
            both = left[source] & left[target]  # chunks that still name both ends
            if not both:
                await connection.execute(delete(RelationRow).where(*where))
                continue
            kept = [d for d in descriptions if not only_here(d, both)]
            if kept != list(descriptions):
                await connection.execute(update(RelationRow).where(*where).values(descriptions=kept))
        communities = [
            str(i)
            for i, members in (
                await connection.execute(
                    select(CommunityRow.id, CommunityRow.members).where(CommunityRow.workspace == ws)
                )
            ).all()
            if set(members) & set(touched)
        ]
        if communities:
            await connection.execute(
                delete(CommunityRow).where(
                    col(CommunityRow.workspace) == ws, col(CommunityRow.id).in_(communities)
                )
            )
        await self._bump(connection, "changes")
        await self._bump(connection, "forgets")  # a community run that read the graph before drops its save
        return Forgotten(chunks=len(ids), entities=gone, communities=communities)

    async def _texts(self, connection: AsyncConnection, chunk_ids: set[str]) -> dict[str, str]:
        if not chunk_ids:
            return {}
        rows = await connection.execute(
            select(ChunkRow.id, ChunkRow.text).where(col(ChunkRow.id).in_(sorted(chunk_ids)))
        )
        return {str(i): _flat(str(t)) for i, t in rows.all()}

    async def _bump(self, connection: AsyncConnection, name: str, to: int | None = None) -> None:
        """Add one to the workspace's counter `name`, or set it to `to`."""
        key = {"workspace": self.workspace, "name": name}
        await increment(connection, CounterRow.__table__, key, "value", to)  # type: ignore[attr-defined]

    async def save_communities(
        self,
        communities: list[Community],
        vectors: dict[str, np.ndarray[Any, Any]],
        at: int,
        forgets: int | None = None,
    ) -> bool:
        """Replace the communities. `vectors` holds the summary vectors of the new ones (a community
        that was already stored keeps its own); `at` is the change count they were computed from.
        `forgets` is the count of forgotten inserts when the graph was read: if one was forgotten
        since, nothing is saved (the summaries may quote it) and False says so; the next run, which
        the moved change count asks for, computes them again."""
        previous = {c.id for c in await self.communities()}
        ids = list(vectors)
        await self.community_vectors.upsert(
            [point_id("community", i) for i in ids],
            np.asarray([vectors[i] for i in ids], dtype=np.float32).reshape(len(ids), self.dim),
            [{"ref": i} for i in ids],
        )
        async with self.engine.begin() as connection:
            await transaction_lock(connection, COMMIT_LOCK)
            if forgets is not None and await self._count(connection, "forgets") != forgets:
                return False
            await connection.execute(
                delete(CommunityRow).where(col(CommunityRow.workspace) == self.workspace)
            )
            if communities:
                await connection.execute(
                    CommunityRow.__table__.insert(),  # type: ignore[attr-defined]
                    [
                        {
                            "id": c.id,
                            "position": i,
                            "members": c.members,
                            "title": c.title,
                            "summary": c.summary,
                            "workspace": self.workspace,
                        }
                        for i, c in enumerate(communities)
                    ],
                )
            await self._bump(connection, "communities_at", at)
        gone = previous - {c.id for c in communities}
        await self.community_vectors.delete([point_id("community", c) for c in gone])
        return True

    # ------------------------------------------------------------------ reads

    async def counter(self, name: str) -> int:
        async with self.engine.connect() as connection:
            return await self._count(connection, name)

    async def _count(self, connection: AsyncConnection, name: str) -> int:
        value = (
            await connection.execute(
                select(CounterRow.value).where(
                    CounterRow.workspace == self.workspace, CounterRow.name == name
                )
            )
        ).scalar()
        return int(value or 0)

    async def changed_workspaces(self) -> list[str]:
        """The workspaces whose inserts committed since their communities were last computed."""
        async with self.engine.connect() as connection:
            rows = await connection.execute(select(CounterRow.workspace, CounterRow.name, CounterRow.value))
            values: dict[str, dict[str, int]] = defaultdict(dict)
            for workspace, name, value in rows.all():
                values[str(workspace)][str(name)] = int(value)
        return sorted(
            w for w, named in values.items() if named.get("changes", 0) != named.get("communities_at", 0)
        )

    async def counts(self) -> dict[str, int]:
        counts = {}
        async with self.engine.connect() as connection:
            for name, table in (
                ("chunks", ChunkRow),
                ("entities", EntityRow),
                ("relations", RelationRow),
                ("communities", CommunityRow),
            ):
                counted = select(func.count()).select_from(table).where(table.workspace == self.workspace)
                counts[name] = int((await connection.execute(counted)).scalar() or 0)
        return counts

    async def known_entities(self, keys: Sequence[str]) -> set[str]:
        if not keys:
            return set()
        async with self.engine.connect() as connection:
            rows = await connection.execute(
                select(EntityRow.key).where(
                    EntityRow.workspace == self.workspace, col(EntityRow.key).in_(list(keys))
                )
            )
            return {str(key) for key in rows.scalars()}

    async def committed(self, job_id: str) -> bool:
        """Whether the insert `job_id` wrote its rows (they are written in one transaction)."""
        async with self.engine.connect() as connection:
            row = await connection.execute(select(ChunkRow.id).where(ChunkRow.job_id == job_id).limit(1))
            return row.first() is not None

    async def chunk_texts(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        if not chunk_ids:
            return {}
        async with self.engine.connect() as connection:
            rows = await connection.execute(
                select(ChunkRow.id, ChunkRow.text).where(
                    ChunkRow.workspace == self.workspace, col(ChunkRow.id).in_(list(chunk_ids))
                )
            )
            return {str(i): str(t) for i, t in rows.all()}

    async def entities(self, keys: Sequence[str]) -> dict[str, EntityRecord]:
        if not keys:
            return {}
        async with self.engine.connect() as connection:
            rows = await connection.execute(
                select(EntityRow.key, EntityRow.name, EntityRow.type, EntityRow.descriptions).where(
                    EntityRow.workspace == self.workspace, col(EntityRow.key).in_(list(keys))
                )
            )
            return {
                str(k): EntityRecord(key=str(k), name=str(n), type=str(t), descriptions=list(d))
                for k, n, t, d in rows.all()
            }

    async def named_in(self, text: str) -> list[str]:
        """Keys of the entities whose names appear in the text as whole words, longest first."""
        words = name_form(text).split()
        spans: list[str] = []
        for size in range(min(MAX_NAME_WORDS, len(words)), 0, -1):
            for start in range(len(words) - size + 1):
                span = " ".join(words[start : start + size])
                if len(span) >= MIN_NAME_CHARS and span not in spans:
                    spans.append(span)
        if not spans:
            return []
        async with self.engine.connect() as connection:
            rows = await connection.execute(
                select(EntityRow.name_form, EntityRow.key)
                .where(EntityRow.workspace == self.workspace, col(EntityRow.name_form).in_(spans))
                .order_by(col(EntityRow.key))
            )
            first: dict[str, str] = {}
            for form, key in rows.all():
                first.setdefault(str(form), str(key))
        return list(dict.fromkeys(first[span] for span in spans if span in first))

    async def relations_around(self, keys: Sequence[str]) -> list[RelationRecord]:
        if not keys:
            return []
        async with self.engine.connect() as connection:
            rows = await connection.execute(
                select(
                    RelationRow.source, RelationRow.target, RelationRow.descriptions, RelationRow.weight
                ).where(
                    RelationRow.workspace == self.workspace,
                    or_(col(RelationRow.source).in_(list(keys)), col(RelationRow.target).in_(list(keys))),
                )
            )
            return [
                RelationRecord(source=str(a), target=str(b), descriptions=list(d), weight=float(w))
                for a, b, d, w in rows.all()
            ]

    async def entity_chunks(self, weights: dict[str, float]) -> dict[str, float]:
        """Chunk id → the summed weight of the entities it mentions, each damped by how many chunks
        mention it (an entity in every chunk says little about any one of them)."""
        if not weights:
            return {}
        async with self.engine.connect() as connection:
            rows = (
                await connection.execute(
                    select(MentionRow.entity_key, MentionRow.chunk_id).where(
                        MentionRow.workspace == self.workspace, col(MentionRow.entity_key).in_(list(weights))
                    )
                )
            ).all()
        by_entity: dict[str, list[str]] = defaultdict(list)
        for key, chunk_id in rows:
            by_entity[str(key)].append(str(chunk_id))
        scores: dict[str, float] = defaultdict(float)
        for key, chunk_ids in by_entity.items():
            share = weights[key] / (1.0 + math.log1p(len(chunk_ids)))
            for chunk_id in chunk_ids:
                scores[chunk_id] += share
        return scores

    async def edges(self) -> list[tuple[str, str, float]]:
        async with self.engine.connect() as connection:
            rows = await connection.execute(
                select(RelationRow.source, RelationRow.target, RelationRow.weight).where(
                    RelationRow.workspace == self.workspace
                )
            )
            return [(str(a), str(b), float(w)) for a, b, w in rows.all()]

    async def communities(self, ids: Sequence[str] | None = None) -> list[Community]:
        query = (
            select(CommunityRow.id, CommunityRow.members, CommunityRow.title, CommunityRow.summary)
            .where(CommunityRow.workspace == self.workspace)
            .order_by(col(CommunityRow.position))
        )
        if ids is not None:
            query = query.where(col(CommunityRow.id).in_(list(ids)))
        async with self.engine.connect() as connection:
            rows = await connection.execute(query)
            return [
                Community(id=str(i), members=list(m), title=str(t), summary=str(s))
                for i, m, t, s in rows.all()
            ]
