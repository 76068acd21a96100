"""Chat models behind one protocol: OpenAI-compatible (openai SDK), Anthropic (anthropic SDK), offline.

A request carries the chat messages a real model reads, plus a `task` name and structured `inputs` that
the offline model answers from (it cannot read free prose; it runs the named extractive skill).
Every model has a concurrency limit, a timeout, and retries with exponential back-off on 429, 5xx,
time-outs and connection errors; after the last retry a `ModelError` names the model and the cause.
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import json
import re
import sys
import time
from base64 import b64encode
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from functools import lru_cache
from typing import Any, Literal, Protocol, TypeVar

import httpx
import msgspec
import structlog
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, wait_exponential

from lore_common.providers import usage as spend
from lore_common.providers.offline import SHARED_SKILLS, OfflineSkill
from lore_core import metrics, tracing
from lore_core.settings import LLMConfig

log = structlog.get_logger("lore.models")

Role = Literal["system", "user", "assistant"]
T = TypeVar("T")


class Picture(msgspec.Struct, frozen=True):
    """An image sent to a vision-capable model with a message."""

    mime: str  # image/png, image/jpeg, image/gif or image/webp
    data: bytes

    def base64(self) -> str:
        return b64encode(self.data).decode()


class ChatMessage(msgspec.Struct, frozen=True):
    role: Role
    content: str
    pictures: tuple[Picture, ...] = ()


class ChatRequest(msgspec.Struct, kw_only=True):
    messages: list[ChatMessage]
    # The offline skill that answers this request (see providers.offline) and its structured inputs.
    task: str = "chat"
    inputs: dict[str, Any] = msgspec.field(default_factory=dict)
    json_output: bool = False
    # With `json_output`: the JSON schema of the reply (see `complete_structured`), sent the way the
    # provider takes one (OpenAI `response_format` json_schema, an Anthropic tool, else in the prompt).
    json_schema: dict[str, Any] | None = None
    schema_name: str = "reply"
    temperature: float | None = None
    max_tokens: int | None = None


class ModelError(RuntimeError):
    """A model call failed for good: the message names the model and says what went wrong."""


class StructuredOutputError(ModelError):
    """The model's reply could not be decoded into the expected structure, even after retries."""


class ChatModel(Protocol):
    name: str

    async def complete(self, request: ChatRequest) -> str: ...

    def stream(self, request: ChatRequest) -> AsyncIterator[str]:
        """The reply as it is produced, piece by piece; the pieces joined are what `complete` returns."""
        ...

    async def aclose(self) -> None: ...


def _status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def _sdk_errors(name: str) -> tuple[type[BaseException], ...]:
    """An SDK's error class from every SDK loaded (the SDKs are imported only when a provider needs one)."""
    return tuple(getattr(sys.modules[sdk], name) for sdk in ("openai", "anthropic") if sdk in sys.modules)


def _timed_out(exc: BaseException) -> bool:
    return isinstance(exc, (httpx.TimeoutException, *_sdk_errors("APITimeoutError")))


def is_retryable(exc: BaseException) -> bool:
    """429, 5xx, time-outs and dropped connections are worth another try; 4xx client errors are not."""
    if _timed_out(exc) or isinstance(exc, (httpx.TransportError, *_sdk_errors("APIConnectionError"))):
        return True
    status = _status_of(exc)
    return status is not None and (status == 429 or status >= 500)


MAX_RETRY_AFTER = 60.0


def retry_after(exc: BaseException | None) -> float | None:
    """The wait a 429/503 asks for in `retry-after-ms` or `Retry-After` (seconds or an HTTP date)."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def describe_failure(exc: BaseException) -> str:
    if _timed_out(exc):
        return "timed out"
    status = _status_of(exc)
    if status is not None:
        return f"HTTP {status}: {getattr(exc, 'message', str(exc))[:300]}"
    return f"{type(exc).__name__}: {str(exc)[:300]}"


# Both SDKs send through aiohttp, with their official `DefaultAioHttpClient`. Through httpx's own
# pool, which re-checks every pooled socket on each request, the SDK call took 60 % of docdb's event loop
# at 32 concurrent chats (chat p50 160 ms; 90 ms through aiohttp). Tests mock providers with respx's
# `httpx` mocker (`respx.mock(using="httpx")`), which intercepts every httpx client, this one included.


class Usage(msgspec.Struct):
    """Tokens a call consumed, as the provider reported them (0 when it did not)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0


