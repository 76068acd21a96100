"""Wire shapes of chat and retrieval (contract 2.8, 4.2)."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from lore_core.bounds import Limit, QueryText, Score, TopK

QueryMode = Literal["naive", "rerank", "rewriter", "multihop", "direct"]
QUERY_MODES = ("naive", "rerank", "rewriter", "multihop", "direct")
MAX_QUERY = 4096


class ChatRequestBody(msgspec.Struct, kw_only=True):
    """Parsed loosely on purpose: chat answers every problem with HTTP 200 and `code` 400 in the body."""

    query: Any = None
    kb_id: Any = None
    user_id: Any = None
    query_mode: Any = "naive"
    max_results: Any = 20
    top_k: Any = None
    # true: answer as server-sent events (see the route's description).
    stream: Any = False


class RetrieveRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    kb_id: str
    query: QueryText
    mode: Literal["naive", "rerank"] = "naive"
    top_k: TopK | None = None
    max_results: Limit = 20
    threshold: Score | None = None


class DataItem(msgspec.Struct):
    kb_id: str
    kb_name: str
    score: float
    content: str
    source_id: list[str]
    dataset: str = ""


class Citation(msgspec.Struct):
    index: int
    source_file: str
    dataset: str
    file_url: str | None


class ChatResponse(msgspec.Struct):
    success: bool
    code: int
    message: str
    response: str | None
    data: list[DataItem]
    total_count: int
    citations: list[Citation] | None
    query_info: dict[str, Any]
    request_id: str
