"""OpenAI-compatible routes: `GET /v1/models` and `POST /v1/chat/completions`, so that an OpenAI client
or a chat UI that speaks the OpenAI API asks a knowledge base as if it were a model.

Each docdb knowledge base is a model named after it; `<kb>:<mode>` (or the extra body field
`query_mode`) picks the chat mode. `mem:kb` (or `mem:kb:<mode>`) is the knowledge-graph memory. The
conversation's earlier turns travel with the question as its history; the answer's citations come as
an extra `citations` field on the message and as numbered sources at the end of its text. API keys
apply as on `/api/v1/…`: asking needs the `read` scope on the module that holds the model.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any, Literal
from urllib.parse import urlencode

import aiohttp
import msgspec
from litestar import Request, Response, Router, get, post
from litestar.exceptions import ValidationException
from litestar.response import Stream
from msgspec import UNSET, UnsetType

from lore_core import audit
from lore_core.bounds import QUERY_CHARS
from lore_core.logging import REQUEST_ID_HEADER, request_id_from
from lore_gateway.access import Access, Refusal
from lore_gateway.guard import Denied, Limits, plan
from lore_gateway.proxy import Proxy

MEM_MODEL = "mem:kb"
DOCDB_MODES = ("naive", "rerank", "rewriter", "multihop", "direct")
MEM_MODES = ("hybrid", "local", "global", "naive")
# The question and its history are sent as one query, which the chat route caps at this length.
TURN_CHARS = 600  # an earlier turn is cut to this many characters in the history
DEFAULT_USER = "openai"


# ------------------------------------------------------------------ wire shapes (OpenAI's spelling)


class ModelCard(msgspec.Struct, kw_only=True):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str


class ModelList(msgspec.Struct, kw_only=True):
    object: Literal["list"] = "list"
    data: list[ModelCard]


class ChatMessage(msgspec.Struct, kw_only=True):
    """One message as an OpenAI client sends it: `content` is text or a list of parts."""

    role: str
    content: str | list[dict[str, Any]] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "\n".join(str(p.get("text", "")) for p in self.content if p.get("type") == "text")
        return self.content or ""


class ChatCompletionRequest(msgspec.Struct, kw_only=True):
    """OpenAI's chat request; fields Lore has no use for (temperature, tools…) are accepted and ignored.
    `query_mode` and `max_results` are Lore's own extras (the SDK's `extra_body`)."""

    model: str
    messages: list[ChatMessage]
    stream: bool = False
    user: str | None = None
    query_mode: str | None = None
    max_results: int | None = None


class Source(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A cited source: its number in the answer ([n]), the file (docdb) or the passage (memory)."""

    index: int
    title: str
    dataset: str | UnsetType = UNSET
    url: str | UnsetType | None = UNSET
    passage: str | UnsetType = UNSET
    # docdb: the cited passage's first and last page (a PDF) and the titles of its sections.
    page: int | UnsetType = UNSET
    page_end: int | UnsetType = UNSET
    heading_path: list[str] | UnsetType = UNSET


class AssistantMessage(msgspec.Struct, kw_only=True):
    role: Literal["assistant"] = "assistant"
    content: str
    citations: list[Source]


class Choice(msgspec.Struct, kw_only=True):
    index: int = 0
    message: AssistantMessage
    finish_reason: str = "stop"


class Usage(msgspec.Struct, kw_only=True):
    """Lore does not count tokens; the fields are there because clients read them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class ChatCompletion(msgspec.Struct, kw_only=True):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: Usage = msgspec.field(default_factory=Usage)


class ChunkDelta(msgspec.Struct, kw_only=True, omit_defaults=True):
    role: str | UnsetType = UNSET
    content: str | UnsetType = UNSET
    citations: list[Source] | UnsetType = UNSET


class ChunkChoice(msgspec.Struct, kw_only=True):
    index: int = 0
    delta: ChunkDelta
    finish_reason: str | None = None


class ChatCompletionChunk(msgspec.Struct, kw_only=True):
    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]


class ErrorDetail(msgspec.Struct, kw_only=True):
    message: str
    type: str
    code: str | None = None
    param: str | None = None


class ErrorBody(msgspec.Struct, kw_only=True):
    """OpenAI's error shape, which its SDKs turn into their exception types by status."""

    error: ErrorDetail


