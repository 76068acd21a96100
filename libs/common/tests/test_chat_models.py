"""Chat models through the real openai and anthropic SDKs, with provider HTTP mocked by respx."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import msgspec
import pytest
import respx

from lore_common.providers.chat import (
    AnthropicChat,
    ChatMessage,
    ChatRequest,
    ModelError,
    OpenAIChat,
    StructuredOutputError,
    complete_structured,
    create_chat_model,
)
from lore_common.testing.replies import chat_completion as completion
from lore_core.settings import LLMConfig

OPENAI_URL = "https://llm.example.test/v1"
ANTHROPIC_URL = "https://anthropic.example.test"


def openai_config(**overrides: Any) -> LLMConfig:
    base = {
        "provider": "openai",
        "api_key": "sk-test",
        "base_url": OPENAI_URL,
        "model": "gpt-4o-mini",
        "max_retries": 2,
        "retry_backoff": 0.01,
        "timeout": 5.0,
    }
    base.update(overrides)
    return msgspec.convert(base, LLMConfig)


def rate_limited() -> httpx.Response:
    return httpx.Response(
        429,
        json={
            "error": {
                "message": "Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 3, Used 3.",
                "type": "requests",
                "param": None,
                "code": "rate_limit_exceeded",
            }
        },
        headers={"retry-after-ms": "10"},
    )


# The SDKs send through aiohttp (`DefaultAioHttpClient`): respx's `httpx` mocker intercepts it.
provider = respx.mock(using="httpx", assert_all_called=False)

REQUEST = ChatRequest(
    messages=[ChatMessage("system", "Be brief."), ChatMessage("user", "Capital of France?")]
)


@provider
async def test_openai_normal_reply_sends_model_and_messages() -> None:
    route = provider.post(f"{OPENAI_URL}/chat/completions").mock(
        return_value=httpx.Response(200, json=completion("Paris."))
    )
    model = OpenAIChat(openai_config())
    assert await model.complete(REQUEST) == "Paris."
    sent = json.loads(route.calls.last.request.content)
    assert sent["model"] == "gpt-4o-mini"
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Capital of France?"},
    ]
    assert route.calls.last.request.headers["authorization"] == "Bearer sk-test"
    await model.aclose()


@provider
async def test_openai_429_then_success_is_retried() -> None:
    route = provider.post(f"{OPENAI_URL}/chat/completions").mock(
        side_effect=[rate_limited(), httpx.Response(200, json=completion("Paris."))]
    )
    model = OpenAIChat(openai_config())
    assert await model.complete(REQUEST) == "Paris."
    assert route.call_count == 2


@provider
async def test_openai_timeout_fails_clearly_after_the_configured_retries() -> None:
    route = provider.post(f"{OPENAI_URL}/chat/completions").mock(
        side_effect=httpx.ReadTimeout("read timed out")
    )
    model = OpenAIChat(openai_config(max_retries=2))
    with pytest.raises(ModelError) as caught:
        await model.complete(REQUEST)
    assert route.call_count == 3  # the first try and two retries
    message = str(caught.value)
    assert "openai:gpt-4o-mini" in message and "timed out" in message and "3 attempts" in message


@provider
async def test_openai_client_error_is_not_retried() -> None:
    route = provider.post(f"{OPENAI_URL}/chat/completions").mock(
        return_value=httpx.Response(
            401, json={"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}
        )
    )
    model = OpenAIChat(openai_config())
    with pytest.raises(ModelError, match="HTTP 401"):
        await model.complete(REQUEST)
    assert route.call_count == 1


@provider
async def test_openai_reply_that_is_not_a_completion_fails_naming_the_model() -> None:
    provider.post(f"{OPENAI_URL}/chat/completions").mock(
        return_value=httpx.Response(200, text="<html>502 Bad Gateway</html>")
    )
    model = OpenAIChat(openai_config())
    with pytest.raises(ModelError, match=r"gpt-4o-mini.*not a chat completion"):
        await model.complete(REQUEST)
    provider.post(f"{OPENAI_URL}/chat/completions").mock(
        return_value=httpx.Response(200, json={**completion("x"), "choices": []})
    )
    with pytest.raises(ModelError, match="returned no choices"):
        await model.complete(REQUEST)
    await model.aclose()


@provider
async def test_openai_concurrency_is_capped_by_max_concurrent_requests() -> None:
    live = 0
    peak = 0

    async def slow(_: httpx.Request) -> httpx.Response:
        nonlocal live, peak
        live += 1
        peak = max(peak, live)
        await asyncio.sleep(0.05)
        live -= 1
        return httpx.Response(200, json=completion("ok"))

    provider.post(f"{OPENAI_URL}/chat/completions").mock(side_effect=slow)
    model = OpenAIChat(openai_config(max_concurrent_requests=2))
    replies = await asyncio.gather(*(model.complete(REQUEST) for _ in range(6)))
    assert replies == ["ok"] * 6
    assert peak == 2


class Capital(msgspec.Struct):
    country: str
    capital: str


@provider
async def test_structured_output_retries_a_malformed_reply_then_decodes() -> None:
    route = provider.post(f"{OPENAI_URL}/chat/completions").mock(
        side_effect=[
            httpx.Response(200, json=completion("Sure! The capital is Paris.")),
            httpx.Response(200, json=completion('```json\n{"country": "France", "capital": "Paris"}\n```')),
        ]
    )
    model = OpenAIChat(openai_config())
    result = await complete_structured(model, REQUEST, Capital)
    assert result == Capital(country="France", capital="Paris")
    retry_body = json.loads(route.calls[1].request.content)
    assert retry_body["response_format"]["type"] == "json_schema"
    assert "was not valid" in retry_body["messages"][-1]["content"]


@provider
async def test_structured_output_reports_the_model_and_the_problem_after_retries() -> None:
    provider.post(f"{OPENAI_URL}/chat/completions").mock(
        return_value=httpx.Response(200, json=completion('{"country": "France"}'))
    )
    model = OpenAIChat(openai_config())
    with pytest.raises(StructuredOutputError) as caught:
        await complete_structured(model, REQUEST, Capital, attempts=2)
    assert "openai:gpt-4o-mini" in str(caught.value)
    assert "capital" in str(caught.value)


def anthropic_message(text: str) -> dict[str, Any]:
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 21, "output_tokens": 5},
    }


def anthropic_config(**overrides: Any) -> LLMConfig:
    base = {
        "provider": "anthropic",
        "api_key": "sk-ant-test",
        "base_url": ANTHROPIC_URL,
        "model": "claude-sonnet-4-5",
        "max_retries": 1,
        "retry_backoff": 0.01,
    }
    base.update(overrides)
    return msgspec.convert(base, LLMConfig)


@provider
async def test_anthropic_normal_reply_moves_system_prompt_out_of_messages() -> None:
    route = provider.post(f"{ANTHROPIC_URL}/v1/messages").mock(
        return_value=httpx.Response(200, json=anthropic_message("Paris."))
    )
    model = AnthropicChat(anthropic_config())
    assert await model.complete(REQUEST) == "Paris."
    sent = json.loads(route.calls.last.request.content)
    assert sent["system"] == "Be brief."
    assert sent["messages"] == [{"role": "user", "content": "Capital of France?"}]
    assert route.calls.last.request.headers["x-api-key"] == "sk-ant-test"
    await model.aclose()


@provider
async def test_anthropic_overloaded_then_success_and_timeout_errors() -> None:
    overloaded = httpx.Response(
        529, json={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    )
    route = provider.post(f"{ANTHROPIC_URL}/v1/messages").mock(
        side_effect=[overloaded, httpx.Response(200, json=anthropic_message("Paris."))]
    )
    model = AnthropicChat(anthropic_config())
    assert await model.complete(REQUEST) == "Paris."
    assert route.call_count == 2
    route.mock(side_effect=httpx.ConnectTimeout("connect timed out"))
    with pytest.raises(ModelError, match=r"anthropic:claude-sonnet-4-5 .*failed after 2 attempts: timed out"):
        await model.complete(REQUEST)


def test_factory_picks_the_configured_provider() -> None:
    assert create_chat_model(openai_config()).name == "openai:gpt-4o-mini"
    assert create_chat_model(anthropic_config()).name == "anthropic:claude-sonnet-4-5"
    assert create_chat_model(LLMConfig()).name.startswith("offline:")
