"""`vg` fact memory: facts extracted from conversations, then ADD / UPDATE / DELETE against what the
scope already remembers, every change recorded in history.

The model sees existing memories under short integer ids and its answer is mapped back, so it can
never name (or invent) a real id. Adds to one scope are serialised, so concurrent adds neither lose an
update nor store a fact twice; identical facts are also caught by their hash.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import msgspec
import numpy as np
import structlog

from lore_common import bm25
from lore_common.providers.chat import ChatMessage, ChatModel, ChatRequest, complete_structured
from lore_common.providers.embedders import Embedder
from lore_common.stores.sql import advisory_lock
from lore_core.clock import utc_iso, utcnow
from lore_core.errors import BadRequest, NotFound, Unprocessable
from lore_mem.vg import when
from lore_mem.vg.graph import VgGraph
from lore_mem.vg.models import (
    Added,
    AddRequest,
    Deleted,
    Extraction,
    Found,
    GraphRelation,
    HistoryEntry,
    Listed,
    MemoryChange,
    MemoryItem,
    Relation,
    RelationChanges,
    Scope,
    ScopeDeleted,
    Updated,
)
from lore_mem.vg.store import VgHistoryStore, VgStore

log = structlog.get_logger("lore.mem.vg")
NEIGHBOURS = 5
# The most memories of one scope that a search ranks by words as well as by meaning.
POOL = 2000
# Reciprocal rank fusion's k for vg search (LoCoMo: 20 gave 0.542, 60 gave 0.523 at weight 2).
FUSION_K = 20

FACTS_SYSTEM = (
    "You extract facts worth remembering about the user from a conversation: preferences, personal "
    "details, plans, relationships. One short self-contained sentence per fact, in the user's language. "
    'Answer with JSON: {"facts": ["...", ...]}; {"facts": []} when there is nothing to remember.'
)
UPDATE_SYSTEM = (
    "You maintain a memory. For each new fact decide against the existing memories: ADD a new memory, "
    "UPDATE an existing one (keep its id, give the new text), DELETE an existing one the fact contradicts, "
    "or NONE when it is already known. Use only the ids shown. Answer with JSON: "
    '{"memory": [{"id": "...", "text": "...", "event": "ADD|UPDATE|DELETE|NONE", "old_memory": "..."}]}.'
)


ENTITIES_SYSTEM = (
    "Extract the entities of the text (people, places, things, preferences) and the relations between them. "
    'Answer with JSON: {"entities": [{"name": "..."}], "relations": [{"source": "...", "target": "...", '
    '"description": "a short verb phrase"}]}.'
)


class Facts(msgspec.Struct):
    facts: list[str] = []


class Decision(msgspec.Struct):
    event: str
    text: str = ""
    id: str | None = None
    old_memory: str | None = None


class Decisions(msgspec.Struct):
    memory: list[Decision] = []


class MemoryNotFound(NotFound):
    def __init__(self, memory_id: str) -> None:
        super().__init__(f"memory {memory_id!r} does not exist")


def digest(text: str) -> str:
    return hashlib.md5(text.strip().encode(), usedforsecurity=False).hexdigest()


def require_scope(scope: Scope) -> dict[str, str]:
    filters = scope.filters()
    if not filters:
        raise Unprocessable("at least one of user_id, agent_id, run_id is required")
    return filters


def fuse(
    query: str,
    hits: list[tuple[dict[str, Any], float]],
    limit: int,
    words_weight: float = 2.0,
    now: datetime | None = None,
) -> list[tuple[dict[str, Any], float]]:
    """The best `limit` of `hits` (best first by meaning) by reciprocal rank fusion of their order by
    meaning with their order by BM25 over their texts (weighted `words_weight` to meaning's 1), so a
    memory holding the question's exact words (a name, a date, a place) rises even where the embedder
    misses it. Where the question names a time ("last week", "in May 2023"), the memories said then
    come first, each group in that fused order. Scores stay cosines."""
    span = when.find_span(query, now or utcnow())
    ranked = _by_meaning_and_words(span.without_phrase(query) if span else query, hits, words_weight)
    if span is not None:  # a stable sort: what was said then first, each group in its fused order
        ranked = sorted(ranked, key=lambda hit: not _said_within(hit[0], span))
    return ranked[:limit]


def _by_meaning_and_words(
    query: str, hits: list[tuple[dict[str, Any], float]], words_weight: float
) -> list[tuple[dict[str, Any], float]]:
    if len(hits) <= 1 or words_weight <= 0 or not query.strip():
        return hits
    words = bm25.scores(query, [str(record.get("memory", "")) for record, _ in hits])
    by_words = [hits[i][0]["id"] for i in np.argsort(-words, kind="stable") if words[i] > 0]
    if not by_words:
        return hits
    found = {record["id"]: (record, score) for record, score in hits}
    fused = bm25.rrf([list(found), by_words], k=FUSION_K, weights=[1.0, words_weight])
    return [found[item] for item, _ in fused]


def _said_within(record: dict[str, Any], span: when.Span) -> bool:
    """Whether the memory was said (added, or last restated) within the span."""
    return any(
        (moment := when.moment(record.get(key))) is not None and span.holds(moment)
        for key in ("created_at", "updated_at")
    )


def public(record: dict[str, Any], score: float | None = None) -> MemoryItem:
    """A stored memory (its vector payload) as the API answers it."""
    item = MemoryItem(
        id=record["id"],
        memory=record.get("memory", ""),
        hash=record.get("hash"),
        created_at=record.get("created_at"),
        updated_at=record.get("updated_at"),
        user_id=record.get("user_id"),
        agent_id=record.get("agent_id"),
        run_id=record.get("run_id"),
        metadata=record.get("metadata") or {},
    )
    if score is not None:
        item.score = round(score, 6)
    return item


class VgService:
    def __init__(
        self,
        *,
        store: VgStore,
        history: VgHistoryStore,
        embedder: Embedder,
        llm: ChatModel,
        graph: VgGraph | None = None,
        words_weight: float = 2.0,
    ) -> None:
        self.store = store
        self.words_weight = words_weight
        self.history = history
        self.embedder = embedder
        self.llm = llm
        self.graph = graph
        self._locks: defaultdict[tuple[tuple[str, str], ...], asyncio.Lock] = defaultdict(asyncio.Lock)

    @contextlib.asynccontextmanager
    async def _scope_lock(self, scope: dict[str, str]) -> AsyncIterator[None]:
        """One add or delete-all per scope at a time: in this process (an asyncio lock, so a replica
        holds at most one database connection per scope), then across replicas sharing PostgreSQL
        (an advisory lock), so that no two adds both decide that a fact is new."""
        key = tuple(sorted(scope.items()))
        async with self._locks[key], advisory_lock(self.history.engine, f"lore-vg-scope:{key}"):
            yield

    async def _vector(self, text: str, cache: dict[str, list[float]] | None = None) -> list[float]:
        """The text's embedding; one add embeds each text once (the fact is searched, then stored)."""
        if cache is not None and text in cache:
            return cache[text]
        vector = [float(x) for x in await self.embedder.embed_query(text)]
        if cache is not None:
            cache[text] = vector
        return vector

    # ------------------------------------------------------------ add

    async def add(self, request: AddRequest) -> Added:
        scope = require_scope(request)
        if not request.messages:
            raise BadRequest("messages is empty: send at least one message")
        stamp = None
        if request.timestamp is not None:
            try:
                stamp = when.said_at(request.timestamp, utcnow()).isoformat(timespec="seconds")
            except ValueError as error:
                raise BadRequest(str(error)) from None
        async with self._scope_lock(scope):
            if not request.infer:
                facts = [m.content.strip() for m in request.messages if m.content.strip()]
                results = [
                    r for f in facts if (r := await self._add_new(f, scope, request.metadata, stamp=stamp))
                ]
            else:
                results = await self._infer(request, scope, stamp)
            relations = await self._graph_changes(results, scope)
        return Added(results=results, relations=relations)

    async def _graph_changes(self, results: list[MemoryChange], scope: dict[str, str]) -> RelationChanges:
        """With the graph store on: relations of new text are merged, those of replaced text removed."""
        added: list[GraphRelation] = []
        deleted: list[GraphRelation] = []
        if self.graph is None:
            return RelationChanges(added, deleted)
        for result in results:
            if result.event in ("UPDATE", "DELETE"):
                deleted.extend(await self.graph.forget([result.id]))
            if result.event in ("ADD", "UPDATE"):
                relations = await self._relations(result.memory)
                added.extend(await self.graph.add(relations, scope, result.id))
        return RelationChanges(added, deleted)

    async def _relations(self, text: str) -> list[Relation]:
        extraction = await complete_structured(
            self.llm,
            ChatRequest(
                messages=[ChatMessage("system", ENTITIES_SYSTEM), ChatMessage("user", text)],
                task="extract_entities",
                inputs={"text": text},
            ),
            Extraction,
        )
        return extraction.relations

    async def _infer(
        self, request: AddRequest, scope: dict[str, str], stamp: str | None
    ) -> list[MemoryChange]:
        conversation = "\n".join(f"{m.role}: {m.content}" for m in request.messages)
        facts = (
            await complete_structured(
                self.llm,
                ChatRequest(
                    messages=[ChatMessage("system", FACTS_SYSTEM), ChatMessage("user", conversation)],
                    task="extract_facts",
                    inputs={"messages": [msgspec.to_builtins(m) for m in request.messages]},
                ),
                Facts,
            )
        ).facts
        facts = [f.strip() for f in facts if f and f.strip()]
        if not facts:
            return []
        # Existing memories near any fact, shown to the model as 0, 1, 2…
        existing: dict[str, dict[str, Any]] = {}
        vectors: dict[str, list[float]] = {}
        for fact in facts:
            for record, _ in await self.store.search(
                await self._vector(fact, vectors), NEIGHBOURS, where=scope
            ):
                existing.setdefault(record["id"], record)
        aliases = {str(i): record for i, record in enumerate(existing.values())}
        shown = [{"id": alias, "text": record.get("memory", "")} for alias, record in aliases.items()]
        decisions = (
            await complete_structured(
                self.llm,
                ChatRequest(
                    messages=[
                        ChatMessage("system", UPDATE_SYSTEM),
                        ChatMessage(
                            "user",
                            f"Existing memories: {msgspec.json.encode(shown).decode()}\n"
                            f"New facts: {msgspec.json.encode(facts).decode()}",
                        ),
                    ],
                    task="update_memory",
                    inputs={"facts": facts, "existing": shown},
                ),
                Decisions,
            )
        ).memory
        results: list[MemoryChange] = []
        for decision in decisions:
            event = decision.event.upper()
            target = aliases.get(str(decision.id)) if decision.id is not None else None
            text = decision.text.strip()
            if event == "ADD" and text:
                if result := await self._add_new(text, scope, request.metadata, vectors, stamp):
                    results.append(result)
            elif event == "UPDATE" and target is not None and text and text != target.get("memory"):
                results.append(await self._update(target, text, stamp))
            elif event == "DELETE" and target is not None:
                await self._delete(target)
                results.append(MemoryChange(target["id"], target.get("memory", ""), "DELETE"))
            elif event in ("UPDATE", "DELETE") and target is None:
                log.warning("model_named_unknown_memory", decision=event, alias=decision.id)
        return results

    async def _add_new(
        self,
        text: str,
        scope: dict[str, str],
        metadata: dict[str, Any] | None,
        vectors: dict[str, list[float]] | None = None,
        stamp: str | None = None,
    ) -> MemoryChange | None:
        if await self.store.find_hash(scope, digest(text)):
            return None  # already remembered word for word
        memory_id = str(uuid.uuid4())
        payload = {
            "memory": text,
            "hash": digest(text),
            "created_at": stamp or utc_iso(with_zone=True),
            "updated_at": None,
            "metadata": metadata or {},
            **{k: scope.get(k) for k in ("user_id", "agent_id", "run_id")},
        }
        vector = await self._vector(text, vectors)
        # History first: a crash between the two writes leaves a history row no memory points to
        # (never shown), instead of a memory without its ADD.
        await self.history.record(memory_id, "ADD", None, text)
        await self.store.put(memory_id, vector, payload)
        return MemoryChange(memory_id, text, "ADD")

    async def _update(self, record: dict[str, Any], text: str, stamp: str | None = None) -> MemoryChange:
        old = str(record.get("memory", ""))
        payload = {k: v for k, v in record.items() if k != "id"}
        payload.update(memory=text, hash=digest(text), updated_at=stamp or utc_iso(with_zone=True))
        await self.store.put(record["id"], await self._vector(text), payload)
        await self.history.record(record["id"], "UPDATE", old, text)
        return MemoryChange(record["id"], text, "UPDATE", previous_memory=old)

    async def _delete(self, record: dict[str, Any]) -> None:
        await self.store.delete([record["id"]])
        await self.history.record(record["id"], "DELETE", record.get("memory"), None, is_deleted=True)

    # ------------------------------------------------------------ the rest of the API

    async def search(self, query: str, scope: Scope, limit: int, threshold: float | None) -> Found:
        filters = require_scope(scope)
        if not query.strip():
            raise BadRequest("query is empty")
        if threshold is not None and not 0 <= threshold <= 1:
            raise BadRequest("threshold must be between 0 and 1")
        # Candidates by meaning: up to POOL from the embedded store (on this machine), else ten times
        # the limit; then ranked again with the query's words (BM25) and fused.
        pool = POOL if self.store.embedded else max(10 * limit, 100)
        hits = await self.store.search(await self._vector(query), pool, threshold=threshold, where=filters)
        relations = await self.graph.search(query, filters, max(1, limit)) if self.graph is not None else []
        results = [
            public(record, score) for record, score in fuse(query, hits, max(1, limit), self.words_weight)
        ]
        return Found(results=results, relations=relations)

    async def list_scope(self, scope: Scope, limit: int) -> Listed:
        filters = require_scope(scope)
        return Listed(results=[public(r) for r in await self.store.list_scope(filters, max(1, limit))])

    async def get(self, memory_id: str) -> MemoryItem:
        record = await self.store.get(memory_id)
        if record is None:
            raise MemoryNotFound(memory_id)
        return public(record)

    async def update(self, memory_id: str, data: str) -> Updated:
        if not data.strip():
            raise BadRequest("data is empty: send the new text of the memory")
        record = await self.store.get(memory_id)
        if record is None:
            raise MemoryNotFound(memory_id)
        result = await self._update(record, data.strip())
        if self.graph is not None:
            scope = {k: record[k] for k in ("user_id", "agent_id", "run_id") if record.get(k)}
            await self._graph_changes([result], scope)
        return Updated(
            message="Memory updated successfully!",
            id=result.id,
            memory=result.memory,
            event=result.event,
            previous_memory=str(record.get("memory", "")),
        )

    async def delete(self, memory_id: str) -> Deleted:
        record = await self.store.get(memory_id)
        if record is None:
            raise MemoryNotFound(memory_id)
        await self._delete(record)
        if self.graph is not None:
            await self.graph.forget([memory_id])
        return Deleted(message="Memory deleted successfully!", id=memory_id)

    async def delete_all(self, scope: Scope) -> ScopeDeleted:
        filters = require_scope(scope)
        async with self._scope_lock(filters):
            records = await self.store.list_scope(filters, 100_000)
            for record in records:
                await self._delete(record)
            if self.graph is not None:
                await self.graph.forget([r["id"] for r in records])
        return ScopeDeleted(message="Memories deleted successfully!", deleted=len(records))

    async def history_of(self, memory_id: str) -> list[HistoryEntry]:
        rows = await self.history.of(memory_id)
        if not rows and await self.store.get(memory_id) is None:
            raise MemoryNotFound(memory_id)
        return [
            HistoryEntry(
                id=r.id,
                memory_id=r.memory_id,
                event=r.event,
                old_memory=r.old_memory,
                new_memory=r.new_memory,
                created_at=r.created_at.isoformat(),
                is_deleted=r.is_deleted,
            )
            for r in rows
        ]