class _RemoteChat:
    """Shared behaviour of the SDK-backed models: slots, retries, one error shape, metrics and spans."""

    provider = "remote"

    def __init__(self, config: LLMConfig, kind: str) -> None:
        self.config = config
        self.name = f"{kind}:{config.model}"
        self._slots = asyncio.Semaphore(max(1, config.max_concurrent_requests))
        self.retry_backoff = config.retry_backoff
        self.in_flight = 0
        # How this model takes a reply's schema; `auto` steps down when a server rejects one way.
        self.structured = config.structured_output
        if config.daily_token_budget:
            spend.DAY.budget = config.daily_token_budget

    async def _call(self, request: ChatRequest) -> tuple[str, Usage]:
        raise NotImplementedError

    def _stream(self, request: ChatRequest, usage: Usage) -> AsyncIterator[str]:
        raise NotImplementedError

    def _failure(self, exc: BaseException, attempts: int) -> ModelError:
        where = f" at {self.config.base_url}" if self.config.base_url else ""
        tries = f" after {attempts} attempts" if is_retryable(exc) else ""
        return ModelError(f"model {self.name}{where} failed{tries}: {describe_failure(exc)}")

    def _retrying(self, attempts: int) -> AsyncRetrying:
        """tenacity's retries (the SDKs' own are off, so no call is retried twice over): a 429 or 503
        waits what its `Retry-After` asks (up to a minute), anything else backs off exponentially."""
        backoff = wait_exponential(multiplier=self.retry_backoff, min=self.retry_backoff, max=30)

        def wait(state: RetryCallState) -> float:
            asked = retry_after(state.outcome.exception() if state.outcome else None)
            return min(asked, MAX_RETRY_AFTER) if asked is not None else backoff(state)

        return AsyncRetrying(
            stop=stop_after_attempt(attempts),
            wait=wait,
            retry=retry_if_exception(is_retryable),
            reraise=True,
        )

    def _retried(self, number: int) -> None:
        log.warning("model_retry", model=self.name, attempt=number)
        metrics.MODEL_RETRIES.labels(self.provider, self.config.model).inc()

    @asynccontextmanager
    async def _busy(self, span: str) -> AsyncIterator[metrics.ModelCall]:
        """A slot of `max_concurrent_requests`, then the call's span and figures (timed from here, so
        the wait for a slot is not the model's time)."""
        async with self._slots:
            self.in_flight += 1
            try:
                with tracing.span(
                    span, {"gen_ai.system": self.provider, "gen_ai.request.model": self.config.model}
                ):
                    yield metrics.ModelCall(self.provider, self.config.model)
            finally:
                self.in_flight -= 1

    async def complete(self, request: ChatRequest) -> str:
        attempts = self.config.max_retries + 1
        spend.before_call()
        async with self._busy("model.call") as call:
            try:
                async for attempt in self._retrying(attempts):
                    with attempt:
                        if attempt.retry_state.attempt_number > 1:
                            self._retried(attempt.retry_state.attempt_number)
                        text, usage = await self._call(request)
                        call.done(usage.prompt_tokens, usage.completion_tokens)
                        spend.after_call(
                            self.config, self.provider, usage.prompt_tokens, usage.completion_tokens
                        )
                        return text
            except Exception as exc:
                call.failed()
                raise self._failure(exc, attempts) from exc
        raise ModelError(f"model {self.name}: no attempt was made")  # pragma: no cover

    async def stream(self, request: ChatRequest) -> AsyncIterator[str]:
        """Retried like `complete` until the first piece arrives; after that a failure is final, since the
        caller already holds part of the answer. Closing the iterator closes the provider's stream."""
        attempts = self.config.max_retries + 1
        spend.before_call()
        async with self._busy("model.stream") as call:
            number = 0
            while True:
                number += 1
                usage = Usage()
                produced = False
                try:
                    async for piece in self._stream(request, usage):
                        produced = True
                        yield piece
                except Exception as exc:
                    if produced or not is_retryable(exc) or number >= attempts:
                        call.failed()
                        raise self._failure(exc, number) from exc
                    self._retried(number + 1)
                    asked = retry_after(exc)
                    await asyncio.sleep(
                        min(asked, MAX_RETRY_AFTER)
                        if asked is not None
                        else min(30.0, self.retry_backoff * 2 ** (number - 1))
                    )
                    continue
                call.done(usage.prompt_tokens, usage.completion_tokens)
                spend.after_call(self.config, self.provider, usage.prompt_tokens, usage.completion_tokens)
                return


class _Message(msgspec.Struct):
    content: str | None = None


