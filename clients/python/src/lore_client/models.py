"""What the API answers, as typed Structs. Unknown fields are ignored, so a newer server does not break an
older client; every field a server may leave out has a default."""

from __future__ import annotations

from typing import Any, Literal

import msgspec


class Model(msgspec.Struct, kw_only=True):
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (what the CLI's `--json` prints)."""
        data: dict[str, Any] = msgspec.to_builtins(self)
        return data


# ---------------------------------------------------------------- system


class Info(Model):
    name: str
    version: str


class MemoryScopeLimits(Model):
    """The memories a key may touch: a pattern or fixed value per id (None: any), whether it reaches the
    memory graph (`kb`) and in which workspace (a pattern, or the one it is given)."""

    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    kb: bool = False
    workspace: str | None = None


class KeySelf(Model):
    """The calling key's scopes and limits (never the key); `auth` false: no keys, everything open.
    Empty lists and a None `memory` mean no limit of that kind."""

    auth: bool
    name: str | None = None
    scope: str = ""
    modules: list[str] = []
    knowledge_bases: list[str] = []
    datasets: list[str] = []
    memory: MemoryScopeLimits | None = None
    rate_per_second: float | None = None


class Health(Model):
    status: str
    version: str = ""
    gateway: dict[str, Any] = {}
    services: dict[str, dict[str, Any]] = {}


# ---------------------------------------------------------------- docdb: datasets and uploads


class FileInfo(Model):
    name: str  # as stored: a path's folders are flattened (`guide/README.md` -> `guide%2FREADME.md`)
    size: int
    modified_time: str
    path: str = ""  # the file's path in the dataset, its identity with `sha256`
    sha256: str | None = None  # of its content; None while the server does not know it


class PutFileResult(Model):
    """A file written by its path: `status` is `added`, `replaced` or `unchanged` (nothing written)."""

    name: str
    path: str
    size: int
    sha256: str
    status: str


class SyncFailure(Model):
    path: str
    reason: str


class SyncReport(Model):
    """What a sync did: paths added, changed, deleted; how many unchanged; files it could not fetch."""

    added: list[str] = []
    changed: list[str] = []
    deleted: list[str] = []
    unchanged: int = 0
    failed: list[SyncFailure] = []


class SyncTask(Model):
    """A dataset's sync from its source: `pending`, `running`, `completed` or `failed` (with `error`;
    the dataset is then as it was)."""

    task_id: str
    dataset: str
    kind: str
    trigger: str  # manual or schedule
    status: str
    created_at: str = ""
    updated_at: str = ""
    error: str | None = None
    report: SyncReport | None = None
    parse_tasks: list[str] = []  # parses queued after it (auto_parse)


class SourceInfo(Model):
    """A dataset's source (`kind` folder, s3, git or web, with its fields; secrets shown as ***)."""

    dataset: str
    source: dict[str, Any]
    next_sync_at: str | None = None
    last_sync: SyncTask | None = None


class UploadedFile(Model):
    filename: str
    size: int


class UploadSession(Model):
    upload_id: str
    filename: str
    total_chunks: int
    total_size: int
    created_at: str = ""


class UploadProgress(UploadSession):
    received_chunks: list[int] = []
    received_bytes: int = 0


class UploadEvent(Model):
    """Passed to `upload(on_progress=…)` as bytes reach the server; `done` once a file is stored."""

    path: str
    filename: str
    sent_bytes: int
    total_bytes: int
    done: bool = False
    chunked: bool = False
    resumed_bytes: int = 0  # bytes the server already held from an interrupted upload


# ---------------------------------------------------------------- docdb: knowledge bases and tasks


class KnowledgeBaseSummary(Model):
    name: str
    created_at: str
    status: str
    # The embedder of the KB's vectors (`local:minilm`…; `auto` until its first parse); not in listings.
    embedding_model: str | None = None


class KbDataset(Model):
    name: str
    parsed: bool = False
    process_mode: int | None = None
    parsed_at: str | None = None


class QueryMode(Model):
    id: str
    label: str = ""
    desc: str = ""


class KnowledgeBase(KnowledgeBaseSummary):
    process_mode: int | None = None
    embedding_dim: int | None = None  # of `embedding_model`; None while that is `auto`
    datasets: list[KbDataset] = []
    available_query_modes: list[QueryMode] = []


class GraphEntity(Model):
    name: str
    type: str = ""
    description: str = ""
    degree: int = 0
    datasets: list[str] = []


class GraphRelation(Model):
    source: str
    target: str
    description: str = ""
    weight: float = 1.0


class Overview(Model):
    name: str
    datasets: list[KbDataset] = []
    top_entities: list[GraphEntity] = []
    sample_relations: list[GraphRelation] = []
    chunk_count: int = 0
    prompt: str = ""


class KbFile(Model):
    """A file as a KB's last parse of its dataset left it: its chunks, or why it has none."""

    dataset: str
    path: str
    name: str
    chunks: int
    task_id: str
    skipped: str | None = None


class KbFilePage(Model):
    kb: str
    total: int
    offset: int
    limit: int
    files: list[KbFile] = []


class GraphPage(Model):
    """A page of a KB's graph: entities by degree from `offset`, and the relations between each of them
    and the entities ranked before it (page from 0 and every relation arrives once)."""

    kb: str
    total_nodes: int
    offset: int
    limit: int
    nodes: list[GraphEntity] = []
    edges: list[GraphRelation] = []


class ParseTaskRef(Model):
    task_id: str
    dataset: str


class ParseResult(Model):
    tasks: list[ParseTaskRef]
    mode: int


TaskStatus = Literal["pending", "running", "cancelling", "completed", "failed", "cancelled"]


class Task(Model):
    """A parse task (see the API reference). Its `stage` moves through `PARSE_STAGES`."""

    task_id: str
    status: str
    task_type: str = "file_processing"
    metadata: dict[str, Any] = {}
    stage: str | None = None
    created_at: str = ""
    updated_at: str = ""
    error: str | None = None

    @property
    def kb_name(self) -> str:
        return str(self.metadata.get("kb_name", ""))

    @property
    def dataset(self) -> str:
        return str(self.metadata.get("dataset", ""))

    @property
    def skipped_files(self) -> list[dict[str, Any]]:
        skipped = self.metadata.get("skipped_files") or []
        return list(skipped)


PARSE_STAGES = ("extract", "chunk", "embed", "index", "graph", "merge", "done")


class CancelResult(Model):
    task_id: str
    status: str


class SchemaEntity(Model):
    type: str
    description: str = ""
    attributes: list[Any] = []


class SchemaSummary(Model):
    name: str
    created_at: str = ""
    entity_count: int = 0


class Schema(Model):
    name: str
    entity_count: int = 0
    entities: list[dict[str, Any]] = []
    prompt_preview: str = ""
    created_at: str = ""


# ---------------------------------------------------------------- docdb: chat and retrieval


class Passage(Model):
    content: str
    score: float = 0.0
    kb_id: str = ""
    kb_name: str = ""  # the file the passage comes from
    dataset: str = ""
    source_id: list[str] = []
    heading_path: list[str] = []  # the titles of the sections it sits in, outermost first
    page: int | None = None  # its first page in a paged file (PDF), 1-based
    page_end: int | None = None  # its last page


class Citation(Model):
    index: int
    source_file: str
    dataset: str = ""
    file_url: str | None = None  # for a PDF, opens at `page`
    chunk_id: str | None = None  # the cited passage: the `source_id` of its item in `data`
    heading_path: list[str] = []
    page: int | None = None
    page_end: int | None = None


class ChatResult(Model):
    """A chat's answer. docdb answers a failed chat with HTTP 200 and its `code` (400, 404, 503…) here."""

    response: str | None
    code: int = 200
    data: list[Passage] = []
    total_count: int = 0
    citations: list[Citation] | None = None
    query_info: dict[str, Any] = {}
    request_id: str = ""
    message: str = ""


class RetrieveResult(Model):
    data: list[Passage] = []
    total_count: int = 0
    query_info: dict[str, Any] = {}


class ChatEvent(Model):
    """One event of a streamed answer: `passages`, `delta` (text), `citations`, `error`, then `done`
    (whose `data` is the body the plain call returns)."""

    event: str
    data: Any = None


# ---------------------------------------------------------------- gen


class Table(Model):
    table_name: str
    schema: Any = None
    csv_data: list[dict[str, Any]] = []
    sql: str = ""
    query_results: Any = None
    kb_name: str | None = None


class TableTask(Model):
    task_id: str
    status: str
    result: Table | None = None
    error: str | None = None
    step: int | None = None
    step_name: str | None = None
    progress: dict[str, Any] | None = None
    created_at: str = ""
    updated_at: str = ""


class TableEvent(Model):
    """A message of the table stream: `progress` (`step`, `name`, …), `result` (`data`) or `error`."""

    type: str
    step: int | None = None
    name: str | None = None
    task_id: str | None = None
    done: int | None = None
    total: int | None = None
    data: Table | None = None
    message: str | None = None


class TreeNode(Model):
    node_name: str
    category: str = ""
    description: str = ""
    children: list[TreeNode] = []


class TagTree(Model):
    tree_name: str
    tree_description: str = ""
    node_count: int = 0
    nodes: list[TreeNode] = []
    kb_name: str | None = None
    kb_entity_nodes: int | None = None


class TreeTask(Model):
    task_id: str
    status: str
    result: TagTree | None = None
    error: str | None = None
    node_count: int | None = None  # in the reply of a spreadsheet submit, which builds the tree at once
    step: int | None = None
    step_name: str | None = None
    progress: dict[str, Any] | None = None
    created_at: str = ""
    updated_at: str = ""


# ---------------------------------------------------------------- mem


class Memory(Model):
    id: str
    memory: str
    hash: str = ""
    created_at: str | None = None
    updated_at: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    metadata: dict[str, Any] | None = None
    score: float | None = None


class MemoryEvent(Model):
    id: str
    memory: str
    event: str
    previous_memory: str | None = None


class AddResult(Model):
    results: list[MemoryEvent]
    relations: dict[str, Any] = {}


class SearchResult(Model):
    results: list[Memory]
    relations: list[Any] = []


class UpdateResult(Model):
    id: str
    memory: str
    event: str = "UPDATE"
    previous_memory: str | None = None
    message: str = ""


class HistoryRecord(Model):
    id: str
    memory_id: str
    event: str
    old_memory: str | None = None
    new_memory: str | None = None
    created_at: str = ""
    is_deleted: bool = False


class InsertJob(Model):
    """A memory-graph (mem kb) insert: `accepted`, `processing`, then `done` or `failed`."""

    id: str
    query: str
    status: str
    workspace: str | None = None  # its memory graph's workspace (the status says it, the 202 does not)
    videocaption: str | None = None
    audiocaption: str | None = None
    imagecaption: str | None = None
    error: str | None = None
    notes: dict[str, str] = {}  # why a medium got no caption, by medium
    waiting_for: str | None = None  # while `processing` waits for a store: which, and why
    chunks: int | None = None
    entities: int | None = None
    relations: int | None = None
    # once done: model_calls, input_tokens, output_tokens, cost, cache_hits, failed_chunks, failed_examples
    usage: dict[str, Any] | None = None
    created_at: str = ""
    updated_at: str = ""


class KbInsertSummary(Model):
    """One insert as `GET /mem/kb/inserts` lists it: its text's opening, not the whole text."""

    id: str
    status: str
    created_at: str
    preview: str
    chars: int
    chunks: int
    entities: int
    relations: int
    error: str | None = None


class KbInsertPage(Model):
    inserts: list[KbInsertSummary]
    total: int
    offset: int
    limit: int


class KbInsertDeleted(Model):
    """What forgetting an insert removed: its chunks, the entities only it mentioned, and how many
    communities the next community run recomputes."""

    id: str
    deleted: bool
    chunks: int
    entities: int
    communities: int


class KbAnswer(Model):
    query: str
    mode: str
    final_answer: str
    rag_memory: str = ""
    pm_used: bool = False
    pm_memory: str | None = None
    pm_relevant: bool = False


# ---------------------------------------------------------------- waiting


class TaskProgress(Model):
    """Passed to `wait(on_progress=…)` each time a task's state changes."""

    kind: Literal["parse", "table", "tree", "kb_insert"]
    task_id: str
    status: str
    stage: str | None = None
    step: int | None = None  # how far along: a parse's stage number, a table's step
    steps: int | None = None
    done: int | None = None  # rows of a table filled so far
    total: int | None = None
