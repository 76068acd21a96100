"""One error type carrying its status, and one exception-handler factory every service uses.

Every error of every module (docdb, gen, mem and the gateway itself) has one shape:
`{success: false, code, message, detail}`: `message` says what to fix, `detail` holds what a program
reads (the fields a validation failed on, the missing chunks...). docdb's chat keeps its HTTP 200 with
the same fields in the body.
"""

from __future__ import annotations

import errno
import re
from typing import Any

import structlog
from litestar import MediaType, Request, Response
from litestar.exceptions import HTTPException, NotFoundException, ValidationException
from litestar.status_codes import HTTP_400_BAD_REQUEST, HTTP_500_INTERNAL_SERVER_ERROR
from litestar.types import ExceptionHandlersMap

from lore_core.bounds import JSON_BODY_LIMIT


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


def error_body(status: int, message: str, detail: Any = None) -> dict[str, Any]:
    """The one error body of every module. `detail` holds the structured detail when there is one
    (the fields a validation error names) and otherwise repeats the message, so a client written for
    the common `{detail}` shape still reads what went wrong."""
    return {
        "success": False,
        "code": status,
        "message": message,
        "detail": message if detail is None else detail,
    }


_TYPE_NAMES = {
    "str": "a string",
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "null": "null",
    "array": "an array",
    "object": "an object",
}


def _type_name(spelled: str) -> str:
    names = [_TYPE_NAMES.get(part.strip(), part.strip()) for part in spelled.split("|")]
    names = [name for name in names if name != "null"] or names
    return " or ".join(names)


