"""Model faults: Lore's model paths against a model that misbehaves, compared with one that does not.

Three workloads, each on real service processes against the fake model server: a graph-mode (mode 0)
docdb parse of 500 documents, a mem `kb` insert of 200 texts, and a gen table of 50 rows. They run
twice: once with a well-behaved model, once with 20 % malformed replies (fenced, wrapped in chatter or
cut short), 10 % 429s (Retry-After 0.2 s) and 5 % stalls (past the client's 3 s time-out). Checked:

- no chunk is lost: every chunk the model was asked about is extracted or reported failed in its
  task (usage.extracted + usage.failed_chunks == chunks sent), and no chunk reported failed ever got a
  good reply in the fault server's log;
- total model calls with faults <= 1.4 x the calls without.

    uv run python bench/model_faults.py [--docs 500] [--inserts 200] [--rows 50]

The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from lore_common.testing.processes import start_fake_llm, start_service, wait_task

DS = "/api/v1/docdb/files/raw-files/datasets"
KB = "/api/v1/docdb/files/knowledge-bases"
INSERT = "/api/v1/mem/kb/insert"
SUBMIT = "/api/v1/gen/pipeline/submit"
STATUS = "/api/v1/gen/pipeline/status"
FAULTS = "malformed=0.2,429=0.1,stall=0.05"
PEOPLE = ["Ada Lovelace", "Alan Turing", "Grace Hopper", "Claude Shannon", "Marie Curie", "Niels Bohr"]
PLACES = ["London", "Princeton", "Cambridge", "Paris", "Copenhagen", "Zurich"]
THINGS = ["the Analytical Engine", "the Turing Machine", "Information Theory", "Radioactivity"]


def text(rng: random.Random, index: int) -> str:
    """A short document (one chunk) naming a few entities; `index` makes each one distinct."""
    p, q = rng.sample(PEOPLE, 2)
    return (
        f"Record {index}. {p} met {q} in {rng.choice(PLACES)} to discuss {rng.choice(THINGS)}. "
        f"{q} later wrote to {p} from {rng.choice(PLACES)} about {rng.choice(THINGS)}."
    )


def model_env(service: str, llm_url: str) -> dict[str, str]:
    prefix = {"docdb": "LORE__DOCDB__LLM__", "mem": "LORE__MEM__MEMORYKB__LLM__", "gen": "LORE__GEN__LLM__"}[
        service
    ]
    return {
        f"{prefix}PROVIDER": "openai",
        f"{prefix}BASE_URL": llm_url,
        f"{prefix}API_KEY": "bench",
        f"{prefix}MODEL": "fake",
        f"{prefix}TIMEOUT": "3",
        f"{prefix}MAX_RETRIES": "4",
        f"{prefix}RETRY_BACKOFF": "0.2",
        f"{prefix}MAX_CONCURRENT_REQUESTS": "16",
        f"{prefix}PRICE_INPUT": "0.15",
        f"{prefix}PRICE_OUTPUT": "0.60",
    }


def failed_never_good(log: dict[str, Any]) -> set[str]:
    """Chunk keys that never got a good structured reply (every call for them met a fault)."""
    keys: dict[str, bool] = {}
    for call in log["calls"]:
        if call.get("kind") == "json":
            keys[call["key"]] = keys.get(call["key"], False) or call["fault"] in ("none", "malformed")
    return {key for key, good in keys.items() if not good}


def parse(work: Path, llm_url: str, docs: int) -> dict[str, Any]:
    env = {
        "LORE__DOCDB__EMBEDDING_API__PROVIDER": "hashing",
        "LORE__DOCDB__GRAPH_STORE__ENABLED": "true",
        **model_env("docdb", llm_url),
    }
    docdb, base = start_service("docdb", work, env)
    rng = random.Random(1)
    try:
        with httpx.Client(base_url=base, timeout=300) as client:
            client.post(DS, json={"name": "corpus"}).raise_for_status()
            for start in range(0, docs, 100):
                files = [
                    ("files", (f"doc{i:04d}.txt", text(rng, i).encode()))
                    for i in range(start, min(docs, start + 100))
                ]
                client.post(f"{DS}/corpus/files", files=files).raise_for_status()
            client.post(KB, json={"name": "bench"}).raise_for_status()
            reset(llm_url)
            started = time.perf_counter()
            r = client.post(f"{KB}/bench/parse", json={"datasets": ["corpus"], "mode": 0})
            task = wait_task(client, r.json()["data"]["tasks"][0]["task_id"], timeout=900)
            seconds = time.perf_counter() - started
            chunks = client.get(f"{KB}/bench/overview").json()["overview"]["chunk_count"]
    finally:
        docdb.stop()
    usage = task["metadata"].get("usage", {})
    return {
        "status": task["status"],
        "error": task.get("error"),
        "chunks": chunks,
        "extracted": usage.get("extracted", 0),
        "failed": usage.get("failed_chunks", 0),
        "usage": usage,
        "seconds": round(seconds, 1),
        **model_log(llm_url),
    }


def kb_insert(work: Path, llm_url: str, inserts: int) -> dict[str, Any]:
    env = {"LORE__MEM__MEMORYKB__EMBEDDING__PROVIDER": "hashing", **model_env("mem", llm_url)}
    mem, base = start_service("mem", work, env)
    rng = random.Random(2)
    totals: dict[str, float] = {
        "chunks": 0,
        "extracted": 0,
        "failed": 0,
        "failed_jobs": 0,
        "model_calls": 0,
        "cost": 0.0,
    }
    try:
        with httpx.Client(base_url=base, timeout=120) as client:
            reset(llm_url)
            started = time.perf_counter()
            ids = []
            for i in range(inserts):
                r = client.post(INSERT, data={"query": text(rng, 10_000 + i)})
                r.raise_for_status()
                ids.append(r.json()["id"])

            def status_of(job_id: str) -> dict[str, Any]:
                body: dict[str, Any] = client.get(f"{INSERT}/{job_id}").json()
                return body

            jobs = [poll(functools.partial(status_of, job_id), ("done", "failed")) for job_id in ids]
            seconds = time.perf_counter() - started
    finally:
        mem.stop()
    errors = []
    for job in jobs:
        if job["status"] == "failed":
            totals["failed_jobs"] += 1
            errors.append(job.get("error"))
            continue
        usage = job.get("usage") or {}
        totals["chunks"] += job["chunks"]
        totals["extracted"] += usage.get("extracted", 0)
        totals["failed"] += usage.get("failed_chunks", 0)
        totals["model_calls"] += usage.get("model_calls", 0)
        totals["cost"] += usage.get("cost", 0.0)
    return {**totals, "errors": errors[:3], "seconds": round(seconds, 1), **model_log(llm_url)}


def table(work: Path, llm_url: str, rows: int) -> dict[str, Any]:
    gen, base = start_service("gen", work, model_env("gen", llm_url))
    try:
        with httpx.Client(base_url=base, timeout=120) as client:
            reset(llm_url)
            names = ", ".join(f"Entity{i:02d}" for i in range(rows))
            started = time.perf_counter()
            r = client.post(SUBMIT, json={"question": f"Compare: {names}", "max_workers": 16})
            r.raise_for_status()
            task_id = r.json()["task_id"]
            status = poll(lambda: client.get(f"{STATUS}/{task_id}").json(), ("completed", "failed"))
            seconds = time.perf_counter() - started
    finally:
        gen.stop()
    result = status.get("result") or {}
    usage = result.get("usage") or {}
    return {
        "status": status["status"],
        "error": status.get("error"),
        # a design call, one call per row, a query call: each extracted or reported failed
        "chunks": len((result.get("schema") or {}).get("entities") or []) + 2 if result else 0,
        "rows": len(result.get("csv_data") or []),
        "extracted": usage.get("extracted", 0),
        "failed": usage.get("failed_chunks", 0),
        "usage": usage,
        "seconds": round(seconds, 1),
        **model_log(llm_url),
    }


def poll(read: Callable[[], dict[str, Any]], final: tuple[str, ...], limit: float = 900) -> dict[str, Any]:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        body = read()
        if body["status"] in final:
            return body
        time.sleep(0.1)
    raise SystemExit(f"still {body['status']} after {limit:.0f} s")


def reset(llm_url: str) -> None:
    httpx.post(llm_url.removesuffix("/v1") + "/_reset").raise_for_status()


def model_log(llm_url: str) -> dict[str, Any]:
    log = httpx.get(llm_url.removesuffix("/v1") + "/_faults", timeout=30).json()
    return {
        "calls": len(log["calls"]),
        "faults": {k: v for k, v in log["counts"].items() if k != "none"},
        "never_good": len(failed_never_good(log)),
    }


def run(work: Path, faults: str, args: argparse.Namespace) -> dict[str, Any]:
    options = ["--latency-ms", "20", "--responder", "lore_common.testing.responders:everything"]
    options += ["--retry-after", "0.2", "--stall-s", "8"]
    if faults:
        options += ["--faults", faults]
    llm, llm_url = start_fake_llm(work, *options)
    try:
        return {
            "parse": parse(work, llm_url, args.docs),
            "kb_insert": kb_insert(work, llm_url, args.inserts),
            "table": table(work, llm_url, args.rows),
        }
    finally:
        llm.stop()


def lost(workload: dict[str, Any]) -> int:
    """Chunks neither extracted nor reported failed (a failed kb insert job reports its one chunk)."""
    reported = workload["extracted"] + workload["failed"]
    return int(workload["chunks"] - reported)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=500)
    parser.add_argument("--inserts", type=int, default=200)
    parser.add_argument("--rows", type=int, default=50)
    parser.add_argument("--faults", default=FAULTS)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="lore-bench-faults-"))
    try:
        (root / "clean").mkdir()
        (root / "faulty").mkdir()
        clean = run(root / "clean", "", args)
        faulty = run(root / "faulty", args.faults, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    figures: dict[str, Any] = {"faults": args.faults}
    total_clean = total_faulty = 0
    for name in ("parse", "kb_insert", "table"):
        a, b = clean[name], faulty[name]
        total_clean += a["calls"]
        total_faulty += b["calls"]
        print(
            f"{name}: clean {a['calls']} calls in {a['seconds']} s; with faults {b['calls']} calls "
            f"({b['faults']}) in {b['seconds']} s; chunks {b['chunks']}, extracted {b['extracted']}, "
            f"reported failed {b['failed']}, lost {lost(b)}"
            + (f"; {b['status']}: {b.get('error')}" if b.get("status", "completed") != "completed" else "")
        )
        figures[name] = {
            "clean_calls": a["calls"],
            "faulty_calls": b["calls"],
            "call_ratio": round(b["calls"] / max(1, a["calls"]), 3),
            "chunks": b["chunks"],
            "extracted": b["extracted"],
            "failed": b["failed"],
            "lost": lost(b),
            "failed_not_in_fault_log": max(0, b["failed"] - b["never_good"]),
            "faults": b["faults"],
            "clean_seconds": a["seconds"],
            "faulty_seconds": b["seconds"],
            "status": b.get("status", "completed"),
        }
    figures["parse"]["input_tokens"] = faulty["parse"]["usage"].get("input_tokens", 0)
    figures["parse"]["cost"] = faulty["parse"]["usage"].get("cost", 0.0)
    figures["kb_insert"]["failed_jobs"] = faulty["kb_insert"]["failed_jobs"]
    figures["table"]["rows"] = faulty["table"]["rows"]
    figures["call_ratio"] = round(total_faulty / max(1, total_clean), 3)
    figures["lost"] = sum(figures[n]["lost"] for n in ("parse", "kb_insert", "table"))
    figures["goal_call_ratio"] = 1.4
    figures["goal_lost"] = 0
    print(
        f"total model calls: {total_clean} clean, {total_faulty} with faults "
        f"(ratio {figures['call_ratio']}, goal <= 1.4); chunks lost: {figures['lost']} (goal 0)"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
