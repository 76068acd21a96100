"""One error type carrying its status, and one exception-handler factory every service uses.

docdb answers `{success: false, code, message, detail}`; gen, mem and the gateway answer `{detail}`
(the shape FastAPI-style clients expect), as the contract's section 7 and our guide say.
"""

from __future__ import annotations

from typing import Any, Literal

import structlog
from litestar import MediaType, Request, Response
from litestar.exceptions import HTTPException, NotFoundException, ValidationException
from litestar.status_codes import HTTP_500_INTERNAL_SERVER_ERROR
from litestar.types import ExceptionHandlersMap

ErrorStyle = Literal["envelope", "detail"]


class LoreError(Exception):
    """A condition the client should see: `status_code`, a message that says what to fix, optional detail."""

    status_code: int = 400

    def __init__(self, message: str, *, status_code: int | None = None, detail: Any = None) -> None:
        super().__init__(message)
        self.message = message
        if status_code is not None:
            self.status_code = status_code
        self.detail = detail


class NotFound(LoreError):
    status_code = 404


class Conflict(LoreError):
    status_code = 409


class BadRequest(LoreError):
    status_code = 400


class Unprocessable(LoreError):
    status_code = 422


def error_body(style: ErrorStyle, status: int, message: str, detail: Any = None) -> dict[str, Any]:
    if style == "envelope":
        return {"success": False, "code": status, "message": message, "detail": detail}
    return {"detail": message if detail is None else {"message": message, "errors": detail}}


def _validation_detail(exc: ValidationException) -> Any:
    extra = exc.extra
    if isinstance(extra, list):
        return [
            {"field": str(item.get("key", "")), "message": str(item.get("message", ""))}
            if isinstance(item, dict)
            else str(item)
            for item in extra
        ]
    return extra


def exception_handlers(style: ErrorStyle) -> ExceptionHandlersMap:
    """Map our errors, Litestar's HTTP errors and anything unexpected to one JSON shape."""
    log = structlog.get_logger("lore.errors")

    def respond(status: int, message: str, detail: Any = None) -> Response[Any]:
        return Response(
            content=error_body(style, status, message, detail),
            status_code=status,
            media_type=MediaType.JSON,
        )

    def on_lore_error(_: Request[Any, Any, Any], exc: LoreError) -> Response[Any]:
        return respond(exc.status_code, exc.message, exc.detail)

    def on_validation(_: Request[Any, Any, Any], exc: ValidationException) -> Response[Any]:
        return respond(exc.status_code, str(exc.detail), _validation_detail(exc))

    def on_http(request: Request[Any, Any, Any], exc: HTTPException) -> Response[Any]:
        message = str(exc.detail)
        if isinstance(exc, NotFoundException) and message == "Not Found":
            message = f"no route {request.method} {request.url.path}"
        response = respond(exc.status_code, message, exc.extra or None)
        if exc.headers:
            response.headers.update(exc.headers)
        return response

    def on_unexpected(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
        log.exception("unhandled_error", path=request.url.path, method=request.method)
        return respond(HTTP_500_INTERNAL_SERVER_ERROR, f"internal error: {type(exc).__name__}: {exc}")

    return {
        LoreError: on_lore_error,
        ValidationException: on_validation,
        HTTPException: on_http,
        Exception: on_unexpected,
    }