_MSGSPEC_MESSAGES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Expected `([^`]+)`, got `([^`]+)`"), "{field} must be {0}, not {1}"),
    (re.compile(r"Expected `str` of length <= (\d+)"), "{field} is longer than {0} characters"),
    (re.compile(r"Expected `str` of length >= 1"), "{field} is empty"),
    (re.compile(r"Expected `str` of length >= (\d+)"), "{field} is shorter than {0} characters"),
    (re.compile(r"Expected `array` of length <= (\d+)"), "{field} holds more than {0} items"),
    (re.compile(r"Expected `\w+` >= ([\d.]+)"), "{field} must be at least {0}"),
    (re.compile(r"Expected `\w+` <= ([\d.]+)"), "{field} must be at most {0}"),
    (re.compile(r"Object missing required field `([^`]+)`"), "{0} is required"),
    (re.compile(r"Object contains unknown field `([^`]+)`"), "{0} is not a field of this request"),
    (re.compile(r"Invalid enum value '([^']*)'"), "{field} {0!r} is not one of the allowed values"),
)


def field_message(field: str, message: str) -> str:
    """A validation failure in words a user reads: `query must be a string, not an integer` for
    msgspec's "Expected `str`, got `int` - at `$.query`"."""
    for pattern, template in _MSGSPEC_MESSAGES:
        found = pattern.search(message)
        if found is None:
            continue
        values = [_type_name(v) if template.startswith("{field} must be {0}") else v for v in found.groups()]
        field_name = field if field and field != "data" else "the body"
        return template.format(*values, field=field_name)
    return f"{field}: {message}" if field and field != "data" else message


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


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


_STORE_MODULES = (
    (("sqlalchemy", "asyncpg", "aiosqlite"), "relational store"),
    (("qdrant_client",), "vector store"),
    (("falkordb", "redis"), "graph store"),
    (("aioboto3", "aiobotocore", "botocore"), "object storage"),
)


_S3_OUTAGES = {
    "EndpointConnectionError",
    "ConnectTimeoutError",
    "ReadTimeoutError",
    "ConnectionClosedError",
    "ProxyConnectionError",
}


def _store_of(exc: BaseException) -> str:
    """Which store a connection error came from, by the modules its traceback went through."""
    modules = []
    trace = exc.__traceback__
    while trace is not None:
        modules.append(str(trace.tb_frame.f_globals.get("__name__", "")))
        trace = trace.tb_next
    for prefixes, store in _STORE_MODULES:
        if any(module.startswith(prefixes) for module in modules):
            return store
    return "store"


def store_outage(exc: BaseException) -> tuple[int, str] | None:
    """503 when a store cannot be reached (a dropped or refused connection, a pool that timed out),
    507 when the disk is full: conditions of the deployment, not bugs, and they pass."""
    for item in _chain(exc):
        if isinstance(item, OSError) and item.errno == errno.ENOSPC:
            return 507, "the disk is full: the write was not stored; free space and retry"
    for item in _chain(exc):
        module = type(item).__module__
        name = type(item).__name__
        if module.startswith("sqlalchemy") and name in ("OperationalError", "InterfaceError", "TimeoutError"):
            first_line = str(item).splitlines()[0][:200]
            return 503, f"the relational store is unavailable, retry shortly ({first_line})"
        if module.startswith("asyncpg") and ("Connection" in name or "CannotConnect" in name):
            return 503, f"the relational store is unavailable, retry shortly ({name})"
        if isinstance(item, ConnectionError):
            return 503, f"the {_store_of(item)} is unavailable, retry shortly ({name}: {item})"
        # Store clients whose connection errors are not the builtin ConnectionError.
        if module.startswith(("redis", "falkordb")) and name in ("ConnectionError", "TimeoutError"):
            return 503, f"the graph store is unavailable, retry shortly ({name}: {item})"
        if module.startswith("botocore") and name in _S3_OUTAGES:
            return 503, f"the object storage is unavailable, retry shortly ({name}: {item})"
    return None


def _raised_in(exc: BaseException, path_suffix: str) -> bool:
    trace = exc.__traceback__
    while trace is not None:
        if trace.tb_frame.f_code.co_filename.replace("\\", "/").endswith(path_suffix):
            return True
        trace = trace.tb_next
    return False


def _validation_message(exc: ValidationException, detail: Any) -> str:
    """The message of a 400 for a body or parameter that does not fit: each field and what is wrong."""
    if isinstance(detail, list) and detail and all(isinstance(item, dict) for item in detail):
        return "; ".join(field_message(item["field"], item["message"]) for item in detail)
    return str(exc.detail)


def exception_handlers() -> ExceptionHandlersMap:
    """Map our errors, Litestar's HTTP errors and anything unexpected to the one JSON shape."""
    log = structlog.get_logger("lore.errors")

    def respond(status: int, message: str, detail: Any = None) -> Response[Any]:
        return Response(
            content=error_body(status, message, detail),
            status_code=status,
            media_type=MediaType.JSON,
        )

    def on_lore_error(_: Request[Any, Any, Any], exc: LoreError) -> Response[Any]:
        return respond(exc.status_code, exc.message, exc.detail)

    def on_validation(_: Request[Any, Any, Any], exc: ValidationException) -> Response[Any]:
        detail = _validation_detail(exc)
        return respond(exc.status_code, _validation_message(exc, detail), detail)

    def on_http(request: Request[Any, Any, Any], exc: HTTPException) -> Response[Any]:
        message = str(exc.detail)
        if isinstance(exc, NotFoundException) and message == "Not Found":
            message = f"no route {request.method} {request.url.path}"
        elif exc.status_code == 413 and message == "Request Entity Too Large":
            message = (
                "the request body is larger than this route accepts: JSON bodies may hold up to "
                f"{JSON_BODY_LIMIT // 1_000_000} MB; "
                "a file goes through the upload routes, and one larger than a request may carry "
                "(docdb.max_upload_size) in chunks: POST …/datasets/{dataset}/upload/init, each chunk, "
                "then …/complete (lore ingest and the client's upload do so)"
            )
        if exc.status_code >= 500:  # Litestar's own 500s (a handler's signature) are bugs: keep the trace
            log.error("http_error", path=request.url.path, status=exc.status_code, exc_info=exc)
        response = respond(exc.status_code, message, exc.extra or None)
        if exc.headers:
            response.headers.update(exc.headers)
        return response

    def on_unexpected(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
        if isinstance(exc, UnicodeDecodeError) and _raised_in(exc, "litestar/_multipart.py"):
            # Litestar reads a form part without a filename as UTF-8 text: bytes there are the client's.
            return respond(
                HTTP_400_BAD_REQUEST,
                "a multipart field that is not a file holds bytes that are not UTF-8 text: send files "
                "as file parts (with a filename) and other fields as text",
            )
        outage = store_outage(exc)
        if outage is not None:
            status, message = outage
            log.warning("store_unavailable", path=request.url.path, status=status, error=message)
            return respond(status, message)
        log.exception("unhandled_error", path=request.url.path, method=request.method)
        return respond(HTTP_500_INTERNAL_SERVER_ERROR, f"internal error: {type(exc).__name__}: {exc}")

    return {
        LoreError: on_lore_error,
        ValidationException: on_validation,
        HTTPException: on_http,
        Exception: on_unexpected,
    }