class _Choice(msgspec.Struct):
    message: _Message


class _Completion(msgspec.Struct):
    choices: list[_Choice] = msgspec.field(default_factory=list)
    usage: Usage | None = None


_COMPLETION = msgspec.json.Decoder(_Completion)


class OpenAIChat(_RemoteChat):
    """Any OpenAI-compatible server: OpenAI, vLLM, Ollama, DeepSeek, Qwen."""

    provider = "openai"

    def __init__(self, config: LLMConfig, http_client: httpx.AsyncClient | None = None) -> None:
        import openai

        super().__init__(config, "openai")
        self.client = openai.AsyncOpenAI(
            api_key=config.api_key or "not-needed",
            base_url=config.base_url,
            timeout=config.timeout,
            max_retries=0,  # tenacity retries, so the count and the back-off are ours
            http_client=http_client or openai.DefaultAioHttpClient(),
        )

    def _arguments(self, request: ChatRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.config.model,
            "messages": [{"role": m.role, "content": _openai_content(m)} for m in request.messages],
            "temperature": self.config.temperature if request.temperature is None else request.temperature,
            "max_tokens": request.max_tokens or self.config.max_tokens,
        }
        if request.json_output:
            mode = self._mode(request)
            if mode == "json_schema":
                assert request.json_schema is not None
                kwargs["response_format"] = {
                    "type": "json_schema",
                    # Not `strict`: OpenAI's strict mode wants every field required and no defaults.
                    "json_schema": {"name": request.schema_name, "schema": request.json_schema},
                }
            else:
                if mode == "json_object":
                    kwargs["response_format"] = {"type": "json_object"}
                if request.json_schema is not None:
                    kwargs["messages"] = _with_schema_prompt(kwargs["messages"], request.json_schema)
        return kwargs

    def _mode(self, request: ChatRequest) -> str:
        """json_schema, json_object or prompt: how this request's structure is asked for."""
        mode = self.structured
        if mode in ("auto", "tool"):
            mode = "json_schema"
        if mode == "json_schema" and request.json_schema is None:
            mode = "json_object"
        return mode

    def _step_down(self, exc: BaseException, kwargs: dict[str, Any]) -> bool:
        """In `auto`, a server that rejects the response format (400/422 naming it) is asked the next
        simpler way from now on: json_schema → json_object → the schema in the prompt."""
        if self.config.structured_output != "auto" or "response_format" not in kwargs:
            return False
        status = _status_of(exc)
        text = str(getattr(exc, "message", "") or exc).lower()
        if status not in (400, 422) or not any(w in text for w in ("response_format", "schema", "json")):
            return False
        previous = self.structured
        self.structured = "json_object" if kwargs["response_format"]["type"] == "json_schema" else "prompt"
        log.warning("model_structured_output_step_down", model=self.name, was=previous, now=self.structured)
        return True

    async def _call(self, request: ChatRequest) -> tuple[str, Usage]:
        kwargs = self._arguments(request)
        # The SDK's documented custom-request call for the chat completions route, read as bytes and
        # decoded by msgspec into the one field we use. `create` first walks the messages against its
        # TypedDicts, and building the full pydantic `ChatCompletion` costs as much again: together
        # ~20 % of docdb's event loop under load. Transport, auth, timeouts and HTTP errors stay the SDK's.
        try:
            body = await self.client.post("/chat/completions", body=kwargs, cast_to=bytes)
        except Exception as exc:
            if self._step_down(exc, kwargs):
                return await self._call(request)
            raise
        try:
            completion = _COMPLETION.decode(body)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise ModelError(f"model {self.name} sent a reply that is not a chat completion: {exc}") from exc
        if not completion.choices:
            raise ModelError(f"model {self.name} returned no choices")
        return completion.choices[0].message.content or "", completion.usage or Usage()

    async def _stream(self, request: ChatRequest, usage: Usage) -> AsyncIterator[str]:
        stream = await self.client.chat.completions.create(
            **self._arguments(request), stream=True, stream_options={"include_usage": True}
        )
        async with stream:
            async for chunk in stream:
                if chunk.usage is not None:
                    usage.prompt_tokens = chunk.usage.prompt_tokens
                    usage.completion_tokens = chunk.usage.completion_tokens
                for choice in chunk.choices:
                    if choice.index == 0 and choice.delta.content:
                        yield choice.delta.content

    async def aclose(self) -> None:
        await self.client.close()


