"""Does indexing a chunk's heading path help retrieval? BEIR SciFact's abstracts as Markdown (each
title a `#` heading above its abstract), cut by docdb's structure-following chunker into small chunks,
so most chunks do not hold the title in their own text; then every test query with docdb's retrieval
math, in-process: `naive` = cosine over the minilm vectors (top 100), `rerank` = docdb's score fusion
for minilm (0.7 × cosine + 0.3 × BM25 / best BM25 over 50 vector and 100 BM25 candidates). Four
variants: the heading path in front of the text for the vectors, for BM25, both or neither. The
corpus is every abstract relevant to a test query plus random others up to `--docs`.

    uv run python bench/heading_paths.py [--chunk-size 64] [--docs 1500]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import time
from collections import defaultdict
from typing import Any

import numpy as np
from bench_data import DATA

from lore_common.providers.embedders import LocalEmbedder
from lore_common.structured_chunks import chunk_structured
from lore_docdb.chat.retrieval import Hit, fuse_scores
from lore_docdb.index.bm25 import Bm25Index, ChunkSource


def ndcg10(ranked: list[str], relevant: dict[str, int]) -> float:
    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def prefixed(text: str, path: list[str]) -> str:
    return " > ".join(path) + "\n\n" + text if path else text


async def run(size: int, n_docs: int) -> dict[str, Any]:
    folder = DATA / "scifact"
    corpus = [json.loads(line) for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for row in (folder / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, did, score = row.split("\t")
        qrels[qid][did] = int(score)
    lines = (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    queries = {q["_id"]: q["text"] for q in map(json.loads, lines) if q["_id"] in qrels}
    relevant = {d for r in qrels.values() for d in r}
    others = [d for d in corpus if d["_id"] not in relevant]
    random.Random(7).shuffle(others)
    docs = [d for d in corpus if d["_id"] in relevant] + others[: max(0, n_docs - len(relevant))]
    chunks = [
        (d["_id"], c.text, c.heading_path)
        for d in docs
        for c in chunk_structured(f"# {d['title']}\n\n{d['text']}", size, 10)
    ]
    untitled = sum(1 for c in chunks if not c[1].startswith("#"))
    print(
        f"{len(docs)} abstracts, {len(chunks)} chunks of <= {size} tokens, {untitled} without the title",
        flush=True,
    )

    embedder = LocalEmbedder("minilm", threads=2)
    started = time.perf_counter()
    plain = await embedder.embed([c[1] for c in chunks])
    with_path = await embedder.embed([prefixed(c[1], c[2]) for c in chunks])
    print(f"embedded twice in {time.perf_counter() - started:.0f} s", flush=True)
    query_vectors = {q: await embedder.embed_query(text) for q, text in queries.items()}
    await embedder.aclose()
    bm25 = {
        "plain": Bm25Index.build([ChunkSource(str(i), c[1]) for i, c in enumerate(chunks)]),
        "path": Bm25Index.build([ChunkSource(str(i), prefixed(c[1], c[2])) for i, c in enumerate(chunks)]),
    }
    figures: dict[str, Any] = {"chunk_size": size, "documents": len(docs), "chunks": len(chunks)}
    for vector_side, vectors in (("plain", plain), ("path", with_path)):
        for bm25_side, index in bm25.items():
            naive, rerank = [], []
            for qid, text in queries.items():
                similarity = vectors @ query_vectors[qid]
                top = np.argsort(-similarity)[:100]
                vector_hits = [Hit(str(i), float(similarity[i])) for i in top]
                ranked = list(dict.fromkeys(chunks[int(h.chunk_id)][0] for h in vector_hits))
                naive.append(ndcg10(ranked, qrels[qid]))
                bm25_hits = [Hit(cid, s) for cid, s in index.search(text, 100)]
                fused = fuse_scores(vector_hits[:50], bm25_hits, 0.7)
                ranked = list(dict.fromkeys(chunks[int(cid)][0] for cid, _ in fused))
                rerank.append(ndcg10(ranked, qrels[qid]))
            key = f"vectors_{vector_side}_bm25_{bm25_side}"
            figures[f"{key}_naive_ndcg10"] = round(sum(naive) / len(naive), 4)
            figures[f"{key}_rerank_ndcg10"] = round(sum(rerank) / len(rerank), 4)
            print(
                f"vectors {vector_side:5s} bm25 {bm25_side:5s}: naive {figures[f'{key}_naive_ndcg10']:.4f}  "
                f"rerank {figures[f'{key}_rerank_ndcg10']:.4f}",
                flush=True,
            )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunk-size", type=int, default=64)
    parser.add_argument("--docs", type=int, default=1500)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.chunk_size, args.docs))))


if __name__ == "__main__":
    main()
