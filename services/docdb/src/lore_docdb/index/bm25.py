"""BM25 over a KB's chunks (bm25s), for the chat `rerank` mode. Chinese is segmented with jieba.

The index is derived from the chunk rows, cached per KB and rebuilt when the KB's chunks change
(bm25s indexes 10k short chunks in ~0.2 s), so a rolled-back task can never linger in it."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lore_common.providers.offline import STOPWORDS, has_cjk

_WORD = re.compile(r"[a-z0-9]+")
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")


def tokenize(text: str) -> list[str]:
    lowered = text.lower()
    tokens = [w for w in _WORD.findall(lowered) if w not in STOPWORDS]
    if has_cjk(lowered):
        import jieba

        for run in _CJK_RUN.findall(lowered):
            tokens.extend(w for w in jieba.lcut_for_search(run) if w.strip())
    return tokens


@dataclass
class Bm25Index:
    chunk_ids: list[str]
    retriever: Any = None

    @classmethod
    def build(cls, chunk_ids: Sequence[str], texts: Sequence[str]) -> Bm25Index:
        import bm25s

        index = cls(chunk_ids=list(chunk_ids))
        if texts:
            retriever = bm25s.BM25()
            retriever.index([tokenize(t) or ["\u0000"] for t in texts], show_progress=False)
            index.retriever = retriever
        return index

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        if self.retriever is None or not self.chunk_ids:
            return []
        tokens = tokenize(query)
        if not tokens:
            return []
        k = min(k, len(self.chunk_ids))
        docs, scores = self.retriever.retrieve([tokens], k=k, show_progress=False, n_threads=1)
        return [(self.chunk_ids[int(d)], float(s)) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]


class Bm25Cache:
    """The latest index per KB, rebuilt from the chunk rows whenever the KB's chunks changed."""

    def __init__(self, load_chunks: Callable[[str], Awaitable[list[tuple[str, str]]]]) -> None:
        self.load_chunks = load_chunks
        self.versions: dict[str, int] = {}
        self.indexes: dict[str, tuple[int, Bm25Index]] = {}
        self.lock = threading.Lock()

    def bump(self, kb: str) -> None:
        """The KB's chunks changed; the next `get` rebuilds."""
        with self.lock:
            self.versions[kb] = self.versions.get(kb, 0) + 1

    async def get(self, kb: str) -> Bm25Index:
        with self.lock:
            version = self.versions.get(kb, 0)
            cached = self.indexes.get(kb)
        if cached and cached[0] == version:
            return cached[1]
        rows = await self.load_chunks(kb)
        index = await asyncio.to_thread(Bm25Index.build, [r[0] for r in rows], [r[1] for r in rows])
        with self.lock:
            if self.versions.get(kb, 0) == version:
                self.indexes[kb] = (version, index)
        return index