def _openai_content(message: ChatMessage) -> Any:
    if not message.pictures:
        return message.content
    parts: list[dict[str, Any]] = [{"type": "text", "text": message.content}]
    for picture in message.pictures:
        url = f"data:{picture.mime};base64,{picture.base64()}"
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


def schema_prompt(schema: dict[str, Any]) -> str:
    return "Answer with one JSON object only, no prose, matching this JSON schema:\n" + json.dumps(
        schema, ensure_ascii=False, separators=(",", ":")
    )


def _with_schema_prompt(messages: list[dict[str, Any]], schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages with the schema added to the system prompt (one is made when there is none)."""
    note = schema_prompt(schema)
    if messages and messages[0]["role"] == "system" and isinstance(messages[0]["content"], str):
        return [{"role": "system", "content": messages[0]["content"] + "\n\n" + note}, *messages[1:]]
    return [{"role": "system", "content": note}, *messages]


def _anthropic_content(message: ChatMessage) -> Any:
    if not message.pictures:
        return message.content
    parts: list[dict[str, Any]] = [
        {"type": "image", "source": {"type": "base64", "media_type": p.mime, "data": p.base64()}}
        for p in message.pictures
    ]
    return [*parts, {"type": "text", "text": message.content}]


class AnthropicChat(_RemoteChat):
    provider = "anthropic"

    def __init__(self, config: LLMConfig, http_client: httpx.AsyncClient | None = None) -> None:
        import anthropic

        super().__init__(config, "anthropic")
        self.client = anthropic.AsyncAnthropic(
            api_key=config.api_key or "not-needed",
            base_url=config.base_url,
            timeout=config.timeout,
            max_retries=0,
            http_client=http_client or anthropic.DefaultAioHttpClient(),
        )

    def _arguments(self, request: ChatRequest) -> dict[str, Any]:
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        tool = request.json_output and request.json_schema is not None and self.structured != "prompt"
        if request.json_output and not tool:
            note = "Answer with one JSON object only."
            if request.json_schema:
                note = schema_prompt(request.json_schema)
            system = (system + "\n\n" + note).strip()
        kwargs: dict[str, Any] = {
            "model": self.config.model,
            "max_tokens": request.max_tokens or self.config.max_tokens,
            "temperature": self.config.temperature if request.temperature is None else request.temperature,
            "messages": [
                {"role": m.role, "content": _anthropic_content(m)}
                for m in request.messages
                if m.role != "system"
            ],
        }
        if system:
            kwargs["system"] = system
        if tool:
            # Tool use is Anthropic's structured output: one tool whose input is the reply, and forced.
            name = _tool_name(request.schema_name)
            kwargs["tools"] = [
                {
                    "name": name,
                    "description": "Record the answer in exactly this structure.",
                    "input_schema": request.json_schema,
                }
            ]
            kwargs["tool_choice"] = {"type": "tool", "name": name}
        return kwargs

    async def _call(self, request: ChatRequest) -> tuple[str, Usage]:
        response = await self.client.messages.create(**self._arguments(request))
        used = Usage(response.usage.input_tokens, response.usage.output_tokens)
        for block in response.content:
            if getattr(block, "type", "") == "tool_use":
                return json.dumps(block.input, ensure_ascii=False), used
        text = "".join(block.text for block in response.content if getattr(block, "type", "") == "text")
        return text, used

    async def _stream(self, request: ChatRequest, usage: Usage) -> AsyncIterator[str]:
        async with self.client.messages.stream(**self._arguments(request)) as stream:
            async for text in stream.text_stream:
                yield text
            final = await stream.get_final_message()
            usage.prompt_tokens, usage.completion_tokens = final.usage.input_tokens, final.usage.output_tokens

    async def aclose(self) -> None:
        await self.client.close()


def _tool_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "reply"


class OfflineChat:
    """Deterministic extractive stand-in for a language model (see `providers.offline`): it runs the
    skill registered for a request's `task` on its `inputs`, and says plainly when none is."""

    def __init__(
        self, config: LLMConfig | None = None, skills: Mapping[str, OfflineSkill] | None = None
    ) -> None:
        self.model = config.model if config else "offline-extractive"
        self.name = f"offline:{self.model}"
        self.in_flight = 0
        self.skills: dict[str, OfflineSkill] = {**SHARED_SKILLS, **(skills or {})}

    async def complete(self, request: ChatRequest) -> str:
        call = metrics.ModelCall("offline", self.model)
        skill = self.skills.get(request.task)
        if skill is None:
            text = (
                "No language model is configured (provider: offline). The offline model only extracts from "
                "retrieved passages; set an api_key and base_url to get generated answers."
            )
        else:
            result = skill(request.inputs)
            text = result if isinstance(result, str) else msgspec.json.encode(result).decode()
        call.done(0, 0)
        return text

    async def stream(self, request: ChatRequest) -> AsyncIterator[str]:
        """Sentence by sentence: the offline model has its whole answer at once, but a client written
        for a streaming model should see the same shape of events."""
        for piece in sentence_pieces(await self.complete(request)):
            yield piece
            await asyncio.sleep(0)

    async def aclose(self) -> None:
        return None


_PIECE = re.compile(r".*?(?:[.!?;](?:\s*\[\d{1,3}\])*(?:\s+|\Z)|[。！？；](?:\s*\[\d{1,3}\])*\s*|\Z)", re.S)


def sentence_pieces(text: str) -> list[str]:
    """`text` cut after each sentence (its citations and the spaces after it go with it); joined, the
    pieces are `text` again."""
    pieces = [m.group(0) for m in _PIECE.finditer(text) if m.group(0)]
    return pieces or [text]


def create_chat_model(
    config: LLMConfig, offline_skills: Mapping[str, OfflineSkill] | None = None
) -> ChatModel:
    """The chat model a config names; `offline` needs no key and no network, and answers the service's
    prompts with `offline_skills` (task name -> responder, kept beside each prompt)."""
    if config.provider == "openai":
        return OpenAIChat(config)
    if config.provider == "anthropic":
        return AnthropicChat(config)
    return OfflineChat(config, offline_skills)


# ------------------------------------------------------------------ structured outputs

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.S)


