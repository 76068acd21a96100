from __future__ import annotations

import asyncio
import json

import httpx


async def test_fake_server_answers_the_openai_sdk(fake_llm_url: str) -> None:
    import openai  # here, not at module level: every xdist worker collects this module

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
    import openai

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
