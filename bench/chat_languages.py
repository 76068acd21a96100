"""Cost of the offline answerer by language: for an English KB (SciFact abstracts) and a Chinese one
(CMRC 2018 passages), p50/p95 of `/retrieve` and of `/chat` (the same retrieval, then the offline
model's extractive answer) on one docdb with the default local embedder. Goal: chat p50 ≤ 2× retrieve
p50 in each language (the answerer segments Chinese with jieba, which used to dominate).

    uv run python bench/chat_languages.py [--docs 600] [--questions 100]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import httpx
from bench_data import DATA

from lore_common.testing.processes import start_service, wait_task

DS = "/api/v1/docdb/files/raw-files/datasets"
KB = "/api/v1/docdb/files/knowledge-bases"


def read(name: str, docs: int, questions: int) -> tuple[list[dict[str, str]], list[str]]:
    folder = DATA / name
    corpus = [json.loads(line) for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    asked = [
        json.loads(line)["text"]
        for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    return corpus[:docs], asked[:questions]


def load(client: httpx.Client, kb: str, corpus: list[dict[str, str]]) -> float:
    client.post(DS, json={"name": kb}).raise_for_status()
    for start in range(0, len(corpus), 200):
        files = [
            ("files", (f"{d['_id']}.txt", f"{d.get('title', '')}\n\n{d['text']}".encode()))
            for d in corpus[start : start + 200]
        ]
        client.post(f"{DS}/{kb}/files", files=files).raise_for_status()
    client.post(KB, json={"name": kb}).raise_for_status()
    started = time.perf_counter()
    reply = client.post(f"{KB}/{kb}/parse", json={"datasets": [kb], "mode": 1}).json()
    task = wait_task(client, reply["data"]["tasks"][0]["task_id"], timeout=3600)
    if task["status"] != "completed":
        raise SystemExit(f"parse of {kb} failed: {task}")
    return time.perf_counter() - started


def timed(client: httpx.Client, path: str, bodies: list[dict[str, object]]) -> list[float]:
    client.post(path, json=bodies[0])  # warm
    spent = []
    for body in bodies:
        started = time.perf_counter()
        reply = client.post(path, json=body)
        spent.append((time.perf_counter() - started) * 1000)
        reply.raise_for_status()
    return spent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=600, help="documents per language")
    parser.add_argument("--questions", type=int, default=100)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lore-bench-languages-"))
    docdb, base = start_service("docdb", work, {"LORE__DOCDB__GRAPH_STORE__ENABLED": "false"})
    figures: dict[str, float] = {}
    try:
        with httpx.Client(base_url=base, timeout=600) as client:
            for kb, dataset in (("english", "scifact"), ("chinese", "cmrc2018")):
                corpus, questions = read(dataset, args.docs, args.questions)
                seconds = load(client, kb, corpus)
                for mode in ("naive", "rerank"):
                    asks: list[dict[str, object]] = [
                        {"kb_id": kb, "query": q, "mode": mode} for q in questions
                    ]
                    retrieve = timed(client, "/api/v1/docdb/retrieve", asks)
                    chat = timed(client, "/api/v1/docdb/chat", [{**ask, "user_id": "bench"} for ask in asks])
                    key = f"{kb}_{mode}"
                    for name, values in (("retrieve", retrieve), ("chat", chat)):
                        values.sort()
                        figures[f"{key}_{name}_p50_ms"] = round(statistics.median(values), 1)
                        figures[f"{key}_{name}_p95_ms"] = round(values[int(len(values) * 0.95) - 1], 1)
                    ratio = figures[f"{key}_chat_p50_ms"] / figures[f"{key}_retrieve_p50_ms"]
                    figures[f"{key}_chat_over_retrieve_p50"] = round(ratio, 2)
                    print(
                        f"{kb:8s} {mode:7s} retrieve p50 {figures[f'{key}_retrieve_p50_ms']} ms, chat p50 "
                        f"{figures[f'{key}_chat_p50_ms']} ms (p95 {figures[f'{key}_retrieve_p95_ms']} / "
                        f"{figures[f'{key}_chat_p95_ms']}): chat = {ratio:.2f}x retrieve (goal <= 2)",
                        flush=True,
                    )
                figures[f"{kb}_parse_seconds"] = round(seconds, 1)
                print(f"{kb:8s} {len(corpus)} documents parsed in {seconds:.1f} s", flush=True)
    finally:
        docdb.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
