"""The BM25 cache under concurrent questions (one build, however many are waiting), and its check of
the KB's shared version, which another replica moves."""

from __future__ import annotations

import asyncio

from lore_docdb.index.bm25 import Bm25Cache, ChunkSource

CHUNKS: list[ChunkSource] = [
    ("c1", "Marie Curie discovered polonium and radium.", "d", "curie.txt"),
    ("c2", "Lu Xun wrote A Madman's Diary.", "d", "luxun.txt"),
]


async def test_concurrent_questions_share_one_build_and_follow_the_shared_version() -> None:
    calls = {"version": 0, "load": 0}
    chunks = list(CHUNKS)
    shared = {"kb": 1}

    async def version(kb: str) -> int:
        calls["version"] += 1
        return shared[kb]

    async def load(kb: str) -> list[ChunkSource]:
        calls["load"] += 1
        await asyncio.sleep(0.01)
        return list(chunks)

    cache = Bm25Cache(load, version)
    indexes = await asyncio.gather(*(cache.get("kb") for _ in range(32)))
    assert calls["load"] == 1 and len({id(i) for i in indexes}) == 1
    assert indexes[0].search("radium", 1)[0][0][0] == "c1"
    await asyncio.gather(*(cache.get("kb") for _ in range(32)))
    assert calls["load"] == 1 and calls["version"] == 64  # every question checks; none rebuilds

    chunks.append(("c3", "Ada Lovelace wrote the first program.", "d", "ada.txt"))
    cache.bump("kb")  # this process changed the KB: the next questions wait for one rebuild
    rebuilt = await asyncio.gather(*(cache.get("kb") for _ in range(32)))
    assert calls["load"] == 2 and len({id(i) for i in rebuilt}) == 1
    assert rebuilt[0].search("Lovelace program", 1)[0][0][0] == "c3"

    # Another replica committed chunks: its version moved, and the very next question sees them.
    chunks.append(("c4", "Grace Hopper built the first compiler.", "d", "hopper.txt"))
    shared["kb"] = 2
    assert (await cache.get("kb")).search("Hopper compiler", 1)[0][0][0] == "c4"
    assert calls["load"] == 3
