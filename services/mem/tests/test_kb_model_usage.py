"""mem `kb` inserts against a real model client: usage in the job, the extraction cache, failures
reported rather than dropped."""

from __future__ import annotations

import json
from typing import Any

import httpx
import respx

from lore_common.testing.flows import FACT, finished, insert
from lore_common.testing.replies import prompt_of, reply

LLM = "https://llm.example.test/v1"
MODEL = {
    "LORE__MEM__MEMORYKB__LLM__PROVIDER": "openai",
    "LORE__MEM__MEMORYKB__LLM__BASE_URL": LLM,
    "LORE__MEM__MEMORYKB__LLM__API_KEY": "sk-test-kb",
    "LORE__MEM__MEMORYKB__LLM__MODEL": "gpt-4o-mini",
    "LORE__MEM__MEMORYKB__LLM__MAX_RETRIES": "0",
    "LORE__MEM__MEMORYKB__LLM__PRICE_INPUT": "1.0",
}
EXTRACTION = {"entities": [{"name": "Ilsa Varga", "type": "person"}, {"name": "Zanzibar", "type": "place"}]}


async def test_an_insert_reports_its_usage_and_the_same_text_again_is_served_from_the_cache(
    mem_factory: Any,
) -> None:
    asked: list[str] = []

    def model(request: httpx.Request) -> httpx.Response:
        system, user = prompt_of(request)
        if system.startswith("Extract"):
            asked.append(user)
            assert json.loads(request.content)["response_format"]["type"] == "json_schema"
            return reply(EXTRACTION)
        return reply("A summary.")

    with respx.mock(assert_all_called=False, using="httpx") as router:
        router.route(host="mem.test").pass_through()
        router.post(f"{LLM}/chat/completions").mock(side_effect=model)
        async with mem_factory(**MODEL) as client:
            job = await finished(client, (await insert(client, FACT))["id"])
            assert job["status"] == "done" and job["entities"] == 2
            usage = job["usage"]
            assert usage["model_calls"] == 1 and usage["input_tokens"] == 310 and usage["extracted"] == 1
            assert usage["cost"] == 310 / 1e6 and usage["failed_chunks"] == 0
            again = await finished(client, (await insert(client, FACT))["id"])
            assert again["status"] == "done" and again["usage"]["cache_hits"] == 1
            assert again["usage"]["model_calls"] == 0 and len(asked) == 1


async def test_an_insert_whose_extraction_keeps_failing_fails_saying_why(mem_factory: Any) -> None:
    def model(request: httpx.Request) -> httpx.Response:
        return reply("I would rather not.")

    with respx.mock(assert_all_called=False, using="httpx") as router:
        router.route(host="mem.test").pass_through()
        router.post(f"{LLM}/chat/completions").mock(side_effect=model)
        async with mem_factory(**MODEL) as client:
            job = await finished(client, (await insert(client, FACT))["id"])
            assert job["status"] == "failed"
            assert "1 of 1 chunks failed extraction" in job["error"]
            assert "malformed Extraction after 3 attempts" in job["error"]
