"""Incremental parsing: a dataset of 1,000 small files parsed in mode 0 (vectors + graph), then one file
edited and the dataset parsed again, then one file deleted and parsed again, then parsed once more
with nothing changed. The fake model server answers entity extraction and embeddings and counts both,
so each parse's model calls and embedded texts are measured, with its wall time.

Goals: an edit costs <= 1 % of the full parse's model calls and embeddings (unchanged files 0), an
unchanged dataset costs 0; after the delete, no chunk row, vector, BM25 entry or graph contribution
of the deleted file remains, and the entities it shared with other files survive.

docdb runs in this process (its stores are then inspected directly); the model server is a process.

    uv run python bench/incremental.py [--files 1000] [--latency-ms 0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from parse import PEOPLE, PLACES  # the parse bench's names, so both benches speak of the same people

from lore_common.testing.asgi import AppClient, running
from lore_common.testing.processes import start_fake_llm
from lore_core.logging import configure_logging
from lore_core.settings import LoggingConfig, load_settings
from lore_docdb.app import create_app
from lore_docdb.index.graph import graph_name

DS = "/api/v1/docdb/files/raw-files/datasets"
KB = "/api/v1/docdb/files/knowledge-bases"
TASKS = "/api/v1/docdb/files/processing/tasks"
DIM = 256


def document(rng: random.Random, n: int) -> str:
    """A small note (one chunk) naming two people of the shared list and a project of its own."""
    p, q = rng.sample(PEOPLE, 2)
    place = rng.choice(PLACES)
    return (
        f"{p} worked in {place} on Project{n:04d}. Later {p} met {q} in {place}, where they discussed "
        f"Project{n:04d} in {rng.randint(1900, 1990)}."
    )


async def parse(client: AppClient, llm: httpx.AsyncClient, **options: Any) -> dict[str, Any]:
    """One parse of the corpus: its task, wall time, and the model server's counts during it."""
    await llm.post("/_reset")
    started = time.perf_counter()
    reply = await client.post(f"{KB}/bench/parse", json={"datasets": ["corpus"], "mode": 0, **options})
    reply.raise_for_status()
    task_id = reply.json()["data"]["tasks"][0]["task_id"]
    while (task := (await client.get(f"{TASKS}/{task_id}")).json())["status"] not in (
        "completed",
        "failed",
        "cancelled",
    ):
        await asyncio.sleep(0.05)
    seconds = time.perf_counter() - started
    if task["status"] != "completed":
        raise SystemExit(f"parse did not complete: {task}")
    stats = (await llm.get("/_stats")).json()
    return {
        "seconds": round(seconds, 2),
        "model_calls": stats["calls"],
        "embedding_calls": stats["embedding_calls"],
        "embedded_texts": stats["embedded_texts"],
        "files": task["metadata"]["files"],
    }


async def leftovers(client: AppClient, file: str, chunk_ids: set[str]) -> dict[str, int]:
    """What the KB still holds of a deleted file, store by store."""
    state = client.app.state
    rows = [c for c in await state.kb_store.chunks_of_kb("bench") if c[3] == file]
    bm25 = [i for i in (await state.bm25.get("bench")).ids if i.decode() in chunk_ids]
    graph = state.graph.store.graph(graph_name("bench"))
    found = 0
    for pattern in ("(x:Entity)", "()-[x:RELATED]->()"):
        result = await graph.query(
            f"MATCH {pattern} WHERE any(c IN x.chunk_ids WHERE c IN $ids) RETURN count(x)",
            {"ids": sorted(chunk_ids)},
        )
        found += int(result.result_set[0][0])
    return {
        "chunk_rows": len(rows),
        "vectors": await state.vectors.count("bench", "file", file),
        "bm25_entries": len(bm25),
        "graph_contributions": found,
    }


async def entity_chunks(client: AppClient) -> dict[str, set[str]]:
    """Every entity of the KB with the chunks that name it."""
    graph = client.app.state.graph.store.graph(graph_name("bench"))
    result = await graph.query("MATCH (n:Entity) RETURN n.id, n.chunk_ids")
    return {row[0]: set(row[1] or []) for row in result.result_set}