def _any_value(kind: type) -> dict[str, Any]:
    """`object` (a field that takes any JSON value) has no schema of its own in msgspec."""
    if kind is object:
        return {"type": ["object", "array", "string", "number", "boolean", "null"]}
    raise NotImplementedError


@lru_cache(maxsize=256)
def schema_of(into: Any) -> dict[str, Any]:
    """The JSON schema of a msgspec type, with its `$defs` written in place (some servers and
    Anthropic's tools do not follow `$ref`): the same type then validates the reply."""
    schema = msgspec.json.schema(into, schema_hook=_any_value)
    defs = schema.pop("$defs", {})

    def inline(node: Any, seen: tuple[str, ...] = ()) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                name = ref.rsplit("/", 1)[1]
                if name in seen:  # a recursive type: leave this one reference as it was
                    return {"type": "object"}
                return inline(defs[name], (*seen, name))
            return {key: inline(value, seen) for key, value in node.items()}
        if isinstance(node, list):
            return [inline(value, seen) for value in node]
        return node

    inlined = inline(schema)
    assert isinstance(inlined, dict)
    return inlined


def schema_digest(schema: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(schema, sort_keys=True).encode()).hexdigest()[:16]


def extract_json(text: str) -> str:
    """The JSON object or array inside a reply: code fences and chatter around it are dropped."""
    stripped = _FENCE.sub("", text.strip())
    starts = [i for i in (stripped.find("{"), stripped.find("[")) if i >= 0]
    if not starts:
        return stripped
    start = min(starts)
    end, _ = _scan(stripped, start)
    if end is not None:
        return stripped[start:end]
    closer = "}" if stripped[start] == "{" else "]"
    end = stripped.rfind(closer)
    return stripped[start : end + 1] if end > start else stripped[start:]


def _scan(text: str, start: int) -> tuple[int | None, list[tuple[int, str]]]:
    """Where the JSON value opening at `start` ends (exclusive), or None when it is cut short; and the
    places it could be cut to stay whole: (index, the closers of the brackets open there)."""
    stack: list[str] = []
    cuts: list[tuple[int, str]] = []
    in_string = escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            stack.append("}" if char == "{" else "]")
        elif char in "}]":
            if not stack or stack[-1] != char:
                return None, cuts
            stack.pop()
            if not stack:
                return index + 1, cuts
            cuts.append((index + 1, "".join(reversed(stack))))
        elif char == ",":
            cuts.append((index, "".join(reversed(stack))))
    return None, cuts


def repair_candidates(text: str, limit: int = 40) -> list[str]:
    """Whole JSON texts a truncated reply can be cut back to, longest first: the last list item or
    field that was cut off is dropped and the open brackets are closed."""
    stripped = _FENCE.sub("", text.strip())
    starts = [i for i in (stripped.find("{"), stripped.find("[")) if i >= 0]
    if not starts:
        return []
    start = min(starts)
    end, cuts = _scan(stripped, start)
    if end is not None:
        return []
    return [stripped[start:index] + closers for index, closers in reversed(cuts[-limit:])]


