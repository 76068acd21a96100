"""Chat and the retrieval API beyond it (see docs/docdb.md)."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
from litestar import Controller, Request, post
from litestar.di import NamedDependency
from litestar.dto import AbstractDTO
from litestar.dto.data_structures import DTOFieldDefinition
from litestar.openapi.spec import Reference, Schema
from litestar.params import JSONBody
from litestar.response import Stream
from litestar.typing import FieldDefinition

from lore_core.logging import current_request_id
from lore_core.sse import event_stream
from lore_core.web import from_state
from lore_docdb.chat.models import ChatBodyAsSent, ChatRequestBody, ChatResponse, Retrieved, RetrieveRequest
from lore_docdb.chat.service import ChatService

if TYPE_CHECKING:
    from litestar._openapi.schema_generation import SchemaCreator


@dataclass(frozen=True)
class ReadChatBody:
    """Chat's body as read: its fields, or why it could not be read (answered as code 400)."""

    fields: ChatBodyAsSent
    problem: str | None = None


class ChatBodyReader(AbstractDTO[ReadChatBody]):
    """Reads chat's body without failing, so that a body that is not a JSON object is answered like
    every other mistake (HTTP 200, `code` 400) instead of by Litestar's 400; the OpenAPI document
    shows the body as `ChatRequestBody`."""

    @classmethod
    def generate_field_definitions(cls, model_type: type[Any]) -> Generator[DTOFieldDefinition, None, None]:
        yield from ()

    @classmethod
    def detect_nested_field(cls, field_definition: FieldDefinition) -> bool:
        return False

    @classmethod
    def create_for_field_definition(
        cls, field_definition: FieldDefinition, handler_id: str, backend_cls: Any = None
    ) -> None:
        """No transfer model: `decode_bytes` reads the body itself."""

    @classmethod
    def create_openapi_schema(
        cls, field_definition: FieldDefinition, handler_id: str, schema_creator: SchemaCreator
    ) -> Reference | Schema:
        return schema_creator.for_field_definition(FieldDefinition.from_annotation(ChatRequestBody))

    def decode_bytes(self, value: bytes) -> ReadChatBody:
        try:
            return ReadChatBody(msgspec.json.decode(value or b"{}", type=ChatBodyAsSent))
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            return ReadChatBody(ChatBodyAsSent(), f"the body must be a JSON object: {exc}")


class ChatController(Controller):
    path = "/api/v1/docdb"
    tags = ["chat"]
    dependencies = {"chat": from_state("chat")}

    @post(
        "/chat",
        status_code=200,
        dto=ChatBodyReader,
        return_dto=None,
        summary="Ask a knowledge base; always HTTP 200, the outcome is in `success` and `code`",
        description=(
            "Body: `{query, kb_id, user_id, query_mode (naive|rerank|rewriter|multihop|direct), max_results, "
            "top_k, stream}`. Answers cite passages as [n]; `citations[]` maps each n to its file. With "
            "`stream: true` the answer is `text/event-stream`: `passages` `{data, total_count}`, then "
            "`delta` `{text}` events as the model writes, then `citations` `{citations}`, then `done` "
            "holding the body the non-streaming call returns. A failure at any point is an `error` event "
            "`{code, message}`, then `done` holding the failed body (`success: false`). mem's "
            "`/api/v1/mem/kb/query` streams the same events."
        ),
    )
    async def chat(
        self,
        request: Request[Any, Any, Any],
        chat: NamedDependency[ChatService],
        data: JSONBody[ReadChatBody | None] = None,
    ) -> ChatResponse | Stream:
        request_id = current_request_id(request.scope)
        body = data or ReadChatBody(ChatBodyAsSent())
        if body.problem is not None:
            return chat.unreadable(body.problem, request_id)
        if body.fields.stream is True:
            return event_stream(chat.events(body.fields, request_id))
        if body.fields.stream not in (False, None):
            return chat.unreadable(f"stream must be true or false; got {body.fields.stream!r}", request_id)
        return await chat.chat(body.fields, request_id)

    @post(
        "/retrieve",
        status_code=200,
        summary="Retrieval only (no model call): the chunks chat would use, for your own model",
        description="Body: `{kb_id, query, mode (naive|rerank), top_k, max_results, threshold}`.",
    )
    async def retrieve(
        self, chat: NamedDependency[ChatService], data: JSONBody[RetrieveRequest]
    ) -> Retrieved:
        return await chat.retrieve(data)
