"""Wire shapes of chat and retrieval (see docs/docdb.md)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from lore_core.bounds import MAX_RESULTS, QUERY_CHARS, ChatQueryText, Limit, QueryText, Score, TopK
from lore_docdb.envelope import Success

QueryMode = Literal["naive", "rerank", "rewriter", "multihop", "direct"]
QUERY_MODES = ("naive", "rerank", "rewriter", "multihop", "direct")
MAX_QUERY = QUERY_CHARS


class ChatRequestBody(msgspec.Struct, kw_only=True):
    """The chat body as the API reference documents it. The route reads it by hand (`ChatBodyAsSent`),
    so that a bad body is answered like every other mistake: HTTP 200 with `code` 400."""

    query: ChatQueryText
    kb_id: str
    user_id: str
    query_mode: QueryMode = "naive"
    max_results: Annotated[int, msgspec.Meta(ge=1, le=MAX_RESULTS)] = 20
    top_k: Annotated[int, msgspec.Meta(ge=1, le=MAX_RESULTS)] | None = None
    # true: answer as server-sent events (see the route's description).
    stream: bool = False


class ChatBodyAsSent(msgspec.Struct, kw_only=True):
    """The chat body as sent, any field of any type: the service checks each and says what is wrong."""

    query: Any = None
    kb_id: Any = None
    user_id: Any = None
    query_mode: Any = "naive"
    max_results: Any = 20
    top_k: Any = None
    stream: Any = False


class RetrieveRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    kb_id: str
    query: QueryText
    mode: Literal["naive", "rerank"] = "rerank"
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
    # Where the passage sits in its file: the titles of its sections, outermost first ([] when it sits
    # under no heading), and for a paged file (PDF) its first and last page, 1-based (else null).
    heading_path: list[str] = msgspec.field(default_factory=list)
    page: int | None = None
    page_end: int | None = None


class Citation(msgspec.Struct):
    index: int
    source_file: str
    dataset: str
    # A link to the file where object storage presigns one; for a PDF it opens at `page` (`#page=N`).
    file_url: str | None
    # The cited passage: its chunk (`source_id` of its item in `data`), its sections' titles, and for a
    # paged file (PDF) its first and last page, 1-based (null for a file without pages).
    chunk_id: str | None = None
    heading_path: list[str] = msgspec.field(default_factory=list)
    page: int | None = None
    page_end: int | None = None


class QueryInfo(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What a question did: the model, the mode and its bounds (once the question was read), then
    time per stage, candidates per retriever and model calls (absent before the question was read)."""

    model: str | UnsetType = UNSET
    mode: str | UnsetType = UNSET
    kb_id: str | UnsetType = UNSET
    top_k: int | UnsetType = UNSET
    max_results: int | UnsetType = UNSET
    timings_ms: dict[str, float] | UnsetType = UNSET
    candidates: dict[str, int] | UnsetType = UNSET
    model_calls: int | UnsetType = UNSET


class ChatResponse(msgspec.Struct):
    success: bool
    code: int
    message: str
    response: str | None
    data: list[DataItem]
    total_count: int
    citations: list[Citation] | None
    query_info: QueryInfo
    request_id: str


class Passages(msgspec.Struct):
    """The `passages` event of a streamed chat: what the answer is written from."""

    data: list[DataItem]
    total_count: int


class Retrieved(Success, kw_only=True):
    """The retrieval API's reply: the chunks chat would answer from."""

    data: list[DataItem]
    total_count: int
    query_info: QueryInfo
