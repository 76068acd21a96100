"""The optional graph side of `vg`: entities and relations per scope in FalkorDB (graph `memoryvg`).

Every edge remembers the memory it came from, so deleting a memory deletes its relations, and the
add call can report both lists (`added_entities`, `deleted_entities`)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lore_common.text import keywords
from lore_mem.vg.models import GraphRelation, Relation

if TYPE_CHECKING:  # the FalkorDB client loads only where a vg graph is enabled (off by default)
    from lore_common.stores.graph import GraphStore

GRAPH = "memoryvg"


def scope_key(scope: dict[str, str]) -> str:
    return "|".join(f"{k}={scope[k]}" for k in sorted(scope))


def normal(name: str) -> str:
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", name)).strip().lower()


class VgGraph:
    def __init__(self, store: GraphStore) -> None:
        self.graph = store.graph(GRAPH)

    async def ensure(self) -> None:
        try:
            await self.graph.query("CREATE INDEX FOR (n:Entity) ON (n.id)")
        except Exception as exc:
            if "already indexed" not in str(exc).lower():
                raise

    async def add(
        self, relations: Sequence[Relation], scope: dict[str, str], memory_id: str
    ) -> list[GraphRelation]:
        """Merge a memory's relations into the scope's graph; returns what was added."""
        key = scope_key(scope)
        rows = [
            {
                "source_id": f"{key}|{normal(r.source)}",
                "target_id": f"{key}|{normal(r.target)}",
                "source": r.source.strip(),
                "target": r.target.strip(),
                "relationship": (r.description or "related to").strip()[:200],
                "memory_id": memory_id,
                "scope": key,
            }
            for r in relations
            if r.source.strip() and r.target.strip() and normal(r.source) != normal(r.target)
        ]
        if rows:
            await self.graph.query(
                "UNWIND $rows AS row "
                "MERGE (a:Entity {id: row.source_id}) ON CREATE SET a.name = row.source, a.scope = row.scope "
                "MERGE (b:Entity {id: row.target_id}) ON CREATE SET b.name = row.target, b.scope = row.scope "
                "CREATE (a)-[:RELATED {relationship: row.relationship, memory_id: row.memory_id}]->(b)",
                {"rows": rows},
            )
        return [GraphRelation(r["source"], r["relationship"], r["target"]) for r in rows]

    async def forget(self, memory_ids: Sequence[str]) -> list[GraphRelation]:
        """Delete the relations that came from these memories; returns what was deleted."""
        if not memory_ids:
            return []
        result = await self.graph.query(
            "MATCH (a:Entity)-[r:RELATED]->(b:Entity) WHERE r.memory_id IN $ids "
            "WITH a, r, b, a.name AS source, r.relationship AS relationship, b.name AS destination "
            "DELETE r RETURN source, relationship, destination",
            {"ids": list(memory_ids)},
        )
        await self.graph.query("MATCH (n:Entity) WHERE NOT (n)--() DELETE n")
        return [GraphRelation(s, r, d) for s, r, d in result.result_set]

    async def search(self, query: str, scope: dict[str, str], limit: int) -> list[GraphRelation]:
        """Relations of the scope that touch an entity named by the query's words."""
        terms = sorted({t for t in keywords(query) if len(t) > 1})
        if not terms:
            return []
        result = await self.graph.query(
            "UNWIND $terms AS t MATCH (a:Entity)-[r:RELATED]-(b:Entity) "
            "WHERE a.scope = $scope AND toLower(a.name) CONTAINS t "
            "RETURN DISTINCT startNode(r).name, r.relationship, endNode(r).name LIMIT $limit",
            {"terms": terms, "scope": scope_key(scope), "limit": limit},
        )
        return [GraphRelation(s, r, d) for s, r, d in result.result_set]
