"""Retrieval quality on BEIR SciFact: the 5,183 abstracts uploaded as files to a real docdb, parsed in
mode 1 with the local embedding model, then every test query through `/retrieve` in `naive` and
`rerank` modes. Prints nDCG@10 and recall@100 of each. Anchor: BEIR's published BM25 nDCG@10 on
SciFact is 0.665; goal: rerank >= 0.68.

With `--vector-store pgvector` the same run is repeated on PostgreSQL with pgvector (relational rows and
vectors in one database) after the Qdrant-local run, and both are printed side by side: nDCG@10 must
match within 0.005 (pgvector's HNSW is approximate; `/retrieve` asks for ef = top_k × ef_multiplier).
PostgreSQL is `--postgres-url`, else the server at 127.0.0.1:5432 when it has pgvector, else a private
one from the `pgserver` package.

    uv run python bench/retrieval.py [--limit-docs N] [--vector-store qdrant|pgvector]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import shutil
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import httpx
from bench_data import DATA as BENCH_DATA

from lore_common.servers import postgres, prepare_databases
from lore_common.testing.processes import start_service, wait_task

DATA = BENCH_DATA / "scifact"
DS = "/api/v1/docdb/files/raw-files/datasets"
KB = "/api/v1/docdb/files/knowledge-bases"
ANCHOR = 0.665


def ndcg10(ranked: list[str], relevant: dict[str, int]) -> float:
    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def run(
    label: str,
    env: dict[str, str],
    corpus: list[dict[str, str]],
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
) -> dict[str, float]:
    """Upload and parse the corpus into a fresh docdb, then ask every query in both modes."""
    work = Path(tempfile.mkdtemp(prefix="lore-bench-retrieval-"))
    docdb, base = start_service("docdb", work, {"LORE__DOCDB__GRAPH_STORE__ENABLED": "false", **env})
    figures: dict[str, float] = {}
    try:
        with httpx.Client(base_url=base, timeout=600) as client:
            client.post(DS, json={"name": "scifact"})
            for start in range(0, len(corpus), 250):
                files = [
                    ("files", (f"{d['_id']}.txt", f"{d.get('title', '')}\n\n{d['text']}".encode()))
                    for d in corpus[start : start + 250]
                ]
                client.post(f"{DS}/scifact/files", files=files).raise_for_status()
            client.post(KB, json={"name": "scifact"})
            started = time.perf_counter()
            reply = client.post(f"{KB}/scifact/parse", json={"datasets": ["scifact"], "mode": 1}).json()
            task_id = reply["data"]["tasks"][0]["task_id"]
            task = wait_task(client, task_id, timeout=3600)
            if task["status"] != "completed":
                raise SystemExit(f"parse failed: {task}")
            figures["parse_seconds"] = round(time.perf_counter() - started, 1)
            print(f"[{label}] parsed {len(corpus)} abstracts in {figures['parse_seconds']} s", flush=True)
            for mode in ("naive", "rerank"):
                ndcgs, recalls, latencies = [], [], []
                for qid, text in queries.items():
                    started = time.perf_counter()
                    body = {"kb_id": "scifact", "query": text, "mode": mode, "top_k": 100, "max_results": 100}
                    data = client.post("/api/v1/docdb/retrieve", json=body).json()["data"]
                    latencies.append(time.perf_counter() - started)
                    ranked = list(dict.fromkeys(item["kb_name"].removesuffix(".txt") for item in data))
                    ndcgs.append(ndcg10(ranked, qrels[qid]))
                    recalls.append(len(set(ranked[:100]) & set(qrels[qid])) / len(qrels[qid]))
                figures[f"{mode}_ndcg10"] = round(sum(ndcgs) / len(ndcgs), 4)
                figures[f"{mode}_recall100"] = round(sum(recalls) / len(recalls), 4)
                latencies.sort()
                figures[f"{mode}_p50_ms"] = round(latencies[len(latencies) // 2] * 1000, 1)
                print(
                    f"[{label}] {mode:7s} nDCG@10 {figures[f'{mode}_ndcg10']:.4f}  "
                    f"recall@100 {figures[f'{mode}_recall100']:.4f}  p50 {figures[f'{mode}_p50_ms']} ms",
                    flush=True,
                )
    finally:
        docdb.stop()
        shutil.rmtree(work, ignore_errors=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit-docs", type=int, default=None)
    parser.add_argument("--embedding-model", default=None)
    parser.add_argument("--vector-store", choices=("qdrant", "pgvector"), default="qdrant")
    parser.add_argument("--postgres-url", default=None, help="admin URL of a PostgreSQL server with pgvector")
    args = parser.parse_args()
    corpus = [json.loads(line) for line in (DATA / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    corpus = corpus[: args.limit_docs] if args.limit_docs else corpus
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for row in (DATA / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, did, score = row.split("\t")
        qrels[qid][did] = int(score)
    queries = {
        q["_id"]: q["text"]
        for q in map(json.loads, (DATA / "queries.jsonl").read_text(encoding="utf-8").splitlines())
        if q["_id"] in qrels
    }
    env = {"LORE__DOCDB__EMBEDDING_API__MODEL": args.embedding_model} if args.embedding_model else {}
    figures = run("qdrant", env, corpus, queries, qrels)
    if args.vector_store == "pgvector":
        with (
            tempfile.TemporaryDirectory(prefix="lore-bench-pg-") as scratch,
            postgres(args.postgres_url, Path(scratch)) as admin_url,
        ):
            prefix = f"lore_bench_{int(time.time())}"
            urls = asyncio.run(prepare_databases(admin_url, prefix))
            pg_env = {
                **env,
                "LORE__DOCDB__DATABASE__URL": urls["docdb"],
                "LORE__DOCDB__VECTOR_STORE__PROVIDER": "pgvector",
            }
            pg = run("pgvector", pg_env, corpus, queries, qrels)
        figures |= {f"pgvector_{k}": v for k, v in pg.items()}
        print("\nside by side        qdrant-local   pgvector")
        for key in ("parse_seconds", "naive_ndcg10", "rerank_ndcg10", "naive_p50_ms", "rerank_p50_ms"):
            print(f"{key:18s} {figures[key]:>12}   {pg[key]:>8}")
        figures["pgvector_minus_qdrant_rerank_ndcg10"] = round(
            pg["rerank_ndcg10"] - figures["rerank_ndcg10"], 4
        )
        figures["pgvector_minus_qdrant_naive_ndcg10"] = round(pg["naive_ndcg10"] - figures["naive_ndcg10"], 4)
        figures["pgvector_vs_qdrant_rerank_p50_ratio"] = round(
            pg["rerank_p50_ms"] / figures["rerank_p50_ms"], 3
        )
        figures["goal_ndcg10_tolerance"] = 0.005
    figures["documents"] = len(corpus)
    figures["queries"] = len(queries)
    figures["bm25_anchor_ndcg10"] = ANCHOR
    figures["rerank_vs_anchor_ratio"] = round(figures["rerank_ndcg10"] / ANCHOR, 4)
    figures["goal_rerank_ndcg10"] = 0.68
    print(f"rerank nDCG@10 {figures['rerank_ndcg10']} vs BM25 anchor {ANCHOR} (goal >= 0.68)")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
