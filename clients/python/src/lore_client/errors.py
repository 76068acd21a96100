"""Typed errors: each carries what the server said (`code`, `message`, `detail`)."""

from __future__ import annotations

import re
from typing import Any

# The server's validator names the naming rule by its regex; a person reads it better in words.
_NAME_RULE = re.compile(r"Expected `str` matching regex '\^\[A-Za-z0-9_\\*-\]\+\$'")
NAME_RULE = "use only letters, digits, _ and - (at most 64 characters)"


class LoreError(Exception):
    """Any failure the client reports. `status` is the HTTP status (0 when the server was not reached)."""

    def __init__(self, message: str, *, status: int = 0, code: int | None = None, detail: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code if code is not None else status
        self.detail = detail

    def __str__(self) -> str:
        return f"{self.message} (HTTP {self.status})" if self.status else self.message


class BadRequest(LoreError):
    """400: the request is wrong (an empty query, a chunk out of range, a terminal task's cancel…)."""


class AuthenticationError(LoreError):
    """401 or 403: the gateway wants an API key (`api_key=` or `LORE_API_KEY`)."""


class NotFound(LoreError):
    """404: the dataset, file, knowledge base, task, upload, schema or memory does not exist."""


class Conflict(LoreError):
    """409: the name is taken, a task is active, or a dataset is already parsed (use `force`)."""


class PayloadTooLarge(LoreError):
    """413: too big for a simple upload; `upload()` sends large files in chunks."""


class Unprocessable(LoreError):
    """422: the request is well formed but invalid (no scope id in `vg`, an unknown entity type)."""


class RateLimited(LoreError):
    """429: slow down; `retry_after` is the server's hint in seconds, when it gave one."""

    retry_after: float | None = None


class ServerError(LoreError):
    """5xx: the server failed (503: a service or store it needs is down)."""


class Unreachable(LoreError):
    """The server could not be reached (connection refused, DNS, time-out)."""


class TaskFailed(LoreError):
    """`wait()` saw a task end `failed` or `cancelled`; `task` is its last state."""

    def __init__(self, message: str, task: Any) -> None:
        super().__init__(message)
        self.task = task


_BY_STATUS: dict[int, type[LoreError]] = {
    400: BadRequest,
    401: AuthenticationError,
    403: AuthenticationError,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    422: Unprocessable,
    429: RateLimited,
}


def error_for(status: int, body: Any, fallback: str = "") -> LoreError:
    """The typed error for a failed response. Every module answers `{success: false, code, message,
    detail}` (the message names each field a validation failed on); a body from something in front of
    Lore (a proxy's `{detail}`, plain text) still gives its words."""
    message, code, detail = fallback or f"HTTP {status}", status, None
    if isinstance(body, dict):
        if isinstance(body.get("message"), str):
            message, detail = body["message"], body.get("detail")
            code = body["code"] if isinstance(body.get("code"), int) else status
        elif isinstance(body.get("detail"), str):
            message = body["detail"]
    message = _NAME_RULE.sub(NAME_RULE, message)
    kind = _BY_STATUS.get(status, ServerError if status >= 500 else LoreError)
    return kind(message, status=status, code=code, detail=detail)