class OpenAiError(Exception):
    def __init__(self, status: int, message: str, kind: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = ErrorBody(error=ErrorDetail(message=message, type=kind, code=code))


# ------------------------------------------------------------------ what the routes do


class Target(msgspec.Struct, frozen=True):
    """Where a model name points: a module, a knowledge base (docdb) and a mode."""

    module: Literal["docdb", "mem"]
    kb: str
    mode: str


def parse_model(model: str, query_mode: str | None) -> Target:
    """`<kb>`, `<kb>:<mode>`, `mem:kb` or `mem:kb:<mode>`; the body's `query_mode` wins over the name's."""
    modes: tuple[str, ...]
    if model == MEM_MODEL or model.startswith(MEM_MODEL + ":"):
        module: Literal["docdb", "mem"] = "mem"
        kb, mode, modes = "", model[len(MEM_MODEL) + 1 :] or "hybrid", MEM_MODES
    else:
        module = "docdb"
        kb, _, mode = model.partition(":")
        mode, modes = mode or "naive", DOCDB_MODES
    mode = query_mode or mode
    if not kb and module == "docdb":
        raise OpenAiError(404, f"model {model!r}: name a knowledge base", "invalid_request_error")
    if mode not in modes:
        raise OpenAiError(
            400,
            f"model {model!r}: query mode {mode!r} is not one of {', '.join(modes)}",
            "invalid_request_error",
            "invalid_query_mode",
        )
    return Target(module, kb, mode)


def strip_sources(text: str) -> str:
    """An earlier answer without the sources list this route appended to it."""
    head, _, _ = text.partition(SOURCES_HEADING)
    return head.strip()


def question_with_history(messages: list[ChatMessage]) -> str:
    """The last user message, preceded by the conversation's earlier turns (latest kept first when the
    whole would not fit the chat route's query limit). System messages are left out: the knowledge
    base's own prompt answers."""
    turns = [m for m in messages if m.role in ("user", "assistant")]
    if not turns or turns[-1].role != "user" or not turns[-1].text().strip():
        raise OpenAiError(
            400, "the last message must be a non-empty user message", "invalid_request_error", "empty_query"
        )
    question = turns[-1].text().strip()[:QUERY_CHARS]
    earlier: list[str] = []
    used = len(question) + 64
    for message in reversed(turns[:-1]):
        text = strip_sources(message.text())[:TURN_CHARS]
        line = f"{message.role}: {text}"
        if not text or used + len(line) + 1 > QUERY_CHARS:
            break
        earlier.insert(0, line)
        used += len(line) + 1
    if not earlier:
        return question
    return "Conversation so far:\n" + "\n".join(earlier) + f"\n\nQuestion: {question}"


SOURCES_HEADING = "\n\nSources:\n"


def sources_text(sources: list[Source]) -> str:
    """The numbered sources a chat UI shows under the answer: `[n] file (dataset)`."""
    if not sources:
        return ""
    lines = []
    for source in sources:
        where = f" ({source.dataset})" if source.dataset else ""
        if isinstance(source.page, int):
            last = source.page_end if isinstance(source.page_end, int) else source.page
            where += f", p. {source.page}" if last == source.page else f", pp. {source.page}-{last}"
        lines.append(f"[{source.index}] {source.title}{where}")
    return SOURCES_HEADING + "\n".join(lines)


def docdb_sources(citations: list[dict[str, Any]] | None) -> list[Source]:
    return [
        Source(
            index=int(c["index"]),
            title=str(c.get("source_file") or ""),
            dataset=str(c.get("dataset") or ""),
            url=c.get("file_url"),
            page=c["page"] if isinstance(c.get("page"), int) else UNSET,
            page_end=c["page_end"] if isinstance(c.get("page_end"), int) else UNSET,
            heading_path=[str(t) for t in c["heading_path"]] if c.get("heading_path") else UNSET,
        )
        for c in citations or []
    ]


def mem_sources(citations: list[dict[str, Any]] | None) -> list[Source]:
    sources = []
    for c in citations or []:
        passage = str(c.get("passage") or "")
        title = " ".join(passage.split())
        sources.append(
            Source(
                index=int(c["index"]), title=title[:80] + ("…" if len(title) > 80 else ""), passage=passage
            )
        )
    return sources


def _bearer(request: Request[Any, Any, Any]) -> str:
    kind, _, offered = request.headers.get("authorization", "").partition(" ")
    return offered.strip() if kind.lower() == "bearer" else ""


def _refused(refusal: Refusal) -> OpenAiError:
    kind = {401: "authentication_error", 403: "permission_error", 429: "rate_limit_error"}
    code = {401: "invalid_api_key", 403: "insufficient_scope", 429: "rate_limit_exceeded"}
    return OpenAiError(
        refusal.status, refusal.detail, kind.get(refusal.status, "error"), code.get(refusal.status)
    )


class OpenAiRoutes:
    """The routes, over the gateway's proxy (its replicas and HTTP session) and its API keys."""

    def __init__(self, proxy: Proxy, access: Access) -> None:
        self.proxy = proxy
        self.access = access

    def admit(self, request: Request[Any, Any, Any], module: str) -> Limits | None:
        """Refuse a key that may not use `module`; return its resource limits there (None: none)."""
        if not self.access.enabled:
            return None
        grant, refusal = self.access.check(_bearer(request), module, request.method, request.url.path)
        if refusal is not None:
            raise _refused(refusal)
        if grant is None or not grant.limits.limits_module(module):
            return None
        return grant.limits

    def _url(self, module: str, path: str) -> str:
        replica = self.proxy.downstreams[module].pick()
        assert replica is not None
        return f"{replica.url}{path}"

    async def _call(
        self, module: str, method: str, path: str, request_id: str, body: Any = None
    ) -> aiohttp.ClientResponse:
        try:
            return await self.proxy.session.request(
                method,
                self._url(module, path),
                json=body,
                headers={REQUEST_ID_HEADER: request_id},
                timeout=aiohttp.ClientTimeout(total=None, connect=self.proxy.connect_timeout),
            )
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise OpenAiError(
                502, f"the {module} service could not be reached: {exc or type(exc).__name__}", "api_error"
            ) from exc

    async def models(self, request: Request[Any, Any, Any]) -> ModelList:
        """Every knowledge base the key may read, and the memory graph."""
        refusals: list[OpenAiError] = []
        cards: list[ModelCard] = []
        request_id = request_id_from(request.scope.get("headers", []))
        for module in ("docdb", "mem"):
            try:
                limits = self.admit(request, module)
            except OpenAiError as exc:
                refusals.append(exc)
                continue
            if module == "mem":
                if limits is None or (limits.memory is not None and limits.memory.kb):
                    cards.append(ModelCard(id=MEM_MODEL, created=0, owned_by="lore-mem"))
                continue
            response = await self._call("docdb", "GET", "/api/v1/docdb/files/knowledge-bases", request_id)
            async with response:
                listed = await response.json(content_type=None) if response.status == 200 else {}
            for kb in listed.get("data", []):
                if limits is not None and not limits.kb_allowed(kb.get("name")):
                    continue
                cards.append(ModelCard(id=kb["name"], created=_epoch(kb.get("created_at")), owned_by="lore"))
        if len(refusals) == 2:
            raise refusals[0]
        return ModelList(data=cards)

    def _upstream(self, target: Target, ask: ChatCompletionRequest, query: str) -> tuple[str, dict[str, Any]]:
        if target.module == "mem":
            return "/api/v1/mem/kb/query", {"query": query, "mode": target.mode, "stream": True}
        body: dict[str, Any] = {
            "query": query,
            "kb_id": target.kb,
            "user_id": ask.user or DEFAULT_USER,
            "query_mode": target.mode,
            "stream": True,
        }
        if ask.max_results is not None:
            body["max_results"] = ask.max_results
        return "/api/v1/docdb/chat", body

    async def chat(
        self, request: Request[Any, Any, Any], ask: ChatCompletionRequest
    ) -> ChatCompletion | Stream:
        target = parse_model(ask.model, ask.query_mode)
        limits = self.admit(request, target.module)
        query = question_with_history(ask.messages)
        request_id = request_id_from(request.scope.get("headers", []))
        path, body = self._upstream(target, ask, query)
        if limits is not None:
            try:  # the key's knowledge bases (or its workspace of the memory graph), as on /api/v1/…
                checked = plan(limits, target.module, "POST", path, {})
                body = checked.body_checked(body)
                if checked.query:
                    path = f"{path}?{urlencode(checked.query)}"
            except Denied as denied:
                audit.record(
                    "refused", str(denied.status), key=limits.key, route=request.url.path, method="POST"
                )
                code = "model_not_found" if denied.status == 404 else "insufficient_scope"
                raise OpenAiError(denied.status, denied.message, "permission_error", code) from denied
        # Always streamed from the service: the streamed events are the only form in which both
        # modules send their citations, and a non-streamed answer is the same events gathered.
        response = await self._call(target.module, "POST", path, request_id, body)
        if response.status != 200 or response.content_type != "text/event-stream":
            async with response:
                failure = await response.json(content_type=None)
            detail = failure.get("message") or failure.get("detail") or failure
            raise OpenAiError(
                response.status if response.status < 500 else 502, str(detail), _kind(response.status)
            )
        completion_id, created = f"chatcmpl-{request_id}", int(time.time())
        if ask.stream:
            chunks = _chunks(_pieces(target, response), completion_id, created, ask.model)
            return Stream(chunks, media_type="text/event-stream", headers={"cache-control": "no-cache"})
        text: list[str] = []
        sources: list[Source] = []
        async for piece in _pieces(target, response):
            if isinstance(piece, str):
                text.append(piece)
            elif isinstance(piece, list):
                sources = piece
            else:
                raise piece
        message = AssistantMessage(content="".join(text) + sources_text(sources), citations=sources)
        return ChatCompletion(
            id=completion_id, created=created, model=ask.model, choices=[Choice(message=message)]
        )


Piece = str | list[Source] | OpenAiError  # a piece of text, the sources, or the error that ended it


async def _pieces(target: Target, response: aiohttp.ClientResponse) -> AsyncIterator[Piece]:
    """A Lore answer stream as pieces of text (stripped at both ends, as an answer that opens on a
    blank line and an indent reads badly: trailing blanks wait for more text), its sources, or the
    error that ended it."""
    started, pending = False, ""
    async with response:
        async for name, data in _events(response):
            if name == "delta":
                text = pending + str(data.get("text", ""))
                if not started:
                    text = text.lstrip()
                    started = bool(text)
                kept = text.rstrip()
                pending = text[len(kept) :]
                if kept:
                    yield kept
            elif name == "citations":
                cited = data.get("citations")
                yield mem_sources(cited) if target.module == "mem" else docdb_sources(cited)
            elif name == "error":
                code = int(data.get("code") or 500)
                yield OpenAiError(code if code < 500 else 502, str(data.get("message")), _kind(code))
                return


async def _chunks(
    pieces: AsyncIterator[Piece], completion_id: str, created: int, model: str
) -> AsyncIterator[bytes]:
    """The pieces as OpenAI chunks: a role chunk, one chunk per piece of text, the numbered sources,
    a finish chunk carrying the citations, then `[DONE]`. An error becomes an `error` payload, which
    OpenAI's SDKs raise."""

    def chunk(delta: ChunkDelta, finish: str | None = None) -> bytes:
        payload = ChatCompletionChunk(
            id=completion_id,
            created=created,
            model=model,
            choices=[ChunkChoice(delta=delta, finish_reason=finish)],
        )
        return b"data: " + msgspec.json.encode(payload) + b"\n\n"

    yield chunk(ChunkDelta(role="assistant", content=""))
    sources: list[Source] = []
    async for piece in pieces:
        if isinstance(piece, str):
            yield chunk(ChunkDelta(content=piece))
        elif isinstance(piece, list):
            sources = piece
        else:
            yield b"data: " + msgspec.json.encode(piece.body) + b"\n\n"
            yield b"data: [DONE]\n\n"
            return
    if sources:
        yield chunk(ChunkDelta(content=sources_text(sources)))
    yield chunk(ChunkDelta(citations=sources), finish="stop")
    yield b"data: [DONE]\n\n"


async def _events(response: aiohttp.ClientResponse) -> AsyncIterator[tuple[str, Any]]:
    """The server-sent events of a Lore stream as (name, decoded JSON payload)."""
    name, data = "", b""
    async for raw in response.content:
        line = raw.rstrip(b"\r\n")
        if line.startswith(b"event: "):
            name = line[7:].decode()
        elif line.startswith(b"data: "):
            data = line[6:]
        elif not line and name:
            yield name, msgspec.json.decode(data)
            name, data = "", b""


def _kind(status: int) -> str:
    return "invalid_request_error" if 400 <= status < 500 else "api_error"


def _epoch(stamp: Any) -> int:
    try:
        return int(datetime.fromisoformat(str(stamp)).timestamp())
    except ValueError:
        return 0


def _error_response(_: Request[Any, Any, Any], exc: OpenAiError) -> Response[ErrorBody]:
    headers = {"www-authenticate": 'Bearer realm="lore"'} if exc.status == 401 else {}
    return Response(exc.body, status_code=exc.status, headers=headers)


def openai_router(routes: OpenAiRoutes) -> Router:
    """`/v1/models` and `/v1/chat/completions`, answering errors in OpenAI's shape."""

    @get("/models", summary="Knowledge bases as OpenAI models")
    async def list_models(request: Request[Any, Any, Any]) -> ModelList:
        return await routes.models(request)

    @post(
        "/chat/completions",
        summary="A cited answer from a knowledge base, in OpenAI's format",
        status_code=200,
    )
    async def chat_completions(
        request: Request[Any, Any, Any], data: ChatCompletionRequest
    ) -> ChatCompletion | Stream:
        return await routes.chat(request, data)

    def invalid_body(_: Request[Any, Any, Any], exc: Exception) -> Response[ErrorBody]:
        detail = getattr(exc, "detail", str(exc))
        extra = getattr(exc, "extra", None)
        message = f"{detail}: {extra}" if extra else str(detail)
        return _error_response(_, OpenAiError(400, message, "invalid_request_error"))

    return Router(
        "/v1",
        route_handlers=[list_models, chat_completions],
        exception_handlers={OpenAiError: _error_response, ValidationException: invalid_body},
    )
