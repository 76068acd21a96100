"""Parse throughput: a generated corpus (2,000 English/Chinese documents, ~10 MB) parsed in mode 0 by a
real docdb process, with the fake model server answering entity extraction after 200 ms and the
hashing embedder. Prints documents/s, chunks/s, model calls in flight on average divided by
`max_concurrent_requests` (goal >= 0.8) and docdb's peak RSS (goal < 1 GB).

    uv run python bench/parse.py [--docs 2000] [--latency-ms 200]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import threading
import time
from pathlib import Path

import httpx

from lore_common.testing.processes import ServerProcess, start_fake_llm, start_service, wait_task

DS = "/api/v1/docdb/files/raw-files/datasets"
KB = "/api/v1/docdb/files/knowledge-bases"
MIB = 1024 * 1024

PEOPLE = [
    "Ada Lovelace",
    "Alan Turing",
    "Grace Hopper",
    "Claude Shannon",
    "Marie Curie",
    "Niels Bohr",
    "Rosalind Franklin",
    "John von Neumann",
    "Emmy Noether",
    "Srinivasa Ramanujan",
]
PLACES = ["London", "Princeton", "Cambridge", "Paris", "Copenhagen", "Zurich", "Vienna", "Boston"]
THINGS = [
    "the Analytical Engine",
    "the Turing Machine",
    "the Harvard Mark I",
    "Information Theory",
    "Radioactivity",
    "Quantum Mechanics",
    "the EDVAC",
    "Abstract Algebra",
]
ZH_PEOPLE = ["鲁迅", "胡适", "钱学森", "华罗庚", "屠呦呦", "杨振宁", "林徽因", "梁思成"]
ZH_PLACES = ["北京", "上海", "杭州", "南京", "清华大学", "北京大学", "浙江", "广州"]
ZH_THINGS = ["《狂人日记》", "《呐喊》", "青蒿素", "两弹一星", "华氏定理", "宇称不守恒"]


def english_doc(rng: random.Random, size: int) -> str:
    parts = []
    while sum(map(len, parts)) < size:
        p, q, place, thing = rng.choice(PEOPLE), rng.choice(PEOPLE), rng.choice(PLACES), rng.choice(THINGS)
        parts.append(
            f"{p} worked in {place} on {thing}. Later {p} met {q} at a conference in {place}, "
            f"where they discussed {thing} and its consequences for science in {rng.randint(1900, 1990)}. "
        )
    return "".join(parts)


def chinese_doc(rng: random.Random, size: int) -> str:
    parts = []
    while sum(len(p.encode()) for p in parts) < size:
        p, place, thing = rng.choice(ZH_PEOPLE), rng.choice(ZH_PLACES), rng.choice(ZH_THINGS)
        parts.append(f"{p}曾在{place}工作，研究{thing}。{p}在{place}与同事讨论了{thing}的意义。")
    return "".join(parts)


class PeakRss(threading.Thread):
    def __init__(self, process: ServerProcess) -> None:
        super().__init__(daemon=True)
        self.process, self.peak, self.done = process, 0, threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.peak = max(self.peak, self.process.rss_bytes())
            time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--doc-bytes", type=int, default=5000)
    parser.add_argument("--latency-ms", type=float, default=200)
    parser.add_argument("--max-concurrent", type=int, default=10)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lore-bench-parse-"))
    rng = random.Random(42)
    llm, llm_url = start_fake_llm(
        work, "--latency-ms", str(args.latency_ms), "--responder", "lore_common.testing.responders:entities"
    )
    env = {
        "LORE__DOCDB__EMBEDDING_API__PROVIDER": "hashing",
        "LORE__DOCDB__LLM__PROVIDER": "openai",
        "LORE__DOCDB__LLM__BASE_URL": llm_url,
        "LORE__DOCDB__LLM__MAX_CONCURRENT_REQUESTS": str(args.max_concurrent),
    }
    docdb, base = start_service("docdb", work, env)
    llm_root = llm_url.removesuffix("/v1")
    try:
        sampler = PeakRss(docdb)
        sampler.start()
        with httpx.Client(base_url=base, timeout=300) as client:
            client.post(DS, json={"name": "corpus"})
            total_bytes = 0
            batch: list[tuple[str, tuple[str, bytes]]] = []
            for i in range(args.docs):
                text = english_doc(rng, args.doc_bytes) if i % 2 == 0 else chinese_doc(rng, args.doc_bytes)
                body = text.encode()
                total_bytes += len(body)
                batch.append(("files", (f"doc{i:05d}.txt", body)))
                if len(batch) == 100 or i == args.docs - 1:
                    r = client.post(f"{DS}/corpus/files", files=batch)
                    r.raise_for_status()
                    batch = []
            client.post(KB, json={"name": "bench"})
            httpx.post(f"{llm_root}/_reset")
            started = time.perf_counter()
            task_id = client.post(f"{KB}/bench/parse", json={"datasets": ["corpus"], "mode": 0}).json()[
                "data"
            ]["tasks"][0]["task_id"]
            task = wait_task(client, task_id)
            elapsed = time.perf_counter() - started
            stats = httpx.get(f"{llm_root}/_stats").json()
            overview = client.get(f"{KB}/bench/overview", params={"top_nodes": 5}).json()["overview"]
        sampler.done.set()
        sampler.join()
        if task["status"] != "completed":
            raise SystemExit(f"parse did not complete: {task}")
    finally:
        docdb.stop()
        llm.stop()
        shutil.rmtree(work, ignore_errors=True)
    chunks = overview["chunk_count"]
    busy = stats["mean_in_flight"] / args.max_concurrent
    figures = {
        "documents": args.docs,
        "corpus_mb": round(total_bytes / MIB, 2),
        "chunks": chunks,
        "seconds": round(elapsed, 2),
        "documents_per_s": round(args.docs / elapsed, 2),
        "chunks_per_s": round(chunks / elapsed, 2),
        "llm_calls": stats["calls"],
        "llm_mean_in_flight": round(stats["mean_in_flight"], 2),
        "llm_busy_ratio": round(busy, 3),
        "docdb_peak_rss_mb": round(sampler.peak / MIB, 1),
        "goal_llm_busy_ratio": 0.8,
        "goal_peak_rss_mb": 1024,
    }
    top_names = [e["name"] for e in overview["top_entities"]]
    print(
        f"parsed {args.docs} documents ({figures['corpus_mb']} MB, {chunks} chunks) in {elapsed:.1f} s: "
        f"{figures['documents_per_s']} docs/s, {figures['chunks_per_s']} chunks/s; model busy "
        f"{busy:.2f} of {args.max_concurrent} slots (goal >= 0.8); "
        f"peak RSS {figures['docdb_peak_rss_mb']} MB (goal < 1024); top entities: {top_names}"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