async def run(args: argparse.Namespace, work: Path, llm_url: str) -> dict[str, Any]:
    env = {
        "LORE__LOGGING__LEVEL": "WARNING",
        "LORE__DOCDB__SERVER__DATA_DIR": str(work / "docdb"),
        "LORE__DOCDB__GRAPH_STORE__ENABLED": "true",
        "LORE__DOCDB__LLM__PROVIDER": "openai",
        "LORE__DOCDB__LLM__BASE_URL": llm_url,
        "LORE__DOCDB__LLM__API_KEY": "bench",
        "LORE__DOCDB__EMBEDDING_API__PROVIDER": "openai",
        "LORE__DOCDB__EMBEDDING_API__BASE_URL": llm_url,
        "LORE__DOCDB__EMBEDDING_API__API_KEY": "bench",
        "LORE__DOCDB__EMBEDDING_API__DIM": str(DIM),
    }
    configure_logging(LoggingConfig(level="WARNING"), "docdb")
    rng = random.Random(7)
    texts = {f"note{n:04d}.txt": document(rng, n) for n in range(args.files)}
    app = create_app(load_settings(work / "config", environ=env))
    async with (
        running(app, "http://docdb.bench") as client,
        httpx.AsyncClient(base_url=llm_url.removesuffix("/v1"), timeout=30) as llm,
    ):
        client.timeout = httpx.Timeout(300)
        (await client.post(DS, json={"name": "corpus"})).raise_for_status()
        names = sorted(texts)
        for start in range(0, len(names), 100):
            batch = [("files", (name, texts[name].encode())) for name in names[start : start + 100]]
            (await client.post(f"{DS}/corpus/files", files=batch)).raise_for_status()
        (await client.post(KB, json={"name": "bench"})).raise_for_status()

        full = await parse(client, llm)
        edited = names[len(names) // 2]
        body = texts[edited].replace("discussed", "argued about")
        (
            await client.put(f"{DS}/corpus/files", params={"path": edited}, content=body.encode())
        ).raise_for_status()
        edit = await parse(client, llm, incremental=True)

        deleted = names[len(names) // 3]
        state = client.app.state
        doomed = {c[0] for c in await state.kb_store.chunks_of_kb("bench") if c[3] == deleted}
        before = await entity_chunks(client)
        own = {e for e, ids in before.items() if ids and ids <= doomed}  # named by the deleted file only
        shared = {e for e, ids in before.items() if ids & doomed} - own
        (await client.delete(f"{DS}/corpus/files/{deleted}")).raise_for_status()
        delete = await parse(client, llm, incremental=True)
        left = await leftovers(client, deleted, doomed)
        after = await entity_chunks(client)
        shared_kept = sum(1 for e in shared if e in after and after[e] == before[e] - doomed)
        unchanged = await parse(client, llm, incremental=True)
        chunks = await state.kb_store.count_chunks("bench")
    return {
        "files": args.files,
        "chunks": chunks,
        "full": full,
        "edit": edit,
        "delete": delete,
        "unchanged": unchanged,
        "deleted_file_leftovers": left,
        "shared_entities_of_deleted_file": len(shared),
        # still there, with exactly their other files' chunks
        "shared_entities_surviving": shared_kept,
        "own_entities_of_deleted_file": len(own),
        "own_entities_of_deleted_file_surviving": len(own & set(after)),
    }


def ratio(part: int, whole: int) -> float:
    return round(part / whole, 5) if whole else 0.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--latency-ms", type=float, default=0)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lore-bench-incremental-"))
    llm, llm_url = start_fake_llm(
        work,
        "--latency-ms",
        str(args.latency_ms),
        "--responder",
        "lore_common.testing.responders:entities",
        "--embedding-dim",
        str(DIM),
    )
    try:
        result = asyncio.run(run(args, work, llm_url))
    finally:
        llm.stop()
        shutil.rmtree(work, ignore_errors=True)
    full, edit, delete, unchanged = result["full"], result["edit"], result["delete"], result["unchanged"]
    figures = {
        "files": result["files"],
        "chunks": result["chunks"],
        **{
            f"{step}_{key}": value
            for step in ("full", "edit", "delete", "unchanged")
            for key, value in result[step].items()
        },
        "edit_model_call_ratio": ratio(edit["model_calls"], full["model_calls"]),
        "edit_embedded_text_ratio": ratio(edit["embedded_texts"], full["embedded_texts"]),
        "delete_model_calls": delete["model_calls"],
        "deleted_file_leftovers": result["deleted_file_leftovers"],
        "shared_entities_of_deleted_file": result["shared_entities_of_deleted_file"],
        "shared_entities_surviving": result["shared_entities_surviving"],
        "own_entities_of_deleted_file": result["own_entities_of_deleted_file"],
        "own_entities_of_deleted_file_surviving": result["own_entities_of_deleted_file_surviving"],
        "goal_ratio": 0.01,
    }
    left = sum(result["deleted_file_leftovers"].values())
    print(
        f"{result['files']} files, {result['chunks']} chunks.\n"
        f"full parse: {full['seconds']} s, {full['model_calls']} model calls, "
        f"{full['embedded_texts']} texts embedded in {full['embedding_calls']} calls\n"
        f"one file edited: {edit['seconds']} s, {edit['model_calls']} model calls, "
        f"{edit['embedded_texts']} texts embedded ({figures['edit_model_call_ratio']:.2%} and "
        f"{figures['edit_embedded_text_ratio']:.2%} of the full parse; goal <= 1 %), files {edit['files']}\n"
        f"one file deleted: {delete['seconds']} s, {delete['model_calls']} model calls, "
        f"{delete['embedded_texts']} texts embedded; what remains of it: {result['deleted_file_leftovers']}; "
        f"{result['shared_entities_surviving']} of the {result['shared_entities_of_deleted_file']} entities "
        f"it shared survive with their other files' chunks; "
        f"{result['own_entities_of_deleted_file_surviving']} of the {result['own_entities_of_deleted_file']} "
        "only it named remain\n"
        f"nothing changed: {unchanged['seconds']} s, {unchanged['model_calls']} model calls, "
        f"{unchanged['embedded_texts']} texts embedded\n"
        f"verdict: {'ok' if left == 0 and figures['edit_model_call_ratio'] <= 0.01 else 'MISSED'}"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
