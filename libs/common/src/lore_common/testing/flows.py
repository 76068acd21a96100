"""Client-side flows over docdb's and mem's public API, shared by the tests of several modules:
what a user's script does (upload, parse, wait; insert, wait, ask), written once."""

from __future__ import annotations

import asyncio
import io
import time
from typing import Any

from lore_common.testing.asgi import AppClient

DS = "/api/v1/docdb/files/raw-files/datasets"
KB = "/api/v1/docdb/files/knowledge-bases"
TASKS = "/api/v1/docdb/files/processing/tasks"
INSERT = "/api/v1/mem/kb/insert"
QUERY = "/api/v1/mem/kb/query"
HOPPER = "Grace Hopper was a computer scientist. Grace Hopper developed the first compiler in 1952."
FACT = "Captain Ilsa Varga has kept the Zanzibar lighthouse burning since 1923."

CURIE = (
    "Marie Curie was a physicist who worked at the University of Paris. "
    "Marie Curie and Pierre Curie discovered polonium. "
    "The Nobel Prize was awarded to Marie Curie in 1911.\n\n"
    "Albert Einstein visited the University of Paris and met Marie Curie."
)


async def upload(client: AppClient, dataset: str, files: dict[str, bytes]) -> None:
    await client.post(DS, json={"name": dataset})
    for name, body in files.items():
        r = await client.post(f"{DS}/{dataset}/files", files={"files": (name, body)})
        assert r.status_code == 200, r.text


async def wait_task(
    client: AppClient,
    task_id: str,
    until: tuple[str, ...] = ("completed", "failed", "cancelled"),
    seconds: float = 60,
) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        task: dict[str, Any] = (await client.get(f"{TASKS}/{task_id}")).json()
        if task["status"] in until:
            return task
        await asyncio.sleep(0.05)
    raise AssertionError(f"task {task_id} stuck: {task}")


async def parse(client: AppClient, kb: str, datasets: list[str], **extra: Any) -> list[str]:
    r = await client.post(f"{KB}/{kb}/parse", json={"datasets": datasets, **extra})
    assert r.status_code == 200, r.text
    assert r.json()["data"]["mode"] == extra.get("mode", 0)
    return [t["task_id"] for t in r.json()["data"]["tasks"]]


async def insert(client: AppClient, text: str, files: dict[str, Any] | None = None) -> dict[str, Any]:
    """A mem `kb` insert; checks the 202 job body the contract gives."""
    response = await client.post(INSERT, data={"query": text}, files=files or None)
    assert response.status_code == 202, response.text
    job = response.json()
    assert job["status"] == "accepted" and job["query"] == text
    assert set(job) == {"id", "query", "status", "videocaption", "audiocaption", "imagecaption"}
    return dict(job)


async def finished(client: AppClient, job_id: str, limit: float = 30.0) -> dict[str, Any]:
    async with asyncio.timeout(limit):
        while True:
            job: dict[str, Any] = (await client.get(f"{INSERT}/{job_id}")).json()
            if job["status"] in ("done", "failed"):
                return job
            await asyncio.sleep(0.02)


async def ask(client: AppClient, question: str, **body: Any) -> dict[str, Any]:
    response = await client.post(QUERY, json={"query": question, **body})
    assert response.status_code == 200, response.text
    return dict(response.json())


async def communities_ready(client: AppClient, limit: float = 10.0) -> None:
    async with asyncio.timeout(limit):
        while not (await client.app.state.kb.store.counts())["communities"]:  # noqa: ASYNC110 - polls a store
            await asyncio.sleep(0.02)


def text_png(text: str) -> bytes:
    """A PNG of one line of black text: what the offline OCR of `kb` inserts reads."""
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", (900, 140), "white")
    ImageDraw.Draw(image).text((20, 40), text, fill="black", font=ImageFont.load_default(size=48))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
