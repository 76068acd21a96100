"""Score each local embedding candidate: nDCG@10 on BEIR SciFact (English), recall@10 on CMRC 2018
(Chinese), and sentences/s. Reads the datasets bench_data.py names; prints a table and, last, one JSON
line.

    uv run python bench/embedders.py [--limit-queries N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from bench_data import DATA

from lore_common.providers.embedders import LOCAL_MODELS, Embedder, HashingEmbedder, LocalEmbedder


def load(folder: Path, split: str) -> tuple[dict[str, str], dict[str, str], dict[str, dict[str, int]]]:
    corpus = {}
    for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        corpus[doc["_id"]] = (doc.get("title", "") + ". " + doc["text"]).strip(". ")
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for row in (folder / "qrels" / f"{split}.tsv").read_text().splitlines()[1:]:
        qid, did, score = row.split("\t")
        qrels[qid][did] = int(score)
    queries = {}
    for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        if q["_id"] in qrels:
            queries[q["_id"]] = q["text"]
    return corpus, queries, qrels


def ndcg_at_10(ranked: list[str], relevant: dict[str, int]) -> float:
    gains = [relevant.get(doc, 0) for doc in ranked[:10]]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


async def evaluate(embedder: Embedder, folder: Path, split: str, limit: int | None) -> dict[str, float]:
    corpus, queries, qrels = load(folder, split)
    ids = list(corpus)
    started = time.perf_counter()
    matrix = await embedder.embed([corpus[i] for i in ids])
    doc_seconds = time.perf_counter() - started
    qids = list(queries)[:limit] if limit else list(queries)
    started = time.perf_counter()
    qvecs = np.stack([await embedder.embed_query(queries[q]) for q in qids])
    query_seconds = time.perf_counter() - started
    scores = qvecs @ matrix.T
    ndcgs, recalls = [], []
    for row, qid in enumerate(qids):
        top = np.argsort(-scores[row])[:10]
        ranked = [ids[i] for i in top]
        ndcgs.append(ndcg_at_10(ranked, qrels[qid]))
        relevant = set(qrels[qid])
        recalls.append(len(relevant & set(ranked)) / len(relevant))
    return {
        "ndcg10": float(np.mean(ndcgs)),
        "recall10": float(np.mean(recalls)),
        "docs_per_s": len(ids) / doc_seconds,
        "queries_per_s": len(qids) / query_seconds,
        "docs": len(ids),
        "queries": len(qids),
    }


async def sentences_per_s(embedder: Embedder) -> float:
    sentences = [
        f"Sentence number {i} talks about proteins, cells and the immune response." for i in range(256)
    ]
    await embedder.embed(sentences[:8])  # load weights outside the timing
    started = time.perf_counter()
    await embedder.embed(sentences)
    return len(sentences) / (time.perf_counter() - started)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit-queries", type=int, default=None)
    parser.add_argument("--models", default=",".join([*LOCAL_MODELS, "hashing"]))
    args = parser.parse_args()
    figures: dict[str, Any] = {}
    rows = []
    for model in args.models.split(","):
        embedder: Embedder = HashingEmbedder(512) if model == "hashing" else LocalEmbedder(model, threads=2)
        speed = await sentences_per_s(embedder)
        en = await evaluate(embedder, DATA / "scifact", "test", args.limit_queries)
        zh = await evaluate(embedder, DATA / "cmrc2018", "dev", args.limit_queries)
        await embedder.aclose()
        key = model.replace("-", "_")
        figures.update(
            {
                f"{key}_scifact_ndcg10": round(en["ndcg10"], 4),
                f"{key}_scifact_recall10": round(en["recall10"], 4),
                f"{key}_cmrc2018_recall10": round(zh["recall10"], 4),
                f"{key}_cmrc2018_ndcg10": round(zh["ndcg10"], 4),
                f"{key}_sentences_per_s": round(speed, 1),
                f"{key}_scifact_docs_per_s": round(en["docs_per_s"], 1),
            }
        )
        rows.append((model, en["ndcg10"], zh["recall10"], speed, en["docs_per_s"]))
        print(
            f"{model:10s} scifact nDCG@10 {en['ndcg10']:.4f}  cmrc2018 recall@10 {zh['recall10']:.4f}  "
            f"{speed:7.1f} sentences/s  {en['docs_per_s']:6.1f} abstracts/s",
            flush=True,
        )
    best = max((r for r in rows if r[0] != "hashing"), key=lambda r: r[1] + r[2], default=rows[0])
    figures["chosen_default_is_" + best[0].replace("-", "_")] = 1
    figures["scifact_bm25_anchor_ndcg10"] = 0.665
    figures["chosen_vs_bm25_anchor_ratio"] = round(best[1] / 0.665, 4)
    print(f"default by nDCG@10 + recall@10: {best[0]}")
    print(json.dumps(figures))


if __name__ == "__main__":
    asyncio.run(main())