def decode_reply(text: str, into: type[T]) -> tuple[T, bool]:
    """The reply decoded into `into`, and whether it had to be repaired: code fences and chatter around
    the JSON are dropped, and a reply cut short is cut back to its last whole item. Raises msgspec's
    error of the reply as it came when nothing decodes."""
    try:
        return msgspec.json.decode(extract_json(text), type=into, strict=False), False
    except (msgspec.DecodeError, msgspec.ValidationError) as first:
        for candidate in repair_candidates(text):
            try:
                return msgspec.json.decode(candidate, type=into, strict=False), True
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
        raise first


class StructuredCache(Protocol):
    """Stored structured results (see `providers.cache.ModelCache`)."""

    async def get(self, key: str) -> bytes | None: ...

    async def put(self, key: str, value: bytes) -> None: ...


def cache_key(model: ChatModel, request: ChatRequest, schema: dict[str, Any], version: str) -> str:
    """(prompt version, model, the messages' hash, the schema's hash) as one key."""
    digest = hashlib.sha256()
    for message in request.messages:
        digest.update(message.role.encode() + b"\0" + message.content.encode() + b"\0")
        for picture in message.pictures:
            digest.update(hashlib.sha256(picture.data).digest())
    return f"{version}|{model.name}|{digest.hexdigest()[:32]}|{schema_digest(schema)}"


async def complete_structured(
    model: ChatModel,
    request: ChatRequest,
    into: type[T],
    *,
    attempts: int = 3,
    cache: StructuredCache | None = None,
    prompt_version: str = "1",
) -> T:
    """Ask for `into` as JSON, with its schema sent the way the provider takes one, and decode the
    reply into it; a reply that can be repaired is (see `decode_reply`), one that cannot is asked
    again with the error shown to the model, and after `attempts` a `StructuredOutputError` names the
    model and what was wrong. With a `cache`, a result stored for the same prompt version, model,
    messages and schema is returned without a call, and a new one is stored."""
    schema = schema_of(into)  # type: ignore[arg-type]  # a msgspec type is hashable
    name = getattr(into, "__name__", "reply")
    current = msgspec.structs.replace(request, json_output=True, json_schema=schema, schema_name=name)
    key = cache_key(model, request, schema, prompt_version) if cache is not None else ""
    if cache is not None:
        stored = await cache.get(key)
        if stored is not None:
            try:
                value = msgspec.json.decode(stored, type=into)
            except (msgspec.DecodeError, msgspec.ValidationError):
                pass  # stored by an older shape of `into`: asked again, and overwritten
            else:
                metrics.model_cache_hit(getattr(model, "name", "model"))
                tally = spend.current_usage()
                if tally is not None:
                    tally.cache_hits += 1
                    tally.extracted += 1
                return value
    problem = ""
    for _ in range(max(1, attempts)):
        reply = await model.complete(current)
        try:
            value, repaired = decode_reply(reply, into)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            problem = str(exc)
            log.warning("model_malformed_reply", model=model.name, error=problem, reply=reply[:200])
            current = msgspec.structs.replace(
                current,
                messages=[
                    *request.messages,
                    ChatMessage("assistant", reply[:4000]),
                    ChatMessage(
                        "user",
                        f"Your reply was not valid: {problem}. Answer again with only the JSON object, "
                        "exactly in the requested format.",
                    ),
                ],
            )
            continue
        if repaired:
            log.info("model_reply_repaired", model=model.name)
        tally = spend.current_usage()
        if tally is not None:
            tally.extracted += 1
        if cache is not None:
            await cache.put(key, msgspec.json.encode(value))
        return value
    raise StructuredOutputError(
        f"model {model.name} returned malformed {name} after {attempts} attempts: {problem}"
    )


async def complete_or_record(
    chunk: str,
    model: ChatModel,
    request: ChatRequest,
    into: type[T],
    *,
    cache: StructuredCache | None = None,
    prompt_version: str = "1",
) -> T | None:
    """`complete_structured` for one piece of a task's input: when it fails for good the failure is
    recorded in the task's tally with its reason (`usage.record_failure`) and None is returned, so the
    task goes on with the other pieces (see `usage.check_failed_share`)."""
    try:
        return await complete_structured(model, request, into, cache=cache, prompt_version=prompt_version)
    except ModelError as exc:
        spend.record_failure(chunk, exc)
        return None
