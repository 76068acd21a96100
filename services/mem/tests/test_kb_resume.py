"""mem `kb` inserts whose process stopped run again at the next start (`resume_interrupted`, on by
default) without paying twice for a model call; an insert already stored is not stored twice; one
interrupted too often, or whose media are gone, fails saying why."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import httpx
import msgspec
import respx

from lore_common.testing.flows import FACT, INSERT, ask, finished, insert
from lore_common.testing.replies import prompt_of, reply
from lore_mem.kb.models import InsertJob

LLM = "https://llm.example.test/v1"
MODEL = {
    "LORE__MEM__MEMORYKB__LLM__PROVIDER": "openai",
    "LORE__MEM__MEMORYKB__LLM__BASE_URL": LLM,
    "LORE__MEM__MEMORYKB__LLM__API_KEY": "sk-test-kb",
    "LORE__MEM__MEMORYKB__LLM__MODEL": "gpt-4o-mini",
    "LORE__MEM__MEMORYKB__LLM__MAX_RETRIES": "0",
    "LORE__MEM__MEMORYKB__LLM__MAX_CONCURRENT_REQUESTS": "1",
    "LORE__PARAMETER__CHUNK_CONFIG__CHUNK_SIZE": "16",
    "LORE__PARAMETER__CHUNK_CONFIG__OVERLAP": "0",
}
KEEPERS = " ".join(
    f"Keeper{i} has tended the lighthouse of harbour {i} through every storm since {1900 + i}."
    for i in range(8)
)


async def test_an_insert_cut_off_mid_extraction_resumes_at_restart_and_pays_for_no_chunk_twice(
    mem_factory: Any,
) -> None:
    asked: list[str] = []
    hang = asyncio.Event()

    async def model(request: httpx.Request) -> httpx.Response:
        system, user = prompt_of(request)
        if not system.startswith("Extract"):
            return reply("Keepers of lighthouses.")  # a community summary
        asked.append(user)
        if len(asked) > 3:  # the process stops while the fourth chunk is with the model
            await hang.wait()
        names = re.findall(r"Keeper\d+", user)
        return reply({"entities": [{"name": n, "type": "person"} for n in names], "relations": []})

    with respx.mock(assert_all_called=False, using="httpx") as router:
        router.route(host="mem.test").pass_through()
        router.post(f"{LLM}/chat/completions").mock(side_effect=model)
        async with mem_factory(**MODEL) as client:
            job_id = (await insert(client, KEEPERS))["id"]
            cache = client.app.state.kb.cache
            deadline = time.monotonic() + 20  # the fourth chunk asked, the first three's results stored
            while (len(asked) < 4 or await cache.count() < 3) and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            assert len(asked) == 4 and await cache.count() == 3
        hang.set()
        async with mem_factory(**MODEL) as client:  # the restart: the insert runs again
            job = await finished(client, job_id)
            assert job["status"] == "done" and job["error"] is None, job
            assert job["usage"]["cache_hits"] == 3  # the three chunks answered before the stop
            chunks = job["chunks"]
            assert chunks > 4 and job["entities"] == 8
            assert "Keeper7" in (await ask(client, "Keeper7 harbour 7", mode="naive"))["rag_memory"]
    # Each chunk answered before the stop was not asked again; the one in flight was.
    assert len(asked) == chunks + 1 and len(set(asked)) == chunks


async def test_an_insert_stored_before_the_stop_is_done_once_and_one_stopped_too_often_fails(
    mem_factory: Any, relational_url: str | None
) -> None:
    # On SQLite every unfinished job is this process's; on PostgreSQL those this replica owned.
    env = {"LORE__MEM__DATABASE__URL": relational_url} if relational_url else {}
    async with mem_factory(**env) as client:
        kb = client.app.state.kb
        stored = await finished(client, (await insert(client, FACT))["id"])
        assert stored["status"] == "done"
        jobs, owner = kb.runner.store, kb.runner.owner
        # The process died between the insert's commit and its `done`.
        record = await jobs.get(stored["id"])
        await jobs.save(msgspec.structs.replace(record, status="processing"), owner)
        # One that has already been resumed three times, and one whose image is gone.
        await jobs.save(
            InsertJob(id="loops", query="The Oslo ferry sails at dawn.", status="processing", resumed=3),
            owner,
        )
        await jobs.save(
            InsertJob(id="no-media", query="A quay.", status="processing", media={"image": "image.png"}),
            owner,
        )
    async with mem_factory(**env) as client:
        again = await finished(client, stored["id"])
        assert again["status"] == "done", again
        assert (again["chunks"], again["entities"]) == (stored["chunks"], stored["entities"])
        assert (await client.app.state.kb.store.counts())["chunks"] == stored["chunks"]  # not twice
        loops = (await client.get(f"{INSERT}/loops")).json()
        assert loops["status"] == "failed" and "interrupted 4 times" in loops["error"], loops
        gone = (await client.get(f"{INSERT}/no-media")).json()
        assert gone["status"] == "failed" and "image file is gone" in gone["error"], gone
        assert "Oslo" not in (await ask(client, "Oslo ferry?", mode="naive"))["rag_memory"]
