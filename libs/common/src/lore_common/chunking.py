"""Token-based chunking that counts Chinese and English sensibly, offline.

Token rule (documented in docs/docdb.md): every CJK character is one token; other text counts one token
per word or punctuation mark (`\\w+` runs and single non-space symbols). Chunks hold at most
`chunk_size` tokens and repeat the last `overlap` tokens of the previous chunk. Sentence mode cuts only
at sentence ends (a sentence longer than `chunk_size` is still split).
"""

from __future__ import annotations

import re

_TOKEN = re.compile(
    r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^\W\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+|[^\w\s]", re.U
)
_SENTENCE_END = re.compile(r"(?<=[.!?。！？；])\s+|(?<=[。！？；])|\n{2,}")


def count_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


def _spans(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _TOKEN.finditer(text)]


def chunk_text(text: str, chunk_size: int = 1024, overlap: int = 50) -> list[str]:
    """Windows of `chunk_size` tokens stepping by `chunk_size - overlap`, cut at token boundaries."""
    spans = _spans(text)
    if not spans:
        return []
    size = max(1, chunk_size)
    step = max(1, size - max(0, min(overlap, size - 1)))
    chunks = []
    for start in range(0, len(spans), step):
        window = spans[start : start + size]
        chunks.append(text[window[0][0] : window[-1][1]].strip())
        if start + size >= len(spans):
            break
    return [c for c in chunks if c]


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def chunk_sentences(text: str, chunk_size: int = 1024, overlap: int = 50) -> list[str]:
    """Whole sentences packed up to `chunk_size` tokens; the overlap is carried as whole sentences."""
    chunks: list[str] = []
    current: list[tuple[str, int]] = []
    total = 0
    for sentence in split_sentences(text):
        tokens = count_tokens(sentence)
        if tokens > chunk_size:
            if current:
                chunks.append(" ".join(s for s, _ in current))
                current, total = [], 0
            chunks.extend(chunk_text(sentence, chunk_size, overlap))
            continue
        if total + tokens > chunk_size and current:
            chunks.append(" ".join(s for s, _ in current))
            carried: list[tuple[str, int]] = []
            carried_tokens = 0
            for s, t in reversed(current):
                if carried_tokens + t > overlap:
                    break
                carried.insert(0, (s, t))
                carried_tokens += t
            current, total = carried, carried_tokens
        current.append((sentence, tokens))
        total += tokens
    if current:
        chunks.append(" ".join(s for s, _ in current))
    return chunks
