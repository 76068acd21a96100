"""The knowledge-graph side of a KB: one FalkorDB graph per KB.

One node per normalised name + type; descriptions merged; edges weighted. Every node and edge keeps
`sources` ("dataset|task_id"), `datasets` and `chunk_ids` (each prefixed by its task id), so the data
of one task or one dataset can be rolled back exactly, and retrieval can map entities back to chunks.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from lore_common.stores.graph import GraphStore

MAX_DESCRIPTION = 2000
MAX_MATCHED_ENTITIES = 50

_MERGE_NODES = """
UNWIND $rows AS row
MERGE (n:Entity {id: row.id})
ON CREATE SET n.name = row.name, n.type = row.type, n.description = row.description,
  n.sources = [row.source], n.datasets = [row.dataset], n.chunk_ids = row.chunk_ids, n.mentions = row.mentions
ON MATCH SET
  n.description = CASE WHEN n.description CONTAINS row.description OR size(n.description) > $max_description
    THEN n.description ELSE n.description + ' | ' + row.description END,
  n.sources = CASE WHEN row.source IN n.sources THEN n.sources ELSE n.sources + row.source END,
  n.datasets = CASE WHEN row.dataset IN n.datasets THEN n.datasets ELSE n.datasets + row.dataset END,
  n.chunk_ids = n.chunk_ids + row.chunk_ids,
  n.mentions = n.mentions + row.mentions
"""

_MERGE_EDGES = """
UNWIND $rows AS row
MATCH (a:Entity {id: row.source_id}), (b:Entity {id: row.target_id})
MERGE (a)-[r:RELATED]->(b)
ON CREATE SET r.description = row.description, r.weight = row.weight, r.sources = [row.source],
  r.datasets = [row.dataset], r.chunk_ids = row.chunk_ids
ON MATCH SET
  r.weight = r.weight + row.weight,
  r.description = CASE WHEN r.description CONTAINS row.description OR size(r.description) > $max_description
    THEN r.description ELSE r.description + ' | ' + row.description END,
  r.sources = CASE WHEN row.source IN r.sources THEN r.sources ELSE r.sources + row.source END,
  r.datasets = CASE WHEN row.dataset IN r.datasets THEN r.datasets ELSE r.datasets + row.dataset END,
  r.chunk_ids = r.chunk_ids + row.chunk_ids
"""

# Parenthesised predicates: FalkorDB binds NOT and + tighter than STARTS/ENDS WITH.
_FORGET = """
MATCH {pattern} WHERE any(s IN x.sources WHERE {test})
SET x.sources = [s IN x.sources WHERE NOT ({test})],
    x.chunk_ids = [c IN x.chunk_ids WHERE NOT ({chunk_test})]
