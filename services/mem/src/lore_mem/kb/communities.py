"""Communities of the `kb` graph (Louvain, networkx) and their summaries, recomputed after inserts.

The update runs in the background on one replica at a time, at most once per `community_interval`;
one run covers every insert committed before it, workspace by workspace (each has its own graph and
communities). Louvain is seeded, so an unchanged graph gives the
same communities; a community whose members did not change keeps its summary (no model call).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Awaitable, Callable
from typing import Any

import networkx as nx
import numpy as np
import structlog

from lore_common.providers.chat import ChatMessage, ChatModel, ChatRequest
from lore_common.providers.embedders import Embedder
from lore_core.tasks import wait_set
from lore_mem.kb.models import Community, EntityRecord, RelationRecord
from lore_mem.kb.store import KbStore

log = structlog.get_logger("lore.mem.kb.communities")

SUMMARY_SYSTEM = (
    "You summarise a community of related entities from a knowledge graph. Write one paragraph that "
    "states the key facts connecting them, using only the descriptions given."
)
MAX_SUMMARY_INPUTS = 24
# Seconds between looks at the change counter for inserts other replicas committed.
POLL = 2.0


def detect(edges: list[tuple[str, str, float]]) -> list[list[str]]:
    """Groups of at least two connected entity keys, largest first."""
    graph = nx.Graph()
    for a, b, weight in edges:
        graph.add_edge(a, b, weight=max(weight, 0.001))
    if graph.number_of_edges() == 0:
        return []
    groups = nx.community.louvain_communities(graph, weight="weight", seed=42)
    ordered = [sorted(g, key=lambda k: (-graph.degree(k, weight="weight"), k)) for g in groups if len(g) > 1]
    ordered.sort(key=lambda g: (-len(g), g[0]))
    return ordered


def _members_id(members: list[str]) -> str:
    return hashlib.sha1("\n".join(sorted(members)).encode(), usedforsecurity=False).hexdigest()[:16]


class CommunityUpdater:
    """Recomputes the communities when inserts were committed since the last run (on any replica).

    Only the leader runs (see `Leadership`); it looks at the shared change counter when an insert here
    wakes it, and every `POLL` seconds for inserts committed by other replicas."""

    def __init__(
        self,
        store: KbStore,
        llm: ChatModel,
        embedder: Embedder,
        interval: float,
        leads: Callable[[], Awaitable[bool]],
    ) -> None:
        self.store = store
        self.llm = llm
        self.embedder = embedder
        self.interval = interval
        self.leads = leads
        self._dirty = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.runs = 0
        self.last_error: str | None = None

    def start(self) -> None:
        self._dirty.set()  # look once at start-up: inserts may have come while no replica ran
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
            await wait_set(self._dirty, POLL)
            self._dirty.clear()
            try:
                if await self.leads():
                    for workspace in await self.store.changed_workspaces():
                        store = await self.store.in_workspace(workspace)
                        await self.update(await store.counter("changes"), store)
                self.last_error = None
            except Exception as exc:  # keep the previous communities; the next look retries
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.warning("communities_failed", error=self.last_error)
            await asyncio.sleep(self.interval)

    async def update(self, changes: int, store: KbStore | None = None) -> None:
        """Recompute the communities of `store`'s workspace (the default one when None)."""
        store = store or self.store
        forgets = await store.counter("forgets")  # read before the graph: a forget after it voids the save
        groups = await asyncio.to_thread(detect, await store.edges())
        previous = {c.id: c for c in await store.communities()}
        communities: list[Community] = []
        fresh: list[tuple[int, list[str]]] = []
        members_of = {k for g in groups for k in g}
        entities = await store.entities(sorted(members_of))
        relations = await store.relations_around(sorted(members_of))
        for members in groups:
            community_id = _members_id(members)
            known = previous.get(community_id)
            if known is not None:  # same members: same summary, and its vector is stored already
                communities.append(known)
            else:
                communities.append(
                    Community(id=community_id, members=members, title=_title(members, entities), summary="")
                )
                fresh.append((len(communities) - 1, members))
        summaries = await asyncio.gather(
            *(self._summarise(members, entities, relations) for _, members in fresh)
        )
        vectors: dict[str, Any] = {}
        if fresh:
            embedded = await self.embedder.embed(
                [
                    f"{communities[i].title}: {summary}"
                    for (i, _), summary in zip(fresh, summaries, strict=True)
                ]
            )
            for row, ((index, _), summary) in enumerate(zip(fresh, summaries, strict=True)):
                communities[index].summary = summary
                vectors[communities[index].id] = np.asarray(embedded[row], dtype=np.float32)
        if not await store.save_communities(communities, vectors, changes, forgets):
            log.info(
                "communities_discarded", workspace=store.workspace, reason="an insert was forgotten meanwhile"
            )
            self.mark_dirty()
            return
        self.runs += 1
        log.info(
            "communities_updated",
            workspace=store.workspace,
            communities=len(communities),
            summarised=len(fresh),
            changes=changes,
        )

    async def _summarise(
        self, members: list[str], entities: dict[str, EntityRecord], relations: list[RelationRecord]
    ) -> str:
        texts: list[str] = []
        for key in members:
            entity = entities.get(key)
            if entity and entity.descriptions:
                texts.append(f"{entity.name}: {entity.descriptions[0]}")
        member_set = set(members)
        for relation in sorted(relations, key=lambda r: (r.source, r.target)):
            if relation.source in member_set and relation.target in member_set and relation.descriptions:
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


def _title(members: list[str], entities: dict[str, EntityRecord]) -> str:
    names = [entities[k].name for k in members[:3] if k in entities]
    return ", ".join(names) + (f" and {len(members) - 3} more" if len(members) > 3 else "")
