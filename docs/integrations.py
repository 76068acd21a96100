"""The snippets of docs/integrations.md, as one script the suite runs against a real stack
(clients/python/tests/test_integrations.py): `LORE_URL` is the gateway, `LORE_KB` a parsed knowledge
base, `LORE_USER` a user with memories. The docs page shows the parts between the section markers."""

# ruff: noqa: E402  (each section imports what it uses, as a reader copying it needs)
from __future__ import annotations

import asyncio
import os

LORE_URL = os.environ.get("LORE_URL", "http://127.0.0.1:8000")
KB = os.environ.get("LORE_KB", "handbook")
USER = os.environ.get("LORE_USER", "alice")

# --8<-- [start:openai]
from openai import OpenAI

client = OpenAI(base_url=f"{LORE_URL}/v1", api_key=os.environ.get("LORE_API_KEY", "none"))
print([model.id for model in client.models.list()])  # every knowledge base, and "mem:kb"

question = {"role": "user", "content": "Who developed the first compiler?"}
answer = client.chat.completions.create(model=KB, messages=[question])
message = answer.choices[0].message
print(message.content)  # the answer, then "Sources:" and one "[n] file (dataset)" line per source
print(message.model_extra["citations"])  # [{"index": 1, "title": "hopper.md", "dataset": ..., "url": ...}]
# --8<-- [end:openai]

# --8<-- [start:openai-stream]
stream = client.chat.completions.create(
    model=f"{KB}:rerank",  # or extra_body={"query_mode": "rerank"}
    messages=[
        question,
        {"role": "assistant", "content": message.content},
        {"role": "user", "content": "What language did her work lead to?"},
    ],
    stream=True,
)
for chunk in stream:
    choice = chunk.choices[0]
    print(choice.delta.content or "", end="", flush=True)
    if choice.finish_reason == "stop":
        print("\n", choice.delta.model_extra["citations"])
# --8<-- [end:openai-stream]

# --8<-- [start:langchain]
from lore_client.langchain import LoreMemoryRetriever, LoreRetriever

retriever = LoreRetriever(url=LORE_URL, kb=KB, k=4)  # mode="rerank" for BM25 + vectors, reranked
for doc in retriever.invoke("Who developed the first compiler?"):
    print(doc.metadata["file"], doc.metadata["score"], doc.page_content[:60])

memories = LoreMemoryRetriever(url=LORE_URL, user_id=USER, k=5)
print([doc.page_content for doc in asyncio.run(memories.ainvoke("what do I eat?"))])
# --8<-- [end:langchain]

# --8<-- [start:llamaindex]
from llama_index.core.llms import MockLLM  # any LlamaIndex LLM: OpenAI, Ollama, ...
from llama_index.core.query_engine import RetrieverQueryEngine

from lore_client.llamaindex import LoreRetriever as LoreNodes

engine = RetrieverQueryEngine.from_args(LoreNodes(KB, url=LORE_URL, k=4), llm=MockLLM())
response = engine.query("Who developed the first compiler?")
for source in response.source_nodes:
    print(source.node.metadata["file"], round(source.score or 0, 3))
# --8<-- [end:llamaindex]
