"""The BM25 cache under concurrent questions: one check and one build, however many are waiting."""

from __future__ import annotations

import asyncio

from lore_docdb.index.bm25 import Bm25Cache, ChunkSource

CHUNKS: list[ChunkSource] = [
    ("c1", "Marie Curie discovered polonium and radium.", "d", "curie.txt"),
    ("c2", "Lu Xun wrote A Madman's Diary.", "d", "luxun.txt"),
]


async def test_concurrent_questions_share_one_signature_check_and_one_build() -> None:
    calls = {"signature": 0, "load": 0}
    chunks = list(CHUNKS)

    async def signature(kb: str) -> tuple[tuple[str, int], ...]:
        calls["signature"] += 1
        await asyncio.sleep(0.01)
        return (("t", len(chunks)),)

    async def load(kb: str) -> list[ChunkSource]:
        calls["load"] += 1
        await asyncio.sleep(0.01)
        return list(chunks)

    cache = Bm25Cache(load, signature, check_interval=0.05)
    indexes = await asyncio.gather(*(cache.get("kb") for _ in range(32)))
    assert calls["load"] == 1 and len({id(i) for i in indexes}) == 1
    assert indexes[0].search("radium", 1)[0][0][0] == "c1"

    await asyncio.sleep(0.06)  # the check interval passed: one question checks, the rest answer
    before = calls["signature"]
    await asyncio.gather(*(cache.get("kb") for _ in range(32)))
    assert calls["signature"] == before + 1 and calls["load"] == 1

    chunks.append(("c3", "Ada Lovelace wrote the first program.", "d", "ada.txt"))
    cache.bump("kb")  # this process changed the KB: the next questions wait for one rebuild
    rebuilt = await asyncio.gather(*(cache.get("kb") for _ in range(32)))
    assert calls["load"] == 2 and len({id(i) for i in rebuilt}) == 1
    assert rebuilt[0].search("Lovelace program", 1)[0][0][0] == "c3"
