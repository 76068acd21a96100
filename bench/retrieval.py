"""Retrieval quality on the default stack, no model named in any request: BEIR SciFact's 5,183 abstracts
uploaded as files to a real docdb and parsed in mode 1 (the KB's embedder chosen by `auto`), then every
test query through `/retrieve` in `naive` and `rerank` modes (nDCG@10, recall@100); then CMRC 2018's
848 Chinese passages into a second KB of the same docdb, every dev question in `rerank` (recall@1: the
gold passage first). Anchor: BEIR's published BM25 nDCG@10 on SciFact is 0.665. Goals: SciFact rerank
>= 0.74, naive >= 0.62; CMRC rerank recall@1 >= 0.96.

With `--vector-store pgvector` the same run is repeated on PostgreSQL with pgvector (relational rows and
vectors in one database) after the Qdrant-local run, and both are printed side by side: nDCG@10 must
match within 0.005 (pgvector's HNSW is approximate; `/retrieve` asks for ef = top_k × ef_multiplier).
PostgreSQL is `--postgres-url`, else the server at 127.0.0.1:5432 when it has pgvector, else a private
one from the `pgserver` package.

    uv run python bench/retrieval.py [--limit-docs N] [--no-chinese] [--vector-store qdrant|pgvector]
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

DS = "/api/v1/docdb/files/raw-files/datasets"
KB = "/api/v1/docdb/files/knowledge-bases"
ANCHOR = 0.665


def ndcg10(ranked: list[str], relevant: dict[str, int]) -> float:
    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def read(name: str, split: str) -> tuple[list[dict[str, str]], dict[str, str], dict[str, dict[str, int]]]:
    folder = BENCH_DATA / name
    corpus = [json.loads(line) for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for row in (folder / "qrels" / f"{split}.tsv").read_text().splitlines()[1:]:
        qid, did, score = row.split("\t")
        qrels[qid][did] = int(score)
    queries = {
        q["_id"]: q["text"]
        for q in map(json.loads, (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines())
        if q["_id"] in qrels
    }
    return corpus, queries, qrels


def build(client: httpx.Client, kb: str, corpus: list[dict[str, str]]) -> float:
    """Upload the corpus as one file per document into a KB created with no model named; parse time."""
    client.post(DS, json={"name": kb})
    for start in range(0, len(corpus), 250):
        files = [
            ("files", (f"{d['_id']}.txt", f"{d.get('title', '')}\n\n{d['text']}".encode()))
            for d in corpus[start : start + 250]
        ]
        client.post(f"{DS}/{kb}/files", files=files).raise_for_status()
    client.post(KB, json={"name": kb})
    started = time.perf_counter()
    reply = client.post(f"{KB}/{kb}/parse", json={"datasets": [kb], "mode": 1}).json()
    task = wait_task(client, reply["data"]["tasks"][0]["task_id"], timeout=3600)
    if task["status"] != "completed":
        raise SystemExit(f"parse failed: {task}")
    return round(time.perf_counter() - started, 1)


def ask(
    client: httpx.Client, kb: str, mode: str, queries: dict[str, str], qrels: dict[str, dict[str, int]]
) -> dict[str, float]:
    ndcgs, recalls, firsts, latencies = [], [], [], []
    for qid, text in queries.items():
        started = time.perf_counter()
        body = {"kb_id": kb, "query": text, "mode": mode, "top_k": 100, "max_results": 100}
        data = client.post("/api/v1/docdb/retrieve", json=body).json()["data"]
        latencies.append(time.perf_counter() - started)
        ranked = list(dict.fromkeys(item["kb_name"].removesuffix(".txt") for item in data))
        ndcgs.append(ndcg10(ranked, qrels[qid]))
        recalls.append(len(set(ranked[:100]) & set(qrels[qid])) / len(qrels[qid]))
        firsts.append(1.0 if ranked and ranked[0] in qrels[qid] else 0.0)
    latencies.sort()
    return {
        "ndcg10": round(sum(ndcgs) / len(ndcgs), 4),
        "recall100": round(sum(recalls) / len(recalls), 4),
        "recall1": round(sum(firsts) / len(firsts), 4),
        "p50_ms": round(latencies[len(latencies) // 2] * 1000, 1),
    }


def run(
    label: str,
    env: dict[str, str],
    corpus: list[dict[str, str]],
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    chinese: tuple[list[dict[str, str]], dict[str, str], dict[str, dict[str, int]]] | None = None,
) -> dict[str, float]:
    """Parse SciFact (and CMRC 2018) into a fresh docdb, each KB created with no model named, then ask
    every query in both modes."""
    work = Path(tempfile.mkdtemp(prefix="lore-bench-retrieval-"))
    docdb, base = start_service("docdb", work, {"LORE__DOCDB__GRAPH_STORE__ENABLED": "false", **env})
    figures: dict[str, float] = {}
    try:
        with httpx.Client(base_url=base, timeout=600) as client:
            figures["parse_seconds"] = build(client, "scifact", corpus)
            model = client.get(f"{KB}/scifact").json()["embedding_model"]
            print(
                f"[{label}] parsed {len(corpus)} abstracts in {figures['parse_seconds']} s ({model})",
                flush=True,
            )
            figures[f"scifact_model_is_{model.replace(':', '_').replace('-', '_')}"] = 1
            for mode in ("naive", "rerank"):
                got = ask(client, "scifact", mode, queries, qrels)
                for key in ("ndcg10", "recall100", "p50_ms"):
                    figures[f"{mode}_{key}"] = got[key]
                print(
                    f"[{label}] {mode:7s} nDCG@10 {got['ndcg10']:.4f}  recall@100 {got['recall100']:.4f}  "
                    f"p50 {got['p50_ms']} ms",
                    flush=True,
                )
            if chinese is not None:
                zh_corpus, zh_queries, zh_qrels = chinese
                figures["cmrc_parse_seconds"] = build(client, "cmrc", zh_corpus)
                model = client.get(f"{KB}/cmrc").json()["embedding_model"]
                figures[f"cmrc_model_is_{model.replace(':', '_').replace('-', '_')}"] = 1
                got = ask(client, "cmrc", "rerank", zh_queries, zh_qrels)
                figures |= {"cmrc_rerank_recall1": got["recall1"], "cmrc_rerank_p50_ms": got["p50_ms"]}
                print(
                    f"[{label}] CMRC 2018 ({len(zh_corpus)} passages, {model}): rerank recall@1 "
                    f"{got['recall1']:.4f}  p50 {got['p50_ms']} ms",
                    flush=True,
                )
    finally:
        docdb.stop()
        shutil.rmtree(work, ignore_errors=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit-docs", type=int, default=None)
    parser.add_argument("--embedding-model", default=None, help="default: auto, chosen per KB")
    parser.add_argument("--no-chinese", action="store_true", help="skip the CMRC 2018 KB")
    parser.add_argument("--vector-store", choices=("qdrant", "pgvector"), default="qdrant")
    parser.add_argument("--postgres-url", default=None, help="admin URL of a PostgreSQL server with pgvector")
    args = parser.parse_args()
    corpus, queries, qrels = read("scifact", "test")
    corpus = corpus[: args.limit_docs] if args.limit_docs else corpus
    chinese = None if args.no_chinese else read("cmrc2018", "dev")
    env = {"LORE__DOCDB__EMBEDDING_API__MODEL": args.embedding_model} if args.embedding_model else {}
    figures = run("qdrant", env, corpus, queries, qrels, chinese)
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
    figures |= {"goal_rerank_ndcg10": 0.74, "goal_naive_ndcg10": 0.62, "goal_cmrc_rerank_recall1": 0.96}
    print(
        f"SciFact rerank nDCG@10 {figures['rerank_ndcg10']} (goal >= 0.74; BM25 anchor {ANCHOR}), "
        f"naive {figures['naive_ndcg10']} (goal >= 0.62); CMRC rerank recall@1 "
        f"{figures.get('cmrc_rerank_recall1')} (goal >= 0.96)"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
