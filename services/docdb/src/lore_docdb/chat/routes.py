"""Routes of contract 4.2 (chat) and the retrieval API beyond it."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Controller, Request, post
from litestar.di import NamedDependency
from litestar.params import JSONBody
from litestar.response import Stream

from lore_core.errors import BadRequest, NotFound
from lore_core.logging import current_request_id
from lore_core.sse import event_stream
from lore_core.web import from_state
from lore_docdb.chat.models import ChatRequestBody, ChatResponse, RetrieveRequest
from lore_docdb.chat.service import ChatService
from lore_docdb.envelope import ok


class ChatController(Controller):
    path = "/api/v1/docdb"
    tags = ["chat"]
    dependencies = {"chat": from_state("chat")}

    @post(
        "/chat",
        status_code=200,
        summary="Ask a knowledge base; always HTTP 200, the outcome is in `success` and `code`",
        description=(
            "Body: `{query, kb_id, user_id, query_mode (naive|rerank|rewriter|multihop|direct), max_results, "
            "top_k, stream}`. Answers cite passages as [n]; `citations[]` maps each n to its file. With "
            "`stream: true` the answer is `text/event-stream`: `passages`, then `delta` events as the model "
            "writes, then `citations`, then `done` holding the body the non-streaming call returns "
            "(a failure: an `error` event, then `done`)."
        ),
    )
    async def chat(
        self, request: Request[Any, Any, Any], chat: NamedDependency[ChatService]
    ) -> ChatResponse | Stream:
        request_id = current_request_id(request.scope)
        raw = await request.body()
        try:
            body = msgspec.json.decode(raw or b"{}", type=ChatRequestBody)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            return ChatResponse(
                False, 400, f"the body must be a JSON object: {exc}", None, [], 0, None, {}, request_id
            )
        if body.stream is True:
            return event_stream(chat.events(body, request_id))
        if body.stream not in (False, None):
            message = f"stream must be true or false; got {body.stream!r}"
            return ChatResponse(False, 400, message, None, [], 0, None, {}, request_id)
        return await chat.chat(body, request_id)

    @post(
        "/retrieve",
        status_code=200,
        summary="Retrieval only (no model call): the chunks chat would use, for your own model",
        description="Body: `{kb_id, query, mode (naive|rerank), top_k, max_results, threshold}`.",
    )
    async def retrieve(
        self, chat: NamedDependency[ChatService], data: JSONBody[RetrieveRequest]
    ) -> dict[str, Any]:
        if await chat.index.get_kb(data.kb_id) is None:
            raise NotFound(f"knowledge base {data.kb_id!r} does not exist")
        if not data.query.strip():
            raise BadRequest("query is empty")
        items, info = await chat.retrieve(
            data.kb_id, data.query, data.mode, data.top_k, max(1, data.max_results), data.threshold
        )
        return ok(
            data=msgspec.to_builtins(items),
            total_count=len(items),
            query_info=info,
        )
