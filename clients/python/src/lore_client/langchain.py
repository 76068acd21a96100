"""LangChain retrievers over Lore: `LoreRetriever` (a knowledge base's passages, docdb `/retrieve`) and
`LoreMemoryRetriever` (an agent's memories, mem `vg/search`). Install with `pip install
'lore-client[langchain]'`.

    retriever = LoreRetriever(kb="handbook", k=4)
    docs = retriever.invoke("What is the leave policy?")   # or: await retriever.ainvoke(...)
    docs[0].metadata  # {"file": "leave.pdf", "dataset": "handbook", "kb": "handbook", "score": 0.83, ...}
"""

from __future__ import annotations

from typing import Any

try:
    from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
except ModuleNotFoundError as exc:  # pragma: no cover - depends on the install
    raise ModuleNotFoundError(
        "lore_client.langchain needs LangChain: pip install 'lore-client[langchain]'", name=exc.name
    ) from exc

from lore_client.aio import AsyncLore
from lore_client.models import Memory, Passage
from lore_client.sync import Lore


def passage_metadata(kb: str, passage: Passage) -> dict[str, Any]:
    """What a retrieved passage says about itself: its file, dataset, knowledge base, score and chunk."""
    return {
        "file": passage.kb_name,
        "dataset": passage.dataset,
        "kb": kb,
        "score": passage.score,
        "chunk_id": passage.source_id[0] if passage.source_id else None,
    }


def memory_metadata(memory: Memory) -> dict[str, Any]:
    found = {
        "id": memory.id,
        "score": memory.score,
        "user_id": memory.user_id,
        "agent_id": memory.agent_id,
        "run_id": memory.run_id,
        "created_at": memory.created_at,
    }
    return {key: value for key, value in found.items() if value is not None}


class _LoreConnection(BaseRetriever):
    url: str | None = None
    """The gateway's address (default `LORE_URL`, else http://127.0.0.1:8000)."""
    api_key: str | None = None
    """Sent as `Authorization: Bearer` (default `LORE_API_KEY`)."""
    timeout: float = 60.0


class LoreRetriever(_LoreConnection):
    """The passages of a Lore knowledge base that best match a query, as LangChain `Document`s."""

    kb: str
    """The knowledge base to search."""
    k: int = 4
    """How many passages to return (`invoke(query, k=…)` overrides it for one call)."""
    mode: str = "rerank"
    """`rerank` (BM25 and vectors fused, then reranked when the service has a reranker) or `naive`
    (vectors and graph)."""

    def _documents(self, passages: list[Passage]) -> list[Document]:
        return [
            Document(
                page_content=p.content,
                metadata=passage_metadata(self.kb, p),
                id=p.source_id[0] if p.source_id else None,
            )
            for p in passages
        ]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        with Lore(self.url, self.api_key, timeout=self.timeout) as lore:
            found = lore.retrieve(self.kb, query, mode=self.mode, max_results=int(kwargs.get("k", self.k)))
        return self._documents(found.data)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        async with AsyncLore(self.url, self.api_key, timeout=self.timeout) as lore:
            found = await lore.retrieve(
                self.kb, query, mode=self.mode, max_results=int(kwargs.get("k", self.k))
            )
        return self._documents(found.data)


class LoreMemoryRetriever(_LoreConnection):
    """An agent's memories nearest to a query (mem `vg/search`), as LangChain `Document`s; at least one
    of `user_id`, `agent_id`, `run_id` names whose memories."""

    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    k: int = 10
    threshold: float | None = None

    def _scope(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        return {
            "user_id": self.user_id,
            "agent_id": self.agent_id,
            "run_id": self.run_id,
            "limit": int(kwargs.get("k", self.k)),
            "threshold": self.threshold,
        }

    @staticmethod
    def _documents(memories: list[Memory]) -> list[Document]:
        return [Document(page_content=m.memory, metadata=memory_metadata(m), id=m.id) for m in memories]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        with Lore(self.url, self.api_key, timeout=self.timeout) as lore:
            return self._documents(lore.search_memories(query, **self._scope(kwargs)))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        async with AsyncLore(self.url, self.api_key, timeout=self.timeout) as lore:
            return self._documents(await lore.search_memories(query, **self._scope(kwargs)))
