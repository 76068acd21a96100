"""Streamed replies through the real SDKs (respx serving the providers' own SSE wire format), and the
offline model's sentence-by-sentence stream; model metrics move with each call."""

from __future__ import annotations

import json
from typing import Any

import httpx
import msgspec
import pytest
import respx
from prometheus_client import REGISTRY

from lore_common.providers.chat import (
    AnthropicChat,
    ChatMessage,
    ChatRequest,
    ModelError,
    OfflineChat,
    OpenAIChat,
)
from lore_core.settings import LLMConfig

OPENAI_URL = "https://llm.example.test/v1"
ANTHROPIC_URL = "https://anthropic.example.test"
provider = respx.mock(using="httpx", assert_all_called=False)
REQUEST = ChatRequest(
    messages=[ChatMessage("system", "Be brief."), ChatMessage("user", "Capital of France?")]
)


def config(kind: str, url: str, model: str) -> LLMConfig:
    return msgspec.convert(
        {
            "provider": kind,
            "api_key": "sk-test",
            "base_url": url,
            "model": model,
            "max_retries": 2,
            "retry_backoff": 0.01,
        },
        LLMConfig,
    )


def openai_sse(pieces: list[str], usage: dict[str, int] | None = None) -> bytes:
    """What api.openai.com sends for `stream: true` with `stream_options.include_usage`."""
    base = {
        "id": "chatcmpl-AbC123",
        "object": "chat.completion.chunk",
        "created": 1732000000,
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_0ba0d124f1",
    }
    chunks = [
        {
            **base,
            "choices": [
                {
                    "index": 0,
                    "delta": {"role": "assistant", "content": "", "refusal": None},
                    "logprobs": None,
                    "finish_reason": None,
                }
            ],
            "usage": None,
        }
    ]
    chunks += [
        {
            **base,
            "choices": [{"index": 0, "delta": {"content": p}, "logprobs": None, "finish_reason": None}],
            "usage": None,
        }
        for p in pieces
    ]
    chunks.append(
        {
            **base,
            "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}],
            "usage": None,
        }
    )
    if usage:
        chunks.append({**base, "choices": [], "usage": usage})
    lines = [f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]
    return "".join(lines).encode()


def anthropic_sse(pieces: list[str]) -> bytes:
    """What api.anthropic.com sends for `stream: true`."""
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "model": "claude-sonnet-4-5",
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 25, "output_tokens": 1},
                },
            },
        ),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        ("ping", {"type": "ping"}),
    ]
    events += [
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}},
        )
        for p in pieces
    ]
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 7},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


def sse(body: bytes) -> httpx.Response:
    return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@provider
async def test_openai_stream_yields_the_deltas_and_counts_tokens() -> None:
    route = provider.post(f"{OPENAI_URL}/chat/completions").mock(
        return_value=sse(
            openai_sse(
                ["The capital", " is", " Paris."],
                {"prompt_tokens": 19, "completion_tokens": 4, "total_tokens": 23},
            )
        )
    )
    labels = {"provider": "openai", "model": "gpt-4o-mini"}
    tokens_before = sample("lore_model_tokens_total", **labels, direction="in")
    calls_before = sample("lore_model_calls_total", **labels, outcome="ok")
    model = OpenAIChat(config("openai", OPENAI_URL, "gpt-4o-mini"))
    pieces = [piece async for piece in model.stream(REQUEST)]
    assert pieces == ["The capital", " is", " Paris."]
    sent = json.loads(route.calls.last.request.content)
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert sample("lore_model_tokens_total", **labels, direction="in") == tokens_before + 19
    assert sample("lore_model_calls_total", **labels, outcome="ok") == calls_before + 1
    await model.aclose()


@provider
async def test_openai_stream_retries_a_429_before_the_first_piece() -> None:
    limited = httpx.Response(
        429,
        json={
            "error": {
                "message": "Rate limit reached",
                "type": "requests",
                "param": None,
                "code": "rate_limit_exceeded",
            }
        },
    )
    route = provider.post(f"{OPENAI_URL}/chat/completions").mock(
        side_effect=[limited, sse(openai_sse(["Paris."]))]
    )
    model = OpenAIChat(config("openai", OPENAI_URL, "gpt-4o-mini"))
    assert [p async for p in model.stream(REQUEST)] == ["Paris."]
    assert route.call_count == 2


@provider
async def test_openai_stream_error_names_the_model() -> None:
    provider.post(f"{OPENAI_URL}/chat/completions").mock(
        return_value=httpx.Response(
            401,
            json={
                "error": {
                    "message": "Incorrect API key provided",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_api_key",
                }
            },
        )
    )
    model = OpenAIChat(config("openai", OPENAI_URL, "gpt-4o-mini"))
    with pytest.raises(ModelError, match=r"openai:gpt-4o-mini .*HTTP 401"):
        [p async for p in model.stream(REQUEST)]


@provider
async def test_anthropic_stream_yields_text_deltas() -> None:
    route = provider.post(f"{ANTHROPIC_URL}/v1/messages").mock(
        return_value=sse(anthropic_sse(["Paris", " is the capital."]))
    )
    model = AnthropicChat(config("anthropic", ANTHROPIC_URL, "claude-sonnet-4-5"))
    out_before = sample(
        "lore_model_tokens_total", provider="anthropic", model="claude-sonnet-4-5", direction="out"
    )
    assert [p async for p in model.stream(REQUEST)] == ["Paris", " is the capital."]
    sent = json.loads(route.calls.last.request.content)
    assert sent["stream"] is True and sent["system"] == "Be brief."
    assert (
        sample("lore_model_tokens_total", provider="anthropic", model="claude-sonnet-4-5", direction="out")
        == out_before + 7
    )
    await model.aclose()


async def test_offline_model_streams_sentence_by_sentence() -> None:
    model = OfflineChat()
    request = ChatRequest(
        messages=[],
        task="answer",
        inputs={
            "question": "Where do quinces grow?",
            "passages": ["Quinces grow behind the mill. The mill is old.", "Forty quince trees grow there."],
        },
    )
    whole = await model.complete(request)
    pieces = [p async for p in model.stream(request)]
    assert len(pieces) >= 2
    assert "".join(pieces) == whole
    assert all(p.rstrip().endswith("]") for p in pieces)  # each piece is a sentence with its citation
