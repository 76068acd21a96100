"""docdb on real providers (the fake OpenAI-compatible server) and on the offline defaults."""

from __future__ import annotations

import asyncio
from pathlib import Path

from litestar.testing import AsyncTestClient

from lore_common.providers.chat import ChatMessage, ChatRequest
from lore_core.settings import load_settings
from lore_docdb.app import create_app


async def test_service_starts_with_a_key_and_base_url_pointing_at_the_fake_server(
    fake_llm_url: str, tmp_path: Path
) -> None:
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
    settings = load_settings(tmp_path, environ={"LORE__DOCDB__SERVER__DATA_DIR": str(tmp_path / "data")})
    async with AsyncTestClient(create_app(settings)) as client:
        health = (await client.get("/health")).json()
        assert health["status"] == "ok"
        assert health["models"]["llm"].startswith("offline:")
        assert health["models"]["embedder"] == "auto"  # each KB's model is chosen at its first parse
