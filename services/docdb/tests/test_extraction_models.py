"""Entity extraction through a real OpenAI-compatible model (the openai SDK), mocked with respx."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest
import respx

from lore_common.providers.chat import schema_of
from lore_common.providers.extraction import Extraction
from lore_common.testing.replies import chat_completion as completion

pytestmark = pytest.mark.spread  # independent tests: xdist hands them out one by one

DS = "/api/v1/docdb/files/raw-files/datasets"
KB = "/api/v1/docdb/files/knowledge-bases"
TASKS = "/api/v1/docdb/files/processing/tasks"
LLM = "https://llm.example.test/v1"
MODEL_ENV = {
    "LORE__DOCDB__GRAPH_STORE__ENABLED": "true",
    "LORE__DOCDB__LLM__PROVIDER": "openai",
    "LORE__DOCDB__LLM__BASE_URL": LLM,
    "LORE__DOCDB__LLM__API_KEY": "sk-test",
    "LORE__DOCDB__LLM__MODEL": "gpt-4o-mini",
    "LORE__DOCDB__LLM__RETRY_BACKOFF": "0.01",
}
TEXT = "Ada Lovelace wrote the first program for the Analytical Engine designed by Charles Babbage."


EXTRACTION = {
    "entities": [
        {
            "name": "Ada Lovelace",
            "type": "客观实体",
            "subtype": "人物",
            "description": "Wrote the first program",
        },
        {
            "name": "Charles Babbage",
            "type": "客观实体",
            "subtype": "人物",
            "description": "Designed the engine",
        },
        {
            "name": "Analytical Engine",
            "type": "客观实体",
            "subtype": "机器",
            "description": "A mechanical computer",
        },
    ],
    "relations": [
        {"source": "Ada Lovelace", "target": "Analytical Engine", "description": "programmed", "weight": 8},
        {"source": "Charles Babbage", "target": "Analytical Engine", "description": "designed", "weight": 9},
        {
            "source": "Ada Lovelace",
            "target": "Somebody Unnamed",
            "description": "not in the entity list",
            "weight": 2,
        },
    ],
}


async def wait_done(client: Any, task_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        task = (await client.get(f"{TASKS}/{task_id}")).json()
        if task["status"] in ("completed", "failed", "cancelled"):
            return task
        await asyncio.sleep(0.05)
    raise AssertionError("task did not finish")


async def start_parse(client: Any, schema: str | None = None) -> str:
    await client.post(DS, json={"name": "history"})
    await client.post(f"{DS}/history/files", files={"files": ("ada.txt", TEXT.encode())})
    await client.post(KB, json={"name": "computing"})
    body: dict[str, Any] = {"datasets": ["history"]}
    if schema:
        body["schema_name"] = schema
    r = await client.post(f"{KB}/computing/parse", json=body)
    return str(r.json()["data"]["tasks"][0]["task_id"])


async def test_schema_is_injected_and_the_model_reply_builds_the_graph(docdb_factory: Any) -> None:
    with respx.mock(assert_all_called=False, using="httpx") as mock:
        mock.route(host="docdb.test").pass_through()
        route = mock.post(f"{LLM}/chat/completions").mock(
            return_value=httpx.Response(200, json=completion(json.dumps(EXTRACTION, ensure_ascii=False)))
        )
        async with docdb_factory(**MODEL_ENV) as client:
            schema = {
                "name": "pioneers",
                "entities": [
                    {"type": "客观实体", "subtype": "人物", "attributes": ["出生年份"]},
                    {"type": "客观实体", "subtype": "机器"},
                ],
            }
            assert (await client.post("/api/v1/docdb/schemas", json=schema)).status_code == 201
            task_id = await start_parse(client, "pioneers")
            # Deleting the schema after the parse started changes nothing for it.
            assert (await client.delete("/api/v1/docdb/schemas/pioneers")).status_code == 200
            task = await wait_done(client, task_id)
            assert task["status"] == "completed", task
            sent = json.loads(route.calls.last.request.content)
            system = sent["messages"][0]["content"]
            assert "客观实体 / 人物: 出生年份" in system and "客观实体 / 机器" in system
            assert sent["messages"][1]["content"] == TEXT
            # The reply's schema travels as the response format (validated by the same Struct).
            assert sent["response_format"]["type"] == "json_schema"
            assert sent["response_format"]["json_schema"]["name"] == "Extraction"
            assert sent["response_format"]["json_schema"]["schema"] == schema_of(Extraction)
            graph = client.app.state.graph
            top = {e["name"]: e for e in await graph.top_entities("computing", 10)}
            assert set(top) == {"Ada Lovelace", "Charles Babbage", "Analytical Engine"}
            assert top["Analytical Engine"]["degree"] == 2
            relations = await graph.sample_relations("computing", 10)
            pairs = {frozenset((r["source"], r["target"])): r for r in relations}
            # The relation to an entity the model never listed is dropped.
            assert set(pairs) == {
                frozenset(("Ada Lovelace", "Analytical Engine")),
                frozenset(("Charles Babbage", "Analytical Engine")),
            }
            assert pairs[frozenset(("Charles Babbage", "Analytical Engine"))]["weight"] == 9


async def test_malformed_reply_is_retried_then_the_task_fails_readably(docdb_factory: Any) -> None:
    with respx.mock(assert_all_called=False, using="httpx") as mock:
        mock.route(host="docdb.test").pass_through()
        route = mock.post(f"{LLM}/chat/completions").mock(
            return_value=httpx.Response(200, json=completion("Sure! Here are the entities: Ada, Charles."))
        )
        async with docdb_factory(**MODEL_ENV) as client:
            task = await wait_done(client, await start_parse(client))
            assert task["status"] == "failed"
            assert "openai:gpt-4o-mini" in task["error"] and "malformed" in task["error"]
            assert route.call_count == 3
            state = client.app.state
            assert await state.vectors.count("computing") == 0  # rolled back
            assert await state.kb_store.count_chunks("computing") == 0


async def test_malformed_then_valid_reply_completes(docdb_factory: Any) -> None:
    with respx.mock(assert_all_called=False, using="httpx") as mock:
        mock.route(host="docdb.test").pass_through()
        mock.post(f"{LLM}/chat/completions").mock(
            side_effect=[
                httpx.Response(200, json=completion('{"entities": [{"name": "Ada Lovelace"')),
                httpx.Response(200, json=completion(json.dumps(EXTRACTION))),
            ]
        )
        async with docdb_factory(**MODEL_ENV) as client:
            task = await wait_done(client, await start_parse(client))
            assert task["status"] == "completed", task


def extraction_or_garbage(request: httpx.Request) -> httpx.Response:
    """A model that cannot read one of the files: every reply about it is prose."""
    user = json.loads(request.content)["messages"][1]["content"]  # the chunk (re-asks come after it)
    if "cuneiform" in user:
        return httpx.Response(200, json=completion("I am sorry, I cannot read this."))
    name = user.split(" ", 1)[0]
    return httpx.Response(200, json=completion(json.dumps({"entities": [{"name": name}]})))


async def upload_parse(client: Any, texts: dict[str, str]) -> str:
    await client.post(DS, json={"name": "notes"})
    files = [("files", (name, text.encode())) for name, text in texts.items()]
    await client.post(f"{DS}/notes/files", files=files)
    await client.post(KB, json={"name": "notes"})
    r = await client.post(f"{KB}/notes/parse", json={"datasets": ["notes"]})
    return str(r.json()["data"]["tasks"][0]["task_id"])


NOTES = {f"n{i}.txt": f"Person{i} met somebody in town number {i}." for i in range(6)}


async def test_a_chunk_that_fails_is_reported_in_the_task_and_a_reparse_asks_only_for_it(
    docdb_factory: Any,
) -> None:
    texts = {**NOTES, "tablet.txt": "Marks in cuneiform nobody reads."}
    with respx.mock(assert_all_called=False, using="httpx") as mock:
        mock.route(host="docdb.test").pass_through()
        route = mock.post(f"{LLM}/chat/completions").mock(side_effect=extraction_or_garbage)
        async with docdb_factory(**MODEL_ENV) as client:
            task = await wait_done(client, await upload_parse(client, texts))
            assert task["status"] == "completed", task
            usage = task["metadata"]["usage"]
            assert usage["failed_chunks"] == 1
            [example] = usage["failed_examples"]
            assert example["chunk"].endswith(":6") and "malformed Extraction" in example["reason"]
            # six chunks in one call each, the unreadable one asked three times
            assert route.call_count == 9 and usage["model_calls"] == 9
            assert usage["input_tokens"] == 9 * 310 and usage["output_tokens"] == 9 * 120
            names = {e["name"] for e in await client.app.state.graph.top_entities("notes", 20)}
            assert names == {f"Person{i}" for i in range(6)}

            # The same files again: what was extracted comes from the cache; only the failure is asked.
            r = await client.post(f"{KB}/notes/parse", json={"datasets": ["notes"], "force": True})
            again = await wait_done(client, str(r.json()["data"]["tasks"][0]["task_id"]))
            assert again["status"] == "completed", again
            assert route.call_count == 12
            assert again["metadata"]["usage"]["cache_hits"] == 6


async def test_more_failures_than_the_configured_share_fail_the_parse(docdb_factory: Any) -> None:
    texts = {"a.txt": "Person1 wrote in cuneiform.", "b.txt": "Person2 wrote plainly."}
    with respx.mock(assert_all_called=False, using="httpx") as mock:
        mock.route(host="docdb.test").pass_through()
        mock.post(f"{LLM}/chat/completions").mock(side_effect=extraction_or_garbage)
        async with docdb_factory(**MODEL_ENV, LORE__DOCDB__LLM__MAX_FAILED_SHARE="0.4") as client:
            task = await wait_done(client, await upload_parse(client, texts))
            assert task["status"] == "failed"
            assert "1 of 2 chunks failed extraction" in task["error"]
            assert "llm.max_failed_share (40%)" in task["error"]
            assert task["metadata"]["usage"]["failed_chunks"] == 1


async def test_a_token_budget_smaller_than_the_parse_stops_it_naming_the_budget(docdb_factory: Any) -> None:
    with respx.mock(assert_all_called=False, using="httpx") as mock:
        mock.route(host="docdb.test").pass_through()
        route = mock.post(f"{LLM}/chat/completions").mock(side_effect=extraction_or_garbage)
        env = {
            **MODEL_ENV,
            "LORE__DOCDB__LLM__TASK_TOKEN_BUDGET": "1000",  # each call costs 430
            "LORE__PARAMETER__GRAPH_CONFIG__MAX_WORKERS": "1",
        }
        async with docdb_factory(**env) as client:
            task = await wait_done(client, await upload_parse(client, NOTES))
            assert task["status"] == "failed"
            assert "token budget of 1000 (llm.task_token_budget)" in task["error"]
            assert route.call_count == 3
            assert task["metadata"]["usage"]["input_tokens"] == 3 * 310
            assert await client.app.state.kb_store.count_chunks("notes") == 0  # rolled back


async def test_a_parse_stopped_mid_way_then_run_again_pays_for_no_chunk_twice(docdb_factory: Any) -> None:
    asked: list[str] = []

    def model(request: httpx.Request) -> httpx.Response:
        asked.append(json.loads(request.content)["messages"][1]["content"])
        return extraction_or_garbage(request)

    with respx.mock(assert_all_called=False, using="httpx") as mock:
        mock.route(host="docdb.test").pass_through()
        mock.post(f"{LLM}/chat/completions").mock(side_effect=model)
        stopped = {**MODEL_ENV, "LORE__DOCDB__LLM__TASK_TOKEN_BUDGET": "1000"}
        async with docdb_factory(**stopped, LORE__PARAMETER__GRAPH_CONFIG__MAX_WORKERS="1") as client:
            task = await wait_done(client, await upload_parse(client, NOTES))
            assert task["status"] == "failed" and len(asked) == 3
        async with docdb_factory(**MODEL_ENV) as client:  # a restart, without the budget
            r = await client.post(f"{KB}/notes/parse", json={"datasets": ["notes"]})
            task = await wait_done(client, str(r.json()["data"]["tasks"][0]["task_id"]))
            assert task["status"] == "completed", task
            assert task["metadata"]["usage"]["cache_hits"] == 3
            assert len(asked) == 6 and len(set(asked)) == 6  # each chunk's extraction paid for once


async def test_a_parse_interrupted_by_the_process_ending_resumes_at_restart_without_paying_twice(
    docdb_factory: Any,
) -> None:
    asked: list[str] = []
    hang = asyncio.Event()

    async def model(request: httpx.Request) -> httpx.Response:
        chunk = json.loads(request.content)["messages"][1]["content"]
        asked.append(chunk)
        if len(asked) > 3:  # the process "dies" while the fourth chunk is with the model
            await hang.wait()
        return extraction_or_garbage(request)

    env = {**MODEL_ENV, "LORE__DOCDB__RESUME_INTERRUPTED": "true"}
    with respx.mock(assert_all_called=False, using="httpx") as mock:
        mock.route(host="docdb.test").pass_through()
        mock.post(f"{LLM}/chat/completions").mock(side_effect=model)
        async with docdb_factory(**env, LORE__PARAMETER__GRAPH_CONFIG__MAX_WORKERS="1") as client:
            task_id = await upload_parse(client, NOTES)
            cache = client.app.state.parse.pipeline.cache
            deadline = time.monotonic() + 20  # the fourth chunk asked, the first three's results stored
            while (len(asked) < 4 or await cache.count() < 3) and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            assert len(asked) == 4 and await cache.count() == 3
        hang.set()
        async with docdb_factory(**env) as client:  # the restart: the task runs again
            task = await wait_done(client, task_id)
            assert task["status"] == "completed", task
            assert task["metadata"]["usage"]["cache_hits"] == 3
            names = {e["name"] for e in await client.app.state.graph.top_entities("notes", 20)}
            assert names == {f"Person{i}" for i in range(6)}
    # each chunk stored before the end was not asked again; the one in flight was
    assert len(asked) == 7 and len(set(asked)) == 6
