"""BM25 over a KB's chunks (bm25s), for the chat `rerank` mode. Chinese is segmented with jieba.

The index is derived from the chunk rows, cached per KB and rebuilt when the KB's chunks change
(bm25s indexes 10k short chunks in ~0.2 s), so a rolled-back task can never linger in it."""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
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


@dataclass
class Bm25Cache:
    """Latest index per KB, tagged with the KB's chunk version."""

    versions: dict[str, int] = field(default_factory=dict)
    indexes: dict[str, tuple[int, Bm25Index]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def bump(self, kb: str) -> None:
        with self.lock:
            self.versions[kb] = self.versions.get(kb, 0) + 1

    def get(self, kb: str) -> Bm25Index | None:
        with self.lock:
            cached = self.indexes.get(kb)
            if cached and cached[0] == self.versions.get(kb, 0):
                return cached[1]
        return None

    def put(self, kb: str, version: int, index: Bm25Index) -> None:
        with self.lock:
            self.indexes[kb] = (version, index)

    def version(self, kb: str) -> int:
        with self.lock:
            return self.versions.get(kb, 0)

    def drop(self, kb: str) -> None:
        with self.lock:
            self.indexes.pop(kb, None)
            self.versions[kb] = self.versions.get(kb, 0) + 1
