"""LlamaIndex retrievers over Lore: `LoreRetriever` (a knowledge base's passages, docdb `/retrieve`) and
`LoreMemoryRetriever` (an agent's memories, mem `vg/search`). Install with `pip install
'lore-client[llamaindex]'`.

    from llama_index.core.query_engine import RetrieverQueryEngine
    engine = RetrieverQueryEngine.from_args(LoreRetriever(kb="handbook", k=4), llm=my_llm)
    answer = engine.query("What is the leave policy?")
    answer.source_nodes[0].node.metadata  # {"file": "leave.pdf", "dataset": "handbook", ...}
"""

from __future__ import annotations

from typing import Any

try:
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
except ModuleNotFoundError as exc:  # pragma: no cover - depends on the install
    raise ModuleNotFoundError(
        "lore_client.llamaindex needs LlamaIndex: pip install 'lore-client[llamaindex]'", name=exc.name
    ) from exc

from lore_client.aio import AsyncLore
from lore_client.models import Memory, Passage
from lore_client.sync import Lore


def _passage_node(kb: str, passage: Passage) -> NodeWithScore:
    metadata = {
        "file": passage.kb_name,
        "dataset": passage.dataset,
        "kb": kb,
        "score": passage.score,
    }
    node = TextNode(text=passage.content, metadata=metadata)
    if passage.source_id:
        node.id_ = passage.source_id[0]
    return NodeWithScore(node=node, score=passage.score)


def _memory_node(memory: Memory) -> NodeWithScore:
    found = {"id": memory.id, "user_id": memory.user_id, "agent_id": memory.agent_id, "run_id": memory.run_id}
    node = TextNode(
        text=memory.memory, id_=memory.id, metadata={k: v for k, v in found.items() if v is not None}
    )
    return NodeWithScore(node=node, score=memory.score)


class LoreRetriever(BaseRetriever):
    """The passages of a Lore knowledge base that best match a query, as scored LlamaIndex nodes.
    `url` defaults to `LORE_URL` (else http://127.0.0.1:8000), `api_key` to `LORE_API_KEY`."""

    def __init__(
        self,
        kb: str,
        *,
        k: int = 4,
        mode: str = "rerank",
        url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.kb, self.k, self.mode = kb, k, mode
        self.url, self.api_key, self.timeout = url, api_key, timeout

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        with Lore(self.url, self.api_key, timeout=self.timeout) as lore:
            found = lore.retrieve(self.kb, query_bundle.query_str, mode=self.mode, max_results=self.k)
        return [_passage_node(self.kb, p) for p in found.data]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        async with AsyncLore(self.url, self.api_key, timeout=self.timeout) as lore:
            found = await lore.retrieve(self.kb, query_bundle.query_str, mode=self.mode, max_results=self.k)
        return [_passage_node(self.kb, p) for p in found.data]


class LoreMemoryRetriever(BaseRetriever):
    """An agent's memories nearest to a query (mem `vg/search`), as scored LlamaIndex nodes; at least
    one of `user_id`, `agent_id`, `run_id` names whose memories."""

    def __init__(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        k: int = 10,
        url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.scope: dict[str, Any] = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id, "limit": k}
        self.url, self.api_key, self.timeout = url, api_key, timeout

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        with Lore(self.url, self.api_key, timeout=self.timeout) as lore:
            return [_memory_node(m) for m in lore.search_memories(query_bundle.query_str, **self.scope)]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        async with AsyncLore(self.url, self.api_key, timeout=self.timeout) as lore:
            return [_memory_node(m) for m in await lore.search_memories(query_bundle.query_str, **self.scope)]
