"""Lore side by side with LightRAG (`lightrag-hku`, installed by this script in bench/.venv-lightrag,
never in Lore's environment) on one fake OpenAI-compatible model server, which also serves the one
embedder both use over HTTP. The server answers every prompt of both systems from the same offline
entity extractor (`lore_common.testing.responders:lightrag`), at 0 ms and then at `--latency-ms`
(200 by default) per call, chat and embedding calls alike. Each system keeps its defaults (LightRAG's
are printed).

For each latency, 500 short entity-rich documents go into:
- LightRAG: one `ainsert` of all of them;
- Lore mem `kb`: one `kb/insert` per document from 16 clients, waiting for every job;
- Lore docdb mode 0: the documents as files in a dataset, one parse with entity extraction.
Then, per system: insert wall time and model calls per document; time until a newly inserted document
is queryable (10 more, one at a time: insert, then query until its code shows); query p50/p95 in
naive, local, global and hybrid (LightRAG and mem `kb`; docdb chat in `naive` and `rerank`); the
ratios. Goals (#27) at 200 ms: Lore >= 3x LightRAG on insert wall time and >= 3x on query p50.

    uv run python bench/lightrag_compare.py [--documents 500] [--latency-ms 200] [--questions 30]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from side_venv import run_driver, venv_python

from lore_common.testing.processes import ServerProcess, start_fake_llm, start_service, wait_task
from lore_common.testing.stats import percentile

DIM = 384
MODES = ("naive", "local", "global", "hybrid")
DS = "/api/v1/docdb/files/raw-files/datasets"
KB = "/api/v1/docdb/files/knowledge-bases"
INSERT = "/api/v1/mem/kb/insert"
QUERY = "/api/v1/mem/kb/query"
PEOPLE = ["Ada Park", "Bruno Silva", "Chen Wei", "Dara Okafor", "Elena Rossi", "Farid Haddad", "Greta Lund"]
CITIES = ["Lisbon", "Nairobi", "Osaka", "Quito", "Tallinn", "Perth", "Bergen", "Cusco"]
ORGS = ["Helix Labs", "Northwind Shipping", "Orchid Bank", "Tidewater Energy", "Lumen Press"]
TOPICS = ["tides", "soil", "bridges", "bees", "glaciers", "vaccines", "batteries", "ferries"]
GOAL_RATIO = 3.0


def document(rng: random.Random, i: int) -> tuple[str, str]:
    code = f"KX{i:05d}"
    person, city, org = rng.choice(PEOPLE), rng.choice(CITIES), rng.choice(ORGS)
    text = (
        f"{person} moved to {city} in {rng.randint(1990, 2024)} to lead project {code} at {org}. "
        f"The project studies {rng.choice(TOPICS)} with {rng.choice(PEOPLE)} and reports to the "
        f"{rng.choice(CITIES)} office of {rng.choice(ORGS)}."
    )
    return code, text


def questions(count: int) -> list[str]:
    return [f"What did {PEOPLE[i % len(PEOPLE)]} do in {CITIES[i % len(CITIES)]}?" for i in range(count)]


def model_stats(llm_url: str) -> dict[str, Any]:
    reply: dict[str, Any] = httpx.get(llm_url.removesuffix("/v1") + "/_stats").json()
    return reply


def reset_model(llm_url: str, latency_ms: float) -> None:
    base = llm_url.removesuffix("/v1")
    httpx.post(f"{base}/_reset").raise_for_status()
    httpx.post(f"{base}/_latency", json={"ms": latency_ms}).raise_for_status()


async def mem_kb(
    base: str, llm_url: str, docs: list[tuple[str, str]], paced: list[tuple[str, str]], asked: list[str]
) -> dict[str, Any]:
    result: dict[str, Any] = {}
    async with httpx.AsyncClient(base_url=base, timeout=600) as client:
        queue = list(docs)

        async def insert(text: str) -> None:
            job = (await client.post(INSERT, files={"query": (None, text)})).json()
            while True:
                status = (await client.get(f"{INSERT}/{job['id']}")).json()["status"]
                if status in ("done", "failed"):
                    if status == "failed":
                        raise RuntimeError(f"kb insert failed: {job}")
                    return
                await asyncio.sleep(0.05)

        async def worker() -> None:
            while queue:
                await insert(queue.pop()[1])

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(16)))
        result["insert_s"] = time.perf_counter() - started
        result["insert_calls"] = model_stats(llm_url)
        queryable = []
        for code, text in paced:
            started = time.perf_counter()
            await insert(text)
            while time.perf_counter() - started < 60:
                # The default mode: the code is an entity the question names.
                asked_code = {"query": f"What is project {code}?"}
                answer = (await client.post(QUERY, json=asked_code)).json()
                if code in answer["rag_memory"]:
                    break
            queryable.append(time.perf_counter() - started)
        result["queryable_s"] = queryable
        result["query_ms"] = {}
        for mode in MODES:
            times = []
            for question in asked:
                started = time.perf_counter()
                reply = await client.post(QUERY, json={"query": question, "mode": mode})
                times.append((time.perf_counter() - started) * 1000)
                if reply.status_code != 200 or not reply.json()["final_answer"]:
                    raise RuntimeError(f"mem kb {mode}: {reply.status_code} {reply.text[:300]}")
            result["query_ms"][mode] = times
    return result


def docdb_mode0(
    base: str, llm_url: str, docs: list[tuple[str, str]], paced: list[tuple[str, str]], asked: list[str]
) -> dict[str, Any]:
    result: dict[str, Any] = {}
    with httpx.Client(base_url=base, timeout=600) as client:
        client.post(DS, json={"name": "docs"}).raise_for_status()
        files = [("files", (f"{code}.txt", text.encode())) for code, text in docs]
        client.post(KB, json={"name": "compare"}).raise_for_status()
        started = time.perf_counter()
        for start in range(0, len(files), 250):
            client.post(f"{DS}/docs/files", files=files[start : start + 250]).raise_for_status()
        reply = client.post(f"{KB}/compare/parse", json={"datasets": ["docs"], "mode": 0}).json()
        task = wait_task(client, reply["data"]["tasks"][0]["task_id"], timeout=3600, poll=0.2)
        result["insert_s"] = time.perf_counter() - started
        result["insert_calls"] = model_stats(llm_url)
        if task["status"] != "completed":
            raise SystemExit(f"docdb parse failed: {task}")
        queryable = []
        for i, (code, text) in enumerate(paced):
            # A new document reaches a parsed KB as a dataset of its own, parsed into it.
            started = time.perf_counter()
            client.post(DS, json={"name": f"new{i}"}).raise_for_status()
            one = [("files", (f"{code}.txt", text.encode()))]
            client.post(f"{DS}/new{i}/files", files=one).raise_for_status()
            reply = client.post(f"{KB}/compare/parse", json={"datasets": [f"new{i}"], "mode": 0}).json()
            wait_task(client, reply["data"]["tasks"][0]["task_id"], timeout=600, poll=0.05)
            while time.perf_counter() - started < 60:
                body = {"kb_id": "compare", "query": f"What is project {code}?", "max_results": 5}
                found = client.post("/api/v1/docdb/retrieve", json=body).json()
                if any(code in item["content"] for item in found["data"]):
                    break
            queryable.append(time.perf_counter() - started)
        result["queryable_s"] = queryable
        result["query_ms"] = {}
        for mode in ("naive", "rerank"):
            times = []
            for question in asked:
                body = {"kb_id": "compare", "query": question, "user_id": "u", "query_mode": mode}
                started = time.perf_counter()
                reply = client.post("/api/v1/docdb/chat", json=body).json()
                times.append((time.perf_counter() - started) * 1000)
                if reply.get("code") != 200:
                    raise RuntimeError(f"docdb chat {mode}: {reply}")
            result["query_ms"][mode] = times
    return result


def summarise(name: str, result: dict[str, Any], documents: int) -> dict[str, float]:
    calls = result["insert_calls"]
    figures = {
        "insert_s": round(result["insert_s"], 2),
        "model_calls_per_doc": round(calls["calls"] / documents, 2),
        "embedding_calls_per_doc": round(calls["embedding_calls"] / documents, 3),
        "queryable_p50_s": round(statistics.median(result["queryable_s"]), 3),
    }
    for mode, times in result["query_ms"].items():
        figures[f"{mode}_p50_ms"] = round(percentile(times, 0.5), 1)
        figures[f"{mode}_p95_ms"] = round(percentile(times, 0.95), 1)
    modes = ", ".join(f"{m} {figures[f'{m}_p50_ms']}/{figures[f'{m}_p95_ms']}" for m in result["query_ms"])
    print(
        f"  {name:10s}: {documents} docs in {figures['insert_s']} s, {figures['model_calls_per_doc']} model "
        f"calls and {figures['embedding_calls_per_doc']} embedding calls per doc; queryable after "
        f"{figures['queryable_p50_s']} s (p50); query p50/p95 ms: {modes}",
        flush=True,
    )
    return figures


def one_latency(
    latency_ms: float, args: argparse.Namespace, python: Path, llm: tuple[ServerProcess, str], work: Path
) -> dict[str, float]:
    _, llm_url = llm
    rng = random.Random(11)
    docs = [document(rng, i) for i in range(args.documents)]
    paced = [document(rng, args.documents + i) for i in range(args.paced)]
    asked = questions(args.questions)
    figures: dict[str, float] = {}
    folder = work / f"ms{int(latency_ms)}"
    folder.mkdir()

    reset_model(llm_url, latency_ms)
    job = {
        "llm_url": llm_url,
        "dim": DIM,
        "path": str(folder / "lightrag"),
        "documents": [text for _, text in docs],
        "paced": paced,
        "questions": asked,
        "modes": list(MODES),
    }
    result = run_driver(python, "lightrag_driver.py", job)
    print(f"{latency_ms:.0f} ms per model call (LightRAG settings: {result['settings']})", flush=True)
    for key, value in summarise("LightRAG", result, args.documents).items():
        figures[f"lightrag_{key}"] = value

    env = {
        "LORE__MEM__MEMORYKB__LLM__PROVIDER": "openai",
        "LORE__MEM__MEMORYKB__LLM__BASE_URL": llm_url,
        "LORE__MEM__MEMORYKB__LLM__API_KEY": "bench",
        "LORE__MEM__MEMORYKB__EMBEDDING__PROVIDER": "openai",
        "LORE__MEM__MEMORYKB__EMBEDDING__BASE_URL": llm_url,
        "LORE__MEM__MEMORYKB__EMBEDDING__DIM": str(DIM),
        "LORE__DOCDB__LLM__PROVIDER": "openai",
        "LORE__DOCDB__LLM__BASE_URL": llm_url,
        "LORE__DOCDB__LLM__API_KEY": "bench",
        "LORE__DOCDB__EMBEDDING_API__PROVIDER": "openai",
        "LORE__DOCDB__EMBEDDING_API__BASE_URL": llm_url,
        "LORE__DOCDB__EMBEDDING_API__DIM": str(DIM),
    }
    for system in ("mem", "docdb"):
        reset_model(llm_url, latency_ms)
        service, base = start_service(system, folder, env)
        try:
            if system == "mem":
                outcome = asyncio.run(mem_kb(base, llm_url, docs, paced, asked))
            else:
                outcome = docdb_mode0(base, llm_url, docs, paced, asked)
        finally:
            service.stop()
        name = "lore_kb" if system == "mem" else "lore_docdb"
        label = "Lore kb" if system == "mem" else "Lore docdb"
        for key, value in summarise(label, outcome, args.documents).items():
            figures[f"{name}_{key}"] = value
    lightrag_query = statistics.median(figures[f"lightrag_{m}_p50_ms"] for m in MODES)
    lore_query = statistics.median(figures[f"lore_kb_{m}_p50_ms"] for m in MODES)
    figures["kb_insert_ratio"] = round(figures["lightrag_insert_s"] / figures["lore_kb_insert_s"], 2)
    figures["docdb_insert_ratio"] = round(figures["lightrag_insert_s"] / figures["lore_docdb_insert_s"], 2)
    figures["kb_query_p50_ratio"] = round(lightrag_query / lore_query, 2)
    print(
        f"  ratios (LightRAG / Lore): insert {figures['kb_insert_ratio']}x (kb), "
        f"{figures['docdb_insert_ratio']}x (docdb mode 0); query p50 (median over modes) "
        f"{figures['kb_query_p50_ratio']}x (kb)",
        flush=True,
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--documents", type=int, default=500)
    parser.add_argument("--paced", type=int, default=10, help="documents inserted one at a time, then found")
    parser.add_argument("--questions", type=int, default=30)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    args = parser.parse_args()
    python = venv_python("lightrag", "lightrag-hku==1.5.7", "openai>=2,<3")
    work = Path(tempfile.mkdtemp(prefix="lore-bench-lightrag-"))
    llm = start_fake_llm(
        work, "--responder", "lore_common.testing.responders:lightrag", "--embedding-dim", str(DIM)
    )
    figures: dict[str, float] = {"documents": args.documents, "latency_ms": args.latency_ms}
    try:
        for latency in (0.0, args.latency_ms):
            for key, value in one_latency(latency, args, python, llm, work).items():
                figures[f"ms{int(latency)}_{key}"] = value
    finally:
        llm[0].stop()
        shutil.rmtree(work, ignore_errors=True)
    at = f"ms{int(args.latency_ms)}"
    figures["goal_ratio"] = GOAL_RATIO
    figures["insert_vs_goal_ratio"] = round(figures[f"{at}_kb_insert_ratio"] / GOAL_RATIO, 2)
    figures["query_vs_goal_ratio"] = round(figures[f"{at}_kb_query_p50_ratio"] / GOAL_RATIO, 2)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
