"""The LangChain and LlamaIndex retrievers (`lore-client[langchain]`, `lore-client[llamaindex]`) over a
real knowledge base and a user's memories: LangChain's own standard retriever tests, and a LlamaIndex
query engine whose model is the fake OpenAI-compatible server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_tests.integration_tests import RetrieversIntegrationTests

from lore_client import Lore
from lore_client.langchain import LoreMemoryRetriever
from lore_client.langchain import LoreRetriever as LangChainRetriever
from lore_common.testing.processes import start_fake_llm

from .conftest import ROOT, Stack

# One worker runs the modules that use the session `stack` (conftest.py), so lore-up starts once.
pytestmark = pytest.mark.together("client-stack")

PEOPLE = ROOT / "examples" / "people"
MORE_PEOPLE = {
    "lovelace.md": "# Ada Lovelace\n\nAda Lovelace wrote the first program for the Analytical Engine.\n",
    "turing.md": "# Alan Turing\n\nAlan Turing described the universal machine that computes any program.\n",
}


@pytest.fixture(scope="module")
def people(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A parsed knowledge base of four people, one passage each (LangChain's tests ask for three)."""
    name = f"people-{uuid.uuid4().hex[:8]}"
    more = tmp_path_factory.mktemp("more-people")
    for filename, text in MORE_PEOPLE.items():
        (more / filename).write_text(text)
    with Lore(stack.url) as lore:
        lore.create_dataset(name)
        lore.upload(name, [PEOPLE, more])
        lore.create_knowledge_base(name)
        lore.wait(lore.parse(name, [name]).tasks[0], timeout=60)
    return name


class TestLangChainStandardRetriever(RetrieversIntegrationTests):
    params: dict[str, Any]

    @pytest.fixture(autouse=True, scope="class")
    @classmethod
    def _knowledge_base(cls, stack: Stack, people: str) -> None:
        cls.params = {"kb": people, "url": stack.url}

    @property
    def retriever_constructor(self) -> type[LangChainRetriever]:
        return LangChainRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return self.params

    @property
    def retriever_query_example(self) -> str:
        return "Who developed the first compiler?"


def test_langchain_documents_carry_file_dataset_and_score(stack: Stack, people: str) -> None:
    retriever = LangChainRetriever(kb=people, url=stack.url, k=2)
    docs = retriever.invoke("Marie Curie polonium")
    assert docs[0].metadata["file"] == "curie.md" and docs[0].metadata["dataset"] == people
    assert docs[0].metadata["score"] > docs[1].metadata["score"] >= 0
    assert "Curie" in docs[0].page_content and docs[0].id == docs[0].metadata["chunk_id"]


async def test_langchain_memory_retriever_finds_a_users_memories(stack: Stack) -> None:
    user = f"lc-{uuid.uuid4().hex[:8]}"
    with Lore(stack.url) as lore:
        lore.add_memory("I am allergic to peanuts.", user_id=user, infer=False)
    docs = await LoreMemoryRetriever(url=stack.url, user_id=user, k=3).ainvoke("peanut allergy")
    assert docs and "peanuts" in docs[0].page_content and docs[0].metadata["user_id"] == user


@pytest.fixture(scope="module")
def fake_llm_base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server, url = start_fake_llm(tmp_path_factory.mktemp("llamaindex-llm"))
    try:
        yield url
    finally:
        server.stop()


def test_a_llamaindex_query_engine_answers_from_a_knowledge_base(
    stack: Stack, people: str, fake_llm_base: str
) -> None:
    from llama_index.core.query_engine import RetrieverQueryEngine

    from lore_client.llamaindex import LoreRetriever

    engine = RetrieverQueryEngine.from_args(
        LoreRetriever(people, url=stack.url, k=2), llm=_fake_llm(fake_llm_base)
    )
    answer = engine.query("Who developed the first compiler?")
    assert str(answer).startswith("fake reply")  # the model answered, from the prompt LlamaIndex built
    top = answer.source_nodes[0]
    assert top.node.metadata["file"] == "hopper.md" and top.score and top.score > 0
    assert "first compiler" in top.node.get_content()


async def test_llamaindex_retrievers_search_asynchronously(stack: Stack, people: str) -> None:
    from lore_client.llamaindex import LoreMemoryRetriever, LoreRetriever

    nodes = await LoreRetriever(people, url=stack.url, k=1).aretrieve("Marie Curie polonium")
    assert [n.node.metadata["file"] for n in nodes] == ["curie.md"]
    user = f"li-{uuid.uuid4().hex[:8]}"
    with Lore(stack.url) as lore:
        lore.add_memory("My favourite colour is teal.", user_id=user, infer=False)
    memories = await LoreMemoryRetriever(user_id=user, url=stack.url).aretrieve("favourite colour")
    assert memories and "teal" in memories[0].node.get_content()


def _fake_llm(base_url: str) -> Any:
    """A LlamaIndex LLM that asks the fake OpenAI-compatible server (any LLM of LlamaIndex's would do)."""
    from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
    from llama_index.core.llms.callbacks import llm_completion_callback
    from openai import OpenAI

    client = OpenAI(base_url=base_url, api_key="sk-fake")

    class FakeModel(CustomLLM):
        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name="fake")

        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            reply = client.chat.completions.create(
                model="fake", messages=[{"role": "user", "content": prompt}]
            )
            return CompletionResponse(text=reply.choices[0].message.content or "")

        @llm_completion_callback()
        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            raise NotImplementedError

    return FakeModel()


def test_the_integrations_page_snippets_run(stack: Stack, people: str) -> None:
    """docs/integrations.md shows parts of docs/integrations.py: the whole script runs against a stack."""
    import os
    import subprocess
    import sys

    user = f"docs-{uuid.uuid4().hex[:8]}"
    with Lore(stack.url) as lore:
        lore.add_memory("I eat no meat.", user_id=user, infer=False)
    env = {**os.environ, "LORE_URL": stack.url, "LORE_KB": people, "LORE_USER": user}
    env.pop("LORE_API_KEY", None)
    done = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "integrations.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"'{people}'" in done.stdout and "'mem:kb'" in done.stdout  # the models
    assert "Sources:\n[1] hopper.md" in done.stdout  # the cited answer, plain and streamed
    assert "'title': 'hopper.md'" in done.stdout
    assert "hopper.md" in done.stdout.split("I eat no meat")[0]  # LangChain's documents, then memories
    assert done.stdout.rstrip().splitlines()[-4].startswith("hopper.md")  # LlamaIndex's best source
