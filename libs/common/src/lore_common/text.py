"""Text helpers shared by retrieval, BM25, graph building and the offline model: sentences, content
words, stop words, and Chinese segmentation by jieba (its dictionary loads once, on first use)."""

from __future__ import annotations

import re
import threading
from typing import Any

SENTENCE_END = re.compile(r"(?<=[.!?。！？；;])\s*|\n+")
WORD = re.compile(r"[A-Za-z][A-Za-z0-9'\-]*|[0-9]+(?:\.[0-9]+)?")
CJK = re.compile(r"[\u4e00-\u9fff]")

STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have how i if in into is it
    its me my no not of on or our she he so than that the their them then there these they this to too was we
    were what when where which who whom why will with would you your yes about also after all any because
    before being between both during each few more most other over same some such only own very just
    should now up down out off again further once here let's i'm i've it's don't please tell know like
    want think really much many get got make made use used""".split()
)

_jieba_lock = threading.Lock()
_jieba_ready = False


def jieba() -> Any:
    """The jieba module, its dictionary loaded (0.65 s, once per process) and its logging quiet."""
    global _jieba_ready
    import jieba as module
    import jieba.posseg  # part-of-speech tagging, for Chinese entities

    with _jieba_lock:
        if not _jieba_ready:
            module.setLogLevel(60)
            module.initialize()
            _jieba_ready = True
    return module


def has_cjk(text: str) -> bool:
    return bool(CJK.search(text))


def sentences(text: str) -> list[str]:
    return [s.strip() for s in SENTENCE_END.split(text) if s and s.strip()]


def keywords(text: str) -> list[str]:
    """Content words, lower-cased: English words minus stop words, Chinese words by jieba."""
    words = [w.lower() for w in WORD.findall(text) if w.lower() not in STOPWORDS and len(w) > 1]
    if has_cjk(text):
        words.extend(w for w in jieba().lcut(text) if CJK.search(w) and len(w) > 1)
    return words