WITH x SET x.datasets = [d IN x.datasets WHERE any(s IN x.sources WHERE s STARTS WITH (d + '|'))]
"""


def entity_id(name: str, kind: str) -> str:
    normal = re.sub(r"\s+", " ", unicodedata.normalize("NFKC", name)).strip().lower()
    return f"{normal}|{kind}"


def graph_name(kb: str) -> str:
    return f"kb_{kb}"


class GraphIndex:
    def __init__(self, store: GraphStore | None) -> None:
        self.store = store

    @property
    def enabled(self) -> bool:
        return self.store is not None

    def _graph(self, kb: str) -> Any:
        assert self.store is not None, "graph store disabled"
        return self.store.graph(graph_name(kb))

    async def ensure(self, kb: str) -> None:
        if self.store is None:
            return
        graph = self._graph(kb)
        try:
            await graph.query("CREATE INDEX FOR (n:Entity) ON (n.id)")
        except Exception as exc:  # already indexed
            if "already indexed" not in str(exc).lower():
                raise

    async def merge(
        self, kb: str, nodes: Sequence[dict[str, Any]], edges: Sequence[dict[str, Any]], batch: int
    ) -> None:
        graph = self._graph(kb)
        for start in range(0, len(nodes), batch):
            await graph.query(
                _MERGE_NODES, {"rows": list(nodes[start : start + batch]), "max_description": MAX_DESCRIPTION}
            )
        for start in range(0, len(edges), batch):
            await graph.query(
                _MERGE_EDGES, {"rows": list(edges[start : start + batch]), "max_description": MAX_DESCRIPTION}
            )

    async def _forget(self, kb: str, test: str, chunk_test: str, params: dict[str, Any]) -> None:
        graph = self._graph(kb)
        for pattern in ("()-[x:RELATED]->()", "(x:Entity)"):
            await graph.query(_FORGET.format(pattern=pattern, test=test, chunk_test=chunk_test), params)
        await graph.query("MATCH ()-[r:RELATED]->() WHERE size(r.sources) = 0 DELETE r")
        await graph.query("MATCH (n:Entity) WHERE size(n.sources) = 0 DETACH DELETE n")

    async def forget_task(self, kb: str, task_id: str) -> None:
        """Remove every contribution of one task; nodes and edges left with none are deleted."""
        if self.store is None or not await self.exists(kb):
            return
        await self._forget(
            kb,
            "s ENDS WITH $suffix",
            "c STARTS WITH $prefix",
            {"suffix": f"|{task_id}", "prefix": f"{task_id}:"},
        )

    async def forget_tasks(self, kb: str, task_ids: Sequence[str]) -> None:
        for task_id in task_ids:
            await self.forget_task(kb, task_id)

    async def exists(self, kb: str) -> bool:
        if self.store is None:
            return False
        names = await self.store.client.list_graphs()
        return graph_name(kb) in names

    async def drop(self, kb: str) -> None:
        if await self.exists(kb):
            await self._graph(kb).delete()

    async def counts(self, kb: str, task_id: str | None = None) -> tuple[int, int]:
        """(nodes, edges), optionally only those a task contributed to."""
        if not await self.exists(kb):
            return 0, 0
        graph = self._graph(kb)
        where = " WHERE any(s IN x.sources WHERE s ENDS WITH $suffix)" if task_id else ""
        params = {"suffix": f"|{task_id}"} if task_id else {}
        nodes = (await graph.query(f"MATCH (x:Entity){where} RETURN count(x)", params)).result_set[0][0]
        edges = (await graph.query(f"MATCH ()-[x:RELATED]->(){where} RETURN count(x)", params)).result_set[0][
            0
        ]
        return int(nodes), int(edges)

    async def top_entities(self, kb: str, limit: int) -> list[dict[str, Any]]:
        if not await self.exists(kb):
            return []
        result = await self._graph(kb).query(
            "MATCH (n:Entity) OPTIONAL MATCH (n)-[r:RELATED]-() "
            "WITH n, count(r) AS degree RETURN n.name, n.type, n.description, degree, n.datasets "
            "ORDER BY degree DESC, n.name LIMIT $limit",
            {"limit": limit},
        )
        return [
            {
                "name": r[0],
                "type": r[1],
                "description": (r[2] or "")[:300],
                "degree": int(r[3]),
                "datasets": r[4],
            }
            for r in result.result_set
        ]

    async def page(
        self, kb: str, offset: int, limit: int
    ) -> tuple[int, list[dict[str, Any]], list[dict[str, Any]]]:
        """Entities ranked as `top_entities` ranks them, `limit` from `offset`, with the relations
        between each of them and any entity ranked before it: a client that pages from 0 has every
        relation among what it holds, each once. Returns (entity count, nodes, edges)."""
        if not await self.exists(kb):
            return 0, [], []
        graph = self._graph(kb)
        total = int((await graph.query("MATCH (n:Entity) RETURN count(n)")).result_set[0][0])
        ranked = await graph.query(
            "MATCH (n:Entity) OPTIONAL MATCH (n)-[r:RELATED]-() "
            "WITH n, count(r) AS degree RETURN n.name, n.type, substring(n.description, 0, 300), degree, "
            "n.datasets ORDER BY degree DESC, n.name LIMIT $upto",
            {"upto": offset + limit},
        )
        rows = ranked.result_set
        rank = {r[0]: i for i, r in enumerate(rows)}
        nodes = [
            {
                "name": r[0],
                "type": r[1],
                "description": (r[2] or "")[:300],
                "degree": int(r[3]),
                "datasets": r[4],
            }
            for r in rows[offset:]
        ]
        if len(rows) >= total:  # every entity is ranked: read every relation, no list to test against
            found = await graph.query(
                "MATCH (a:Entity)-[r:RELATED]->(b:Entity) "
                "RETURN a.name, b.name, substring(r.description, 0, 300), r.weight"
            )
        else:
            found = await graph.query(
                "MATCH (a:Entity)-[r:RELATED]->(b:Entity) WHERE a.name IN $names OR b.name IN $names "
                "RETURN a.name, b.name, substring(r.description, 0, 300), r.weight",
                {"names": [n["name"] for n in nodes]},
            )
        edges = []
        for source, target, description, weight in found.result_set:
            if source in rank and target in rank and max(rank[source], rank[target]) >= offset:
                edges.append(
                    {
                        "source": source,
                        "target": target,
                        "description": (description or "")[:300],
                        "weight": float(weight),
                    }
                )
        return total, nodes, edges

    async def sample_relations(self, kb: str, limit: int) -> list[dict[str, Any]]:
        if not await self.exists(kb):
            return []
        result = await self._graph(kb).query(
            "MATCH (a:Entity)-[r:RELATED]->(b:Entity) RETURN a.name, b.name, r.description, r.weight "
            "ORDER BY r.weight DESC, a.name LIMIT $limit",
            {"limit": limit},
        )
        return [
            {"source": r[0], "target": r[1], "description": (r[2] or "")[:300], "weight": float(r[3])}
            for r in result.result_set
        ]

    async def chunks_for_terms(self, kb: str, terms: Sequence[str], limit: int) -> list[tuple[str, float]]:
        """Chunks that mention entities named by the terms (1 point each) or the relations of those
        entities to their 1-hop neighbours (0.5 each), best first."""
        if not terms or not await self.exists(kb):
            return []
        result = await self._graph(kb).query(
            "UNWIND $terms AS t MATCH (n:Entity) WHERE toLower(n.name) CONTAINS t "
            "WITH DISTINCT n LIMIT $nodes "
            "OPTIONAL MATCH (n)-[r:RELATED]-() "
            "RETURN n.chunk_ids, collect(r.chunk_ids)",
            {"terms": list(terms), "nodes": MAX_MATCHED_ENTITIES},
        )
        scores: dict[str, float] = {}
        for own, related in result.result_set:
            for chunk_id in own or []:
                scores[chunk_id] = scores.get(chunk_id, 0.0) + 1.0
            for chunk_ids in related or []:
                for chunk_id in chunk_ids or []:
                    scores[chunk_id] = scores.get(chunk_id, 0.0) + 0.5
        return sorted(scores.items(), key=lambda pair: -pair[1])[:limit]
