from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import openai
from litestar.testing import AsyncTestClient

from lore_common.providers.chat import ChatMessage, ChatRequest
from lore_core.settings import load_settings


async def test_fake_server_answers_the_openai_sdk(fake_llm_url: str) -> None:
    client = openai.AsyncOpenAI(api_key="sk-fake", base_url=fake_llm_url)
    httpx.post(fake_llm_url.replace("/v1", "/_reset"))
    reply = await client.chat.completions.create(
        model="fake", messages=[{"role": "user", "content": "What is Lore?"}]
    )
    text = reply.choices[0].message.content or ""
    assert text.startswith("fake reply ") and "What is Lore?" in text
    again = await client.chat.completions.create(
        model="fake", messages=[{"role": "user", "content": "What is Lore?"}]
    )
    assert again.choices[0].message.content == text  # deterministic

    stream = await client.chat.completions.create(
        model="fake", messages=[{"role": "user", "content": "stream me"}], stream=True
    )
    pieces = [chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices]
    assert "stream me" in "".join(pieces)

    vectors = await client.embeddings.create(model="fake-embed", input=["alpha beta", "alpha beta", "gamma"])
    assert len(vectors.data) == 3 and len(vectors.data[0].embedding) == 64
    assert vectors.data[0].embedding == vectors.data[1].embedding != vectors.data[2].embedding
    await client.close()


async def test_scripted_replies_and_in_flight_stats(fake_llm_url: str) -> None:
    root = fake_llm_url.removesuffix("/v1")
    async with httpx.AsyncClient() as http:
        await http.post(f"{root}/_reset")
        await http.post(f"{root}/_script", json={"replies": ['{"facts": ["likes tea"]}', "second"]})
        client = openai.AsyncOpenAI(api_key="x", base_url=fake_llm_url)
        first = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "a"}])
        second = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "b"}])
        assert json.loads(first.choices[0].message.content or "") == {"facts": ["likes tea"]}
        assert second.choices[0].message.content == "second"
        await asyncio.gather(
            *(
                client.chat.completions.create(model="m", messages=[{"role": "user", "content": str(i)}])
                for i in range(8)
            )
        )
        stats = (await http.get(f"{root}/_stats")).json()
        assert stats["calls"] == 10 and stats["peak_in_flight"] >= 1 and stats["in_flight"] == 0
        await client.close()


async def test_service_starts_with_a_key_and_base_url_pointing_at_the_fake_server(
    fake_llm_url: str, tmp_path: Path
) -> None:
    from lore_docdb.app import create_app

    settings = load_settings(
        tmp_path,
        environ={
            "LORE__DOCDB__SERVER__DATA_DIR": str(tmp_path / "data"),
            "LORE__DOCDB__LLM__PROVIDER": "openai",
            "LORE__DOCDB__LLM__API_KEY": "sk-fake-key",
            "LORE__DOCDB__LLM__BASE_URL": fake_llm_url,
            "LORE__DOCDB__LLM__MODEL": "fake-chat",
            "LORE__DOCDB__EMBEDDING_API__PROVIDER": "openai",
            "LORE__DOCDB__EMBEDDING_API__BASE_URL": fake_llm_url,
            "LORE__DOCDB__EMBEDDING_API__DIM": "64",
        },
    )
    app = create_app(settings)
    async with AsyncTestClient(app) as client:
        health = (await client.get("/health")).json()
        assert health["models"]["llm"] == "openai:fake-chat"
        assert health["models"]["embedder"].startswith("openai:")
        providers = app.state.providers
        # The providers live on the app's event loop (the test client runs it in a thread): call them there.
        on_app_loop = client.blocking_portal.call
        request = ChatRequest(messages=[ChatMessage("user", "ping")])
        reply = await asyncio.to_thread(on_app_loop, providers.llm.complete, request)
        assert "ping" in reply
        vectors = await asyncio.to_thread(on_app_loop, providers.embedder.embed, ["one", "two"])
        assert vectors.shape == (2, 64)
        config = (await client.get("/api/v1/docdb/config/llm")).json()["data"]
        assert config["api_key"] == "***" and config["base_url"] == fake_llm_url


async def test_service_starts_without_any_key(tmp_path: Path) -> None:
    from lore_docdb.app import create_app

    settings = load_settings(tmp_path, environ={"LORE__DOCDB__SERVER__DATA_DIR": str(tmp_path / "data")})
    async with AsyncTestClient(create_app(settings)) as client:
        health = (await client.get("/health")).json()
        assert health["status"] == "ok"
        assert health["models"]["llm"].startswith("offline:")
        assert health["models"]["embedder"].startswith("local:")
