"""The search adapters of every knowledge base, as one object: what parsing writes and chat reads."""

from __future__ import annotations

from dataclasses import dataclass

from lore_docdb.index.bm25 import Bm25Cache
from lore_docdb.index.graph import GraphIndex
from lore_docdb.index.vectors import VectorIndex


@dataclass(frozen=True)
class SearchIndexes:
    vectors: VectorIndex  # a collection of chunk vectors per KB
    graph: GraphIndex  # a knowledge graph per KB (disabled without a graph store)
    bm25: Bm25Cache  # a BM25 index per KB (chunk ids, mapped from disk), rebuilt when its chunks change
