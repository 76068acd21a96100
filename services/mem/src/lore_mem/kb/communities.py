"""Communities of the `kb` graph (Louvain, networkx) and their summaries, recomputed after inserts.

The update runs in the background, at most once per `community_interval`: inserts mark the graph
dirty, and one run covers every insert before it. Louvain is seeded, so an unchanged graph gives the
same communities; a community whose members did not change keeps its summary (no model call).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from typing import Any

import networkx as nx
import numpy as np
import structlog

from lore_common.providers.chat import ChatMessage, ChatModel, ChatRequest
from lore_common.providers.embedders import Embedder
from lore_mem.kb.models import Community
from lore_mem.kb.store import KbStore

log = structlog.get_logger("lore.mem.kb.communities")

SUMMARY_SYSTEM = (
    "You summarise a community of related entities from a knowledge graph. Write one paragraph that "
    "states the key facts connecting them, using only the descriptions given."
)
MAX_SUMMARY_INPUTS = 24


def detect(store: KbStore) -> list[list[str]]:
    """Groups of at least two connected entity keys, largest first."""
    graph = nx.Graph()
    for (a, b), relation in list(store.relations.items()):
        graph.add_edge(a, b, weight=max(relation.weight, 0.001))
    if graph.number_of_edges() == 0:
        return []
    groups = nx.community.louvain_communities(graph, weight="weight", seed=42)
    ordered = [sorted(g, key=lambda k: (-graph.degree(k, weight="weight"), k)) for g in groups if len(g) > 1]
    ordered.sort(key=lambda g: (-len(g), g[0]))
    return ordered


def _members_id(members: list[str]) -> str:
    return hashlib.sha1("\n".join(sorted(members)).encode(), usedforsecurity=False).hexdigest()[:16]


class CommunityUpdater:
    def __init__(self, store: KbStore, llm: ChatModel, embedder: Embedder, interval: float) -> None:
        self.store = store
        self.llm = llm
        self.embedder = embedder
        self.interval = interval
        self._dirty = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.runs = 0
        self.last_error: str | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def mark_dirty(self) -> None:
        self._dirty.set()

    async def _loop(self) -> None:
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            try:
                await self.update()
                self.last_error = None
            except Exception as exc:  # keep the previous communities; the next insert retries
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.warning("communities_failed", error=self.last_error)
            await asyncio.sleep(self.interval)

    async def update(self) -> None:
        groups = await asyncio.to_thread(detect, self.store)
        previous = {c.id: c for c in self.store.communities}
        previous_rows = self.store.community_vectors.rows
        communities: list[Community] = []
        vectors: list[Any] = []
        fresh: list[tuple[int, list[str]]] = []
        for members in groups:
            community_id = _members_id(members)
            known = previous.get(community_id)
            communities.append(
                known or Community(id=community_id, members=members, title=self._title(members), summary="")
            )
            vectors.append(
                self.store.community_vectors.matrix[previous_rows[community_id]]
                if known is not None
                else None
            )
            if known is None:
                fresh.append((len(communities) - 1, members))
        summaries = await asyncio.gather(*(self._summarise(members) for _, members in fresh))
        if fresh:
            embedded = await self.embedder.embed(
                [
                    f"{communities[i].title}: {summary}"
                    for (i, _), summary in zip(fresh, summaries, strict=True)
                ]
            )
            for row, ((index, _), summary) in enumerate(zip(fresh, summaries, strict=True)):
                communities[index].summary = summary
                vectors[index] = embedded[row]
        matrix = np.asarray(vectors, dtype=np.float32).reshape(len(communities), self.store.dim)
        await asyncio.to_thread(self.store.save_communities, communities, matrix)
        self.runs += 1
        log.info("communities_updated", communities=len(communities), summarised=len(fresh))

    def _title(self, members: list[str]) -> str:
        names = [self.store.entities[k].name for k in members[:3] if k in self.store.entities]
        return ", ".join(names) + (f" and {len(members) - 3} more" if len(members) > 3 else "")

    async def _summarise(self, members: list[str]) -> str:
        texts: list[str] = []
        for key in members:
            entity = self.store.entities.get(key)
            if entity and entity.descriptions:
                texts.append(f"{entity.name}: {entity.descriptions[0]}")
        member_set = set(members)
        for key in members:
            for other in sorted(self.store.neighbours.get(key, ())):
                if other in member_set and key < other:
                    relation = self.store.relations.get((key, other))
                    if relation and relation.descriptions:
                        texts.append(relation.descriptions[0])
        texts = list(dict.fromkeys(texts))[:MAX_SUMMARY_INPUTS]
        reply = await self.llm.complete(
            ChatRequest(
                messages=[ChatMessage("system", SUMMARY_SYSTEM), ChatMessage("user", "\n".join(texts))],
                task="summarize",
                inputs={"texts": texts},
            )
        )
        return reply.strip()
