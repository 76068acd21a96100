"""mem `kb` forgets: the list of inserts, and deleting one with what only it brought to the graph."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from lore_common.testing.asgi import AppClient
from lore_common.testing.flows import CURIE, FACT, HOPPER, INSERT, ask, communities_ready, finished, insert
from lore_common.testing.pytest_plugin import StoreProfile
from lore_mem.kb.models import Community

INSERTS = "/api/v1/mem/kb/inserts"


@pytest.fixture
def db_env(store_profile: StoreProfile) -> dict[str, str]:
    """Forgetting runs on the embedded stores, on PostgreSQL + Qdrant, and all in PostgreSQL."""
    return store_profile.env("mem")


async def _settled(mem: AppClient, limit: float = 30.0) -> None:
    """Until the communities cover every committed insert (no community run left to do)."""
    store = mem.app.state.kb.store
    async with asyncio.timeout(limit):
        while await store.counter("communities_at") < await store.counter("changes"):
            await asyncio.sleep(0.05)


async def _done(mem: AppClient, text: str, workspace: str | None = None) -> str:
    params = {"workspace": workspace} if workspace else {}
    response = await mem.post(INSERT, data={"query": text}, params=params)
    assert response.status_code == 202, response.text
    job_id = str(response.json()["id"])
    async with asyncio.timeout(10):
        while (await mem.get(f"{INSERT}/{job_id}", params=params)).json()["status"] not in ("done", "failed"):
            await asyncio.sleep(0.02)
    return job_id


async def test_the_inserts_of_a_workspace_are_listed_newest_first_without_their_whole_text(
    mem: AppClient,
) -> None:
    long_text = "Ilsa Varga keeps the lighthouse. " * 2000
    first = await _done(mem, HOPPER)
    second = await _done(mem, long_text)
    await _done(mem, FACT, workspace="team-a")
    page = (await mem.get(INSERTS)).json()
    assert page["total"] == 2 and [i["id"] for i in page["inserts"]] == [second, first]
    listed = page["inserts"][0]
    assert listed["status"] == "done" and listed["chunks"] > 1 and listed["chars"] == len(long_text)
    assert len(listed["preview"]) <= 120 and listed["preview"].startswith("Ilsa Varga keeps")
    assert listed["created_at"]
    paged = (await mem.get(INSERTS, params={"offset": 1, "limit": 1})).json()
    assert [i["id"] for i in paged["inserts"]] == [first] and paged["total"] == 2
    team = (await mem.get(INSERTS, params={"workspace": "team-a"})).json()
    assert team["total"] == 1 and team["inserts"][0]["preview"] == FACT
    assert (await mem.get(INSERTS, params={"limit": 0})).status_code == 400


async def test_deleting_an_insert_forgets_its_text_and_the_entities_only_it_brought(mem: AppClient) -> None:
    kept = await _done(mem, CURIE)
    hopper = await _done(mem, HOPPER + " Grace Hopper met Marie Curie in Paris.")
    await communities_ready(mem)
    await _settled(mem)  # a forget during a community run: its own test below
    before = await mem.app.state.kb.store.counts()
    assert "Hopper" in (await ask(mem, "Who developed the first compiler?", mode="naive"))["rag_memory"]

    response = await mem.delete(f"{INSERT}/{hopper}")
    assert response.status_code == 200, response.text
    gone = response.json()
    assert gone["id"] == hopper and gone["deleted"] is True and gone["chunks"] == 1 and gone["entities"] >= 1

    store = mem.app.state.kb.store
    after = await store.counts()
    assert after["chunks"] == before["chunks"] - 1 and after["entities"] < before["entities"]
    assert not await store.known_entities(["grace hopper"])
    assert await store.known_entities(["marie curie"])  # the other insert still mentions her
    curie = (await store.entities(["marie curie"]))["marie curie"]
    assert not any("Hopper" in d for d in curie.descriptions), curie.descriptions  # its sentence went
    assert not any("hopper" in (r.source, r.target) for r in await store.relations_around(["grace hopper"]))
    for mode in ("naive", "local", "global", "hybrid"):
        answer = await ask(mem, "Who developed the first compiler?", mode=mode)
        assert "Hopper" not in answer["rag_memory"] + answer["final_answer"], (mode, answer)
    assert "polonium" in (await ask(mem, "What did Marie Curie discover?", mode="local"))["final_answer"]
    # The record that held its text went too; the other insert stays listed.
    assert (await mem.get(f"{INSERT}/{hopper}")).status_code == 404
    assert [i["id"] for i in (await mem.get(INSERTS)).json()["inserts"]] == [kept]
    again = await mem.delete(f"{INSERT}/{hopper}")
    assert again.status_code == 404 and "does not exist" in again.json()["detail"]
    # Its chunk vectors went: the nearest chunks are the other insert's only.
    kb = mem.app.state.kb
    vector = await kb.embedder.embed_query("Grace Hopper compiler")
    nearest = await store.chunk_vectors.search(np.asarray(vector, dtype=np.float32), 10)
    assert all(str(point["ref"]).startswith(kept) for point, _ in nearest)


async def test_an_insert_of_another_workspace_or_still_running_is_not_deleted(mem: AppClient) -> None:
    job_id = await _done(mem, FACT, workspace="team-a")
    response = await mem.delete(f"{INSERT}/{job_id}")
    assert response.status_code == 404 and response.json()["detail"]
    assert (await mem.get(f"{INSERT}/{job_id}", params={"workspace": "team-a"})).status_code == 200
    kb = mem.app.state.kb
    slots = kb.config.max_concurrent_inserts
    for _ in range(slots):  # every insert slot taken: the next insert waits, unfinished
        await kb._slots.acquire()
    try:
        job = await insert(mem, HOPPER)
        running = await mem.delete(f"{INSERT}/{job['id']}")
        assert running.status_code == 409 and "once it is done" in running.json()["detail"]
    finally:
        for _ in range(slots):
            kb._slots.release()
    assert (await finished(mem, job["id"]))["status"] == "done"
    assert (await mem.delete(f"{INSERT}/{job['id']}")).status_code == 200


async def test_a_community_run_that_read_the_graph_before_a_forget_saves_nothing(mem: AppClient) -> None:
    """Its summaries may quote the forgotten text: kept, they would be answered until the members
    change (a community with the same members keeps its summary)."""
    await _done(mem, CURIE)
    hopper = await _done(mem, HOPPER + " Grace Hopper met Marie Curie in Paris.")
    await communities_ready(mem)
    store = mem.app.state.kb.store
    read_at, changes = await store.counter("forgets"), await store.counter("changes")
    stale = [Community(id="stale", members=["grace hopper", "marie curie"], title="t", summary=HOPPER)]
    assert (await mem.delete(f"{INSERT}/{hopper}")).status_code == 200
    assert await store.save_communities(stale, {}, changes, read_at) is False
    assert all(c.id != "stale" for c in await store.communities())
