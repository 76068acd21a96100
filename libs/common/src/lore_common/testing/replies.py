"""Provider replies as the real APIs send them, for respx-mocked tests of the real SDKs."""

from __future__ import annotations

import json
from typing import Any

import httpx


def chat_completion(content: str, model: str = "gpt-4o-mini-2024-07-18") -> dict[str, Any]:
    """An OpenAI `chat.completion` body (the shape vLLM, Ollama, DeepSeek and Qwen also answer with)."""
    return {
        "id": "chatcmpl-AbC123",
        "object": "chat.completion",
        "created": 1732233600,
        "model": model,
        "system_fingerprint": "fp_0ba0d124f1",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 310, "completion_tokens": 120, "total_tokens": 430},
    }


def reply(content: Any) -> httpx.Response:
    """A realistic chat.completion whose message is `content` (JSON-encoded unless a string)."""
    text = content if isinstance(content, str) else json.dumps(content)
    return httpx.Response(200, json=chat_completion(text))


def prompt_of(request: httpx.Request) -> tuple[str, str]:
    """(system, last user message) of a chat completion request."""
    messages = json.loads(request.content)["messages"]
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    return system, user
