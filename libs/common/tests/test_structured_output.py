"""Structured replies through the real SDKs (respx checks what is sent): the reply's schema as OpenAI's
`response_format` or an Anthropic tool, repairs that save a call, Retry-After, budgets and the cache."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import msgspec
import pytest
import respx
from prometheus_client import generate_latest

from lore_common.providers.chat import (
    AnthropicChat,
    ChatMessage,
    ChatRequest,
    OpenAIChat,
    complete_structured,
    decode_reply,
    retry_after,
    schema_of,
)
from lore_common.providers.extraction import Extraction
from lore_common.providers.usage import BudgetExceeded, track_usage
from lore_common.testing.replies import chat_completion as completion
from lore_core.settings import LLMConfig

OPENAI_URL = "https://llm.example.test/v1"
ANTHROPIC_URL = "https://anthropic.example.test"
provider = respx.mock(using="httpx", assert_all_called=False)

REQUEST = ChatRequest(
    messages=[ChatMessage("system", "Extract entities."), ChatMessage("user", "Marie Curie lived in Paris.")]
)
GOOD = {"entities": [{"name": "Marie Curie", "type": "person"}, {"name": "Paris", "type": "place"}]}


def config(**overrides: Any) -> LLMConfig:
    base = {
        "provider": "openai",
        "api_key": "sk-test",
        "base_url": OPENAI_URL,
        "model": "gpt-4o-mini",
        "max_retries": 2,
        "retry_backoff": 0.01,
    }
    base.update(overrides)
    return msgspec.convert(base, LLMConfig)


def sent(route: respx.Route, index: int = -1) -> dict[str, Any]:
    return json.loads(route.calls[index].request.content)  # type: ignore[no-any-return]


@provider
async def test_openai_compatible_request_carries_the_replys_json_schema() -> None:
    route = provider.post(f"{OPENAI_URL}/chat/completions").mock(
        return_value=httpx.Response(200, json=completion(json.dumps(GOOD)))
    )
    model = OpenAIChat(config())
    result = await complete_structured(model, REQUEST, Extraction)
    assert [e.name for e in result.entities] == ["Marie Curie", "Paris"]
    body = sent(route)
    assert body["response_format"]["type"] == "json_schema"
    schema = body["response_format"]["json_schema"]["schema"]
    assert body["response_format"]["json_schema"]["name"] == "Extraction"
    # the same Struct that validates the reply, with its nested types written in place
    assert schema == schema_of(Extraction)
    assert schema["properties"]["entities"]["items"]["required"] == ["name"]
    assert "$ref" not in json.dumps(schema)
    await model.aclose()


@provider
async def test_a_server_that_rejects_json_schema_is_asked_with_json_object_and_the_schema_in_the_prompt() -> (
    None
):
    rejected = httpx.Response(
        400, json={"error": {"message": "response_format.type 'json_schema' is not supported", "code": 400}}
    )
    route = provider.post(f"{OPENAI_URL}/chat/completions").mock(
        side_effect=[rejected, *(httpx.Response(200, json=completion(json.dumps(GOOD))) for _ in range(2))]
    )
    model = OpenAIChat(config())
    await complete_structured(model, REQUEST, Extraction)
    await complete_structured(model, REQUEST, Extraction)
    assert route.call_count == 3  # the rejected format is not asked again
    for index in (1, 2):
        body = sent(route, index)
        assert body["response_format"] == {"type": "json_object"}
        assert body["messages"][0]["role"] == "system"
        assert '"entities"' in body["messages"][0]["content"]  # the schema, in the prompt


@provider
async def test_prompt_mode_sends_no_response_format_only_the_schema_in_the_prompt() -> None:
    route = provider.post(f"{OPENAI_URL}/chat/completions").mock(
        return_value=httpx.Response(200, json=completion(json.dumps(GOOD)))
    )
    model = OpenAIChat(config(structured_output="prompt"))
    await complete_structured(model, REQUEST, Extraction)
    body = sent(route)
    assert "response_format" not in body
    assert body["messages"][0]["content"].startswith("Extract entities.")
    assert "JSON schema" in body["messages"][0]["content"]


def tool_message(arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "msg_01A",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "tool_use", "id": "toolu_01", "name": "Extraction", "input": arguments}],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 40, "output_tokens": 12},
    }


@provider
async def test_anthropic_is_asked_through_a_forced_tool_whose_input_is_the_reply() -> None:
    route = provider.post(f"{ANTHROPIC_URL}/v1/messages").mock(
        return_value=httpx.Response(200, json=tool_message(GOOD))
    )
    model = AnthropicChat(config(provider="anthropic", base_url=ANTHROPIC_URL, model="claude-sonnet-4-5"))
    result = await complete_structured(model, REQUEST, Extraction)
    assert [e.name for e in result.entities] == ["Marie Curie", "Paris"]
    body = sent(route)
    assert body["tools"] == [
        {
            "name": "Extraction",
            "description": "Record the answer in exactly this structure.",
            "input_schema": schema_of(Extraction),
        }
    ]
    assert body["tool_choice"] == {"type": "tool", "name": "Extraction"}
    assert body["system"] == "Extract entities."
    await model.aclose()


def test_repairs_fences_trailing_text_and_a_truncated_list() -> None:
    fenced = "Here you go:\n```json\n" + json.dumps(GOOD) + "\n```\nHope this helps {:)}"
    assert decode_reply(fenced, Extraction) == (msgspec.convert(GOOD, Extraction), False)
    cut = json.dumps(GOOD)[:-30]  # the second entity is cut in the middle
    value, repaired = decode_reply(cut, Extraction)
    assert repaired and [e.name for e in value.entities] == ["Marie Curie"]
    with pytest.raises(msgspec.DecodeError):
        decode_reply("I cannot help with that.", Extraction)


@provider
async def test_a_repairable_reply_costs_no_second_call_and_a_schema_violation_is_asked_again() -> None:
    route = provider.post(f"{OPENAI_URL}/chat/completions").mock(
        side_effect=[
            httpx.Response(200, json=completion(json.dumps(GOOD)[:-30])),
            httpx.Response(200, json=completion('{"entities": [{"type": "person"}]}')),
            httpx.Response(200, json=completion(json.dumps(GOOD))),
        ]
    )
    model = OpenAIChat(config())
    first = await complete_structured(model, REQUEST, Extraction)
    assert route.call_count == 1 and [e.name for e in first.entities] == ["Marie Curie"]
    second = await complete_structured(model, REQUEST, Extraction)
    assert route.call_count == 3 and len(second.entities) == 2
    assert "name" in sent(route, 2)["messages"][-1]["content"]  # the validation error, shown to the model


def test_retry_after_headers_are_read_in_all_their_forms() -> None:
    def error(headers: dict[str, str]) -> Exception:
        exc = RuntimeError("429")
        exc.response = httpx.Response(429, headers=headers)  # type: ignore[attr-defined]
        return exc

    assert retry_after(error({"retry-after-ms": "250"})) == 0.25
    assert retry_after(error({"retry-after": "3"})) == 3.0
    assert retry_after(error({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})) == 0.0  # in the past
    assert retry_after(error({})) is None
    assert retry_after(RuntimeError("no response")) is None


@provider
async def test_a_429_waits_what_retry_after_asks_not_the_long_back_off() -> None:
    limited = httpx.Response(429, json={"error": {"message": "slow down"}}, headers={"retry-after": "0.05"})
    route = provider.post(f"{OPENAI_URL}/chat/completions").mock(
        side_effect=[limited, httpx.Response(200, json=completion("ok"))]
    )
    model = OpenAIChat(config(retry_backoff=120.0))  # a back-off of two minutes would outlive wait_for
    assert await asyncio.wait_for(model.complete(REQUEST), timeout=20) == "ok"
    assert route.call_count == 2


@provider
async def test_usage_and_cost_are_tallied_and_a_task_budget_stops_the_next_call() -> None:
    route = provider.post(f"{OPENAI_URL}/chat/completions").mock(
        return_value=httpx.Response(200, json=completion("ok"))  # 310 in, 120 out
    )
    model = OpenAIChat(config(price_input=0.15, price_output=0.60, task_token_budget=800))
    with track_usage(model.config) as usage:
        await model.complete(REQUEST)
        assert (usage.model_calls, usage.input_tokens, usage.output_tokens) == (1, 310, 120)
        assert usage.cost == pytest.approx((310 * 0.15 + 120 * 0.60) / 1e6)
        await model.complete(REQUEST)  # 430 tokens used: still under 800
        with pytest.raises(BudgetExceeded, match=r"token budget of 800 \(llm.task_token_budget\)"):
            await model.complete(REQUEST)
    assert route.call_count == 2
    assert usage.report().input_tokens == 620
    scraped = generate_latest().decode()
    assert 'lore_model_cost_total{model="gpt-4o-mini",provider="openai"}' in scraped


class MemoryCache:
    def __init__(self) -> None:
        self.rows: dict[str, bytes] = {}

    async def get(self, key: str) -> bytes | None:
        return self.rows.get(key)

    async def put(self, key: str, value: bytes) -> None:
        self.rows[key] = value


@provider
async def test_a_cached_result_is_returned_without_a_call_until_prompt_or_model_changes() -> None:
    route = provider.post(f"{OPENAI_URL}/chat/completions").mock(
        return_value=httpx.Response(200, json=completion(json.dumps(GOOD)))
    )
    cache = MemoryCache()
    model = OpenAIChat(config())
    with track_usage() as usage:
        first = await complete_structured(model, REQUEST, Extraction, cache=cache)
        again = await complete_structured(model, REQUEST, Extraction, cache=cache)
    assert first == again and route.call_count == 1 and usage.cache_hits == 1
    await complete_structured(model, REQUEST, Extraction, cache=cache, prompt_version="2")
    await complete_structured(OpenAIChat(config(model="gpt-4o")), REQUEST, Extraction, cache=cache)
    assert route.call_count == 3 and len(cache.rows) == 3
