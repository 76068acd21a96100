"""The knowledge-graph side of a KB: one FalkorDB graph per KB.

One node per normalised name + type; descriptions merged; edges weighted. Every node and edge keeps
`sources` ("dataset|task_id"), `datasets` and `chunk_ids` (each prefixed by its task id), so the data
of one task or one dataset can be rolled back exactly, and retrieval can map entities back to chunks.

A parse writes entities by rebuilding them (`replace_entities`): each one is folded from the
contributions of every chunk that names it (kept with the chunk, see `fold_entities`), in the order of
(dataset, file, position). So an entity is the same whichever parses brought its chunks, and a changed
or deleted file takes back exactly what it contributed while the other files' part stays.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from lore_common.stores.graph import GraphStore

MAX_DESCRIPTION = 2000
MAX_MATCHED_ENTITIES = 50
SHOWN_DESCRIPTION = 300


def _cut(field: str) -> str:
    """Cypher for a description's first 300 characters. FalkorDB's `substring` asked for more than a
    string holds returns bytes past its end, cut inside its last character when that one is multi-byte
    (`…`, `’`, any non-Latin text): the reply then fails to decode and the whole page with it."""
    n = SHOWN_DESCRIPTION
    return f"CASE WHEN size({field}) > {n} THEN substring({field}, 0, {n}) ELSE {field} END"


_REPLACE_NODES = """
UNWIND $rows AS row
CREATE (n:Entity {id: row.id, name: row.name, type: row.type, description: row.description,
  sources: row.sources, datasets: row.datasets, chunk_ids: row.chunk_ids, mentions: row.mentions})
"""

_REPLACE_EDGES = """
UNWIND $rows AS row
MATCH (a:Entity {id: row.source_id}), (b:Entity {id: row.target_id})
CREATE (a)-[:RELATED {description: row.description, weight: row.weight, sources: row.sources,
  datasets: row.datasets, chunk_ids: row.chunk_ids}]->(b)
"""


class Contribution(NamedTuple):
    """What one chunk contributes to the graph: its entities and relations as extraction found them."""

    chunk_id: str
    dataset: str
    task_id: str
    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]


def _fold(
    into: dict[Any, dict[str, Any]],
    key: Any,
    item: dict[str, Any],
    amount: str,
    chunk_id: str,
    dataset: str,
    source: str,
) -> None:
    row = into.get(key)
    if row is None:
        into[key] = {**item, "sources": [source], "datasets": [dataset], "chunk_ids": [chunk_id]}
        return
    row[amount] += item[amount]
    for field, value in (("sources", source), ("datasets", dataset), ("chunk_ids", chunk_id)):
        if value not in row[field]:
            row[field].append(value)
    description = item["description"]
    if description and description not in row["description"] and len(row["description"]) <= MAX_DESCRIPTION:
        row["description"] = f"{row['description']} | {description}"


def fold_entities(
    contributions: Iterable[Contribution], entities: set[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The nodes of `entities` and every relation touching one of them, folded from the contributions
    (given in (dataset, file, position) order): descriptions joined in that order, mentions and weights
    summed, sources, datasets and chunk ids listed once each."""
    nodes: dict[str, dict[str, Any]] = {}
    edges: dict[tuple[str, str], dict[str, Any]] = {}
    for part in contributions:
        source = f"{part.dataset}|{part.task_id}"
        for node in part.nodes:
            if node["id"] in entities:
                _fold(nodes, node["id"], node, "mentions", part.chunk_id, part.dataset, source)
        for edge in part.edges:
            if edge["source_id"] in entities or edge["target_id"] in entities:
                key = (edge["source_id"], edge["target_id"])
                _fold(edges, key, edge, "weight", part.chunk_id, part.dataset, source)
    return list(nodes.values()), list(edges.values())


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

    async def replace_entities(
        self,
        kb: str,
        entities: set[str],
        nodes: Sequence[dict[str, Any]],
        edges: Sequence[dict[str, Any]],
        batch: int,
    ) -> None:
        """Delete these entities with their relations, then write them again as folded (`nodes`: those
        still named by some chunk; `edges`: every relation touching one of them)."""
        graph = self._graph(kb)
        ids = sorted(entities)
        for start in range(0, len(ids), batch):
            await graph.query(
                "MATCH (n:Entity) WHERE n.id IN $ids DETACH DELETE n", {"ids": ids[start : start + batch]}
            )
        for start in range(0, len(nodes), batch):
            await graph.query(_REPLACE_NODES, {"rows": list(nodes[start : start + batch])})
        for start in range(0, len(edges), batch):
            await graph.query(_REPLACE_EDGES, {"rows": list(edges[start : start + batch])})

    async def chunks_naming(self, kb: str, entities: set[str], batch: int) -> set[str]:
        """The chunks that name any of these entities, as the graph records them."""
        if self.store is None or not entities or not await self.exists(kb):
            return set()
        graph = self._graph(kb)
        ids = sorted(entities)
        found: set[str] = set()
        for start in range(0, len(ids), batch):
            result = await graph.query(
                "MATCH (n:Entity) WHERE n.id IN $ids RETURN n.chunk_ids", {"ids": ids[start : start + batch]}
            )
            for (chunk_ids,) in result.result_set:
                found.update(chunk_ids or [])
        return found

    async def entities_from(self, kb: str, chunk_ids: Sequence[str], task_id: str | None = None) -> set[str]:
        """The entities these chunks (or this task) contributed to, as the graph records them: for chunks
        whose own contribution is not kept (parsed before chunks kept it)."""
        if self.store is None or not await self.exists(kb):
            return set()
        tests = ["any(c IN n.chunk_ids WHERE c IN $ids)"]
        if task_id is not None:
            tests.append("any(s IN n.sources WHERE s ENDS WITH $suffix)")
        result = await self._graph(kb).query(
            f"MATCH (n:Entity) WHERE {' OR '.join(tests)} RETURN n.id",
            {"ids": list(chunk_ids), "suffix": f"|{task_id}"},
        )
        return {row[0] for row in result.result_set}

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
            "WITH n, count(r) AS degree RETURN n.name, n.type, " + _cut("n.description") + ", degree, "
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
                "RETURN a.name, b.name, " + _cut("r.description") + ", r.weight"
            )
        else:
            found = await graph.query(
                "MATCH (a:Entity)-[r:RELATED]->(b:Entity) WHERE a.name IN $names OR b.name IN $names "
                "RETURN a.name, b.name, " + _cut("r.description") + ", r.weight",
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
