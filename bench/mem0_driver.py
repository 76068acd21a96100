"""Runs inside the separate mem0 venv (mem0ai + stdlib only): the mem0 half of memory_vs_mem0.py.

Reads a JSON job on stdin, prints one JSON object of latencies (ms) on stdout."""

from __future__ import annotations

import json
import sys
import time

from mem0 import Memory


def main() -> None:
    job = json.load(sys.stdin)
    config = {
        "llm": {
            "provider": "openai",
            "config": {"model": "fake", "api_key": "sk-fake", "openai_base_url": job["llm_url"]},
        },
        "embedder": {
            "provider": "openai",
            "config": {
                "model": "fake-embed",
                "api_key": "sk-fake",
                "openai_base_url": job["llm_url"],
                "embedding_dims": job["dim"],
            },
        },
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "path": job["path"] + "/qdrant",
                "on_disk": True,
                "embedding_model_dims": job["dim"],
                "collection_name": "bench",
            },
        },
        "history_db_path": job["path"] + "/history.db",
    }
    memory = Memory.from_config(config)
    if job.get("mode") == "locomo":
        locomo(memory, job)
        return
    user = job["user"]
    for text in job["prefill"]:
        memory.add([{"role": "user", "content": text}], user_id=user, infer=False)
    adds, searches = [], []
    for text in job["adds"]:
        started = time.perf_counter()
        memory.add([{"role": "user", "content": text}], user_id=user, infer=job.get("infer", True))
        adds.append((time.perf_counter() - started) * 1000)
    for query in job["queries"]:
        started = time.perf_counter()
        memory.search(query, filters={"user_id": user}, top_k=job.get("limit", 10), threshold=0.0)
        searches.append((time.perf_counter() - started) * 1000)
    print(json.dumps({"add_ms": adds, "search_ms": searches}))


def locomo(memory: Memory, job: dict) -> None:
    """Each turn added verbatim (infer=False, dia_id in metadata); each question searched in its scope."""
    for turn in job["turns"]:
        memory.add(
            [{"role": "user", "content": turn["text"]}],
            user_id=turn["user"],
            infer=False,
            metadata={"dia_id": turn["dia_id"]},
        )
    found, searches = [], []
    for query in job["queries"]:
        started = time.perf_counter()
        result = memory.search(query["query"], filters={"user_id": query["user"]}, top_k=10, threshold=0.0)
        searches.append((time.perf_counter() - started) * 1000)
        items = result.get("results", result) if isinstance(result, dict) else result
        found.append([(item.get("metadata") or {}).get("dia_id") for item in items])
    print(json.dumps({"search_ms": searches, "found": found}))


if __name__ == "__main__":
    main()
