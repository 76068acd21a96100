"""The BM25 cache: one build however many questions wait, its check of the KB's shared version (which
another replica moves), and its copy on disk, which the next start maps instead of rebuilding."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from lore_docdb.index import bm25
from lore_docdb.index.bm25 import Bm25Cache, ChunkSource

CHUNKS = [
    ChunkSource("c1", "Marie Curie discovered polonium and radium."),
    ChunkSource("c2", "Lu Xun wrote A Madman's Diary."),
]


class FakeKb:
    """A KB's chunk rows and stored version, counting how often each is read."""

    def __init__(self) -> None:
        self.chunks = list(CHUNKS)
        self.version = 1
        self.loads = 0
        self.version_reads = 0

    async def passages(self, kb: str) -> AsyncIterator[list[ChunkSource]]:
        self.loads += 1
        await asyncio.sleep(0.01)
        for start in range(0, len(self.chunks), 2):  # in batches, as the store streams them
            yield self.chunks[start : start + 2]

    async def stored_version(self, kb: str) -> int:
        self.version_reads += 1
        return self.version

    def add(self, chunk_id: str, text: str) -> None:
        self.chunks.append(ChunkSource(chunk_id, text))
        self.version += 1


def best(cache_index: bm25.Bm25Index, query: str) -> str:
    return cache_index.search(query, 1)[0][0]


async def test_concurrent_questions_share_one_build_and_follow_the_shared_version(tmp_path: Path) -> None:
    kb = FakeKb()
    cache = Bm25Cache(kb.passages, kb.stored_version, tmp_path, shared=True)
    indexes = await asyncio.gather(*(cache.get("kb") for _ in range(32)))
    assert kb.loads == 1 and len({id(i) for i in indexes}) == 1
    assert best(indexes[0], "radium") == "c1"
    await asyncio.gather(*(cache.get("kb") for _ in range(32)))
    assert kb.loads == 1  # every question checks the version; none rebuilds

    kb.add("c3", "Ada Lovelace wrote the first program.")
    cache.bump("kb")  # this process changed the KB: the next questions wait for one rebuild
    rebuilt = await asyncio.gather(*(cache.get("kb") for _ in range(32)))
    assert kb.loads == 2 and len({id(i) for i in rebuilt}) == 1
    assert best(rebuilt[0], "Lovelace program") == "c3"

    # Another replica committed chunks: its version moved, and the very next question sees them.
    kb.add("c4", "Grace Hopper built the first compiler.")
    assert best(await cache.get("kb"), "Hopper compiler") == "c4"
    assert kb.loads == 3


async def test_a_restart_maps_the_saved_index_instead_of_reading_every_chunk(tmp_path: Path) -> None:
    kb = FakeKb()
    first = Bm25Cache(kb.passages, kb.stored_version, tmp_path)
    assert best(await first.get("kb"), "polonium") == "c1"
    assert kb.loads == 1

    restarted = Bm25Cache(kb.passages, kb.stored_version, tmp_path)
    index = await restarted.get("kb")
    assert kb.loads == 1  # read from disk: no chunk row was read again
    assert best(index, "Madman Diary") == "c2"
    assert isinstance(index.retriever.scores["data"], np.memmap)  # mapped, not read into memory

    # The KB changed while the service was down: the stored version moved, the old copy is not used.
    kb.add("c3", "Ada Lovelace wrote the first program.")
    again = Bm25Cache(kb.passages, kb.stored_version, tmp_path)
    assert best(await again.get("kb"), "Lovelace") == "c3" and kb.loads == 2
    assert [p.name for p in (tmp_path / "kb" / "bm25").iterdir()] == [str(kb.version)]  # old copy removed


async def test_a_damaged_copy_on_disk_is_rebuilt(tmp_path: Path) -> None:
    kb = FakeKb()
    await Bm25Cache(kb.passages, kb.stored_version, tmp_path).get("kb")
    saved = tmp_path / "kb" / "bm25" / "1"
    (saved / "params.index.json").write_text("{not json")
    index = await Bm25Cache(kb.passages, kb.stored_version, tmp_path).get("kb")
    assert best(index, "radium") == "c1" and kb.loads == 2


async def test_a_large_kb_is_indexed_in_a_child_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past CHILD_BUILD_CHUNKS the rows are spilled to a file and a child builds and saves the index:
    its tokens never enter the service's heap. The child's index answers as the in-process one does."""
    monkeypatch.setattr(bm25, "CHILD_BUILD_CHUNKS", 2)
    kb = FakeKb()
    kb.chunks += [ChunkSource(f"n{i}", f"note {i} on lamps and wicks") for i in range(5)]
    kb.add("c9", "The keeper of the lighthouse trimmed the wicks at midnight.")
    index = await Bm25Cache(kb.passages, kb.stored_version, tmp_path).get("kb")
    assert len(index.ids) == len(kb.chunks)
    assert best(index, "lighthouse keeper") == "c9" and best(index, "polonium") == "c1"
    assert not [p for p in (tmp_path / "kb" / "bm25").iterdir() if p.name.startswith(".")]  # no scratch left


async def test_builds_of_two_versions_side_by_side_both_finish(tmp_path: Path) -> None:
    """Two datasets' parses of one KB end together: each saves its version and neither removes the
    other's copy while it is being written or read."""
    kb = FakeKb()
    first = Bm25Cache(kb.passages, kb.stored_version, tmp_path)
    second = Bm25Cache(kb.passages, kb.stored_version, tmp_path)
    one = asyncio.ensure_future(first.get("kb"))
    await asyncio.sleep(0)  # the first build has read version 1 and is reading the rows
    kb.add("c3", "Ada Lovelace wrote the first program.")
    both = await asyncio.gather(one, second.get("kb"))
    assert best(both[1], "Lovelace") == "c3" and best(both[0], "radium") == "c1"
    assert str(kb.version) in [p.name for p in (tmp_path / "kb" / "bm25").iterdir()]
