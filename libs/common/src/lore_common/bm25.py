"""BM25 pieces shared by docdb (a KB's chunks) and mem (a scope's memories): the tokenizer, scoring of
a small candidate set, and reciprocal rank fusion with a vector ranking.

English words are Snowball-stemmed (PyStemmer; on BEIR SciFact stemming lifts nDCG@10 from 0.667 to
0.695); Chinese is segmented with jieba (search mode, so long words also match their parts); words in
other scripts are kept whole, and Japanese kana read as character pairs."""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from lore_common.text import STOPWORDS, has_cjk, stem

_WORD = re.compile(r"[a-z0-9]+")
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")
RRF_K = 60
# Bumped when `tokenize` gives other tokens for the same text: an index saved with older ones is
# built again (docdb's KB indexes are saved on disk).
TOKENIZER_VERSION = 2
# Spaces between two Chinese characters: Chinese puts none between words, so one there is layout (a
# PDF's letter spacing) or a query typed or cut character by character (`內 文 有`). jieba segments a
# run of characters into words; characters apart by spaces stay single characters, which match none
# of the words the index holds for the same text.
_HAN_SPACES = re.compile(r"(?<=[\u4e00-\u9fff])[ \t\u3000]+(?=[\u4e00-\u9fff])")
# A word of letters and digits beyond ASCII, outside Chinese and Japanese script: without it Korean,
# Greek, Cyrillic, Arabic or Hebrew words had no token at all (a Korean heading, `α=1, 3, 5, 7`, were
# left to the vectors alone) and an accented word only its ASCII pieces (`für` as `f`, `r`).
_WORD_BEYOND_ASCII = re.compile(
    r"[^\W_\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+"
)
# Hiragana and katakana (full and half width, with the long-vowel mark): Japanese writes no spaces and
# jieba knows only Chinese words, so kana had no token and a katakana word (`コンピューター`) or a
# verb's ending matched nothing. Each run gives its overlapping character pairs, as Lucene's CJK
# bigrams do, so a word matches wherever its pairs stand, with no dictionary to ship.
_KANA_RUN = re.compile(r"[\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f]+")


def tokenize(text: str) -> list[str]:
    """English words stemmed, stopwords out; Chinese segmented by jieba (spaces between its characters
    taken out first); other words beyond ASCII whole, in lower case; kana as character pairs."""
    lowered = text.lower()
    tokens = stem([w for w in _WORD.findall(lowered) if w not in STOPWORDS])
    if lowered.isascii():
        return tokens
    if has_cjk(lowered):
        import jieba

        for run in _CJK_RUN.findall(_HAN_SPACES.sub("", lowered)):
            tokens.extend(w for w in jieba.lcut_for_search(run) if w.strip())
    tokens.extend(w for w in _WORD_BEYOND_ASCII.findall(lowered) if not w.isascii())
    for run in _KANA_RUN.findall(lowered):
        tokens.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
    return tokens


@functools.lru_cache(maxsize=65536)
def _bag(text: str) -> tuple[dict[str, int], int]:
    """A text's term counts and length, cached: a scope's memories come back for every question."""
    tokens = tokenize(text)
    counts: dict[str, int] = {}
    for token in tokens:
        counts[token] = counts.get(token, 0) + 1
    return counts, max(len(tokens), 1)  # an empty text counts one token, as in an index


def new_index() -> Any:
    """An empty bm25s index (its logger quieted: bm25s sets DEBUG on it at import)."""
    import bm25s

    logging.getLogger("bm25s").setLevel(logging.WARNING)
    return bm25s.BM25()


def scores(
    query: str, texts: Sequence[str], k1: float = 1.5, b: float = 0.75
) -> np.ndarray[Any, np.dtype[np.float64]]:
    """BM25 (Lucene's idf, as bm25s) of `query` against `texts` taken as a corpus of their own: a
    scope's memories, scored per question. Building a bm25s index per question cost 7.7 ms for 600
    memories; scoring the few query terms over cached term counts costs well under 1 ms."""
    terms = set(tokenize(query))
    if not texts or not terms:
        return np.zeros(len(texts))
    bags = [_bag(text) for text in texts]
    lengths = np.fromiter((length for _, length in bags), dtype=np.float64, count=len(bags))
    norm = k1 * (1 - b + b * lengths / max(float(lengths.mean()), 1e-9))
    total = np.zeros(len(texts))
    for term in terms:
        tf = np.fromiter((counts.get(term, 0) for counts, _ in bags), dtype=np.float64, count=len(bags))
        df = int(np.count_nonzero(tf))
        if df:
            idf = np.log(1 + (len(texts) - df + 0.5) / (df + 0.5))
            total += idf * tf / (tf + norm)
    return total


def rrf(
    rankings: Sequence[Sequence[str]], k: int = RRF_K, weights: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: score(d) = Σ w / (k + rank), ranks from 1, w = 1 unless `weights` says
    otherwise; ties keep first-seen order."""
    fused: dict[str, float] = {}
    for i, ranking in enumerate(rankings):
        weight = 1.0 if weights is None else weights[i]
        for rank, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + weight / (k + rank)
    return sorted(fused.items(), key=lambda pair: -pair[1])
