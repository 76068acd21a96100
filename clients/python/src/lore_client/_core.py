"""The HTTP core every method goes through: one `httpx.AsyncClient`, typed decoding, typed errors."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Mapping
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx
import msgspec

from lore_client.errors import LoreError, RateLimited, Unreachable, error_for

T = TypeVar("T")
DEFAULT_URL = "http://127.0.0.1:8000"
API = "/api/v1"


def _clean(params: Mapping[str, Any]) -> dict[str, Any]:
    """Query parameters without the unset ones; booleans as the server reads them."""
    return {k: (str(v).lower() if isinstance(v, bool) else v) for k, v in params.items() if v is not None}


class Core:
    """`base_url` is the gateway's address (default `LORE_URL`, else http://127.0.0.1:8000); `api_key`
    is sent as a Bearer token (default `LORE_API_KEY`). `http` lets a caller bring its own
    `httpx.AsyncClient` (a proxy, a custom transport); its base URL and headers are then the caller's."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        url = (base_url or os.environ.get("LORE_URL") or DEFAULT_URL).rstrip("/")
        self.base_url = url.removesuffix(API)
        self.api_key = api_key if api_key is not None else os.environ.get("LORE_API_KEY") or None
        headers = {"user-agent": "lore-client/0.1"}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        self._headers = headers
        self._http = http or httpx.AsyncClient(
            base_url=self.base_url, headers=headers, timeout=httpx.Timeout(timeout, connect=10.0)
        )

    async def close(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.close()

    async def _send(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json_body: Any = None,
        accept: tuple[int, ...] = (),
        **kwargs: Any,
    ) -> httpx.Response:
        """Send and raise the typed error for any status ≥ 400 but those in `accept`. `path` is
        relative to `/api/v1` unless it starts with `/`."""
        url = path if path.startswith("/") else f"{API}/{path}"
        if json_body is not None:
            kwargs["content"] = msgspec.json.encode(json_body)
            kwargs["headers"] = {**kwargs.get("headers", {}), "content-type": "application/json"}
        try:
            response = await self._http.request(method, url, params=_clean(params or {}), **kwargs)
        except httpx.TransportError as exc:
            reason = str(exc) or type(exc).__name__  # some (a write cut by the server) have no text
            raise Unreachable(f"cannot reach Lore at {self.base_url}: {reason}") from exc
        if response.status_code >= 400 and response.status_code not in accept:
            raise _error(response)
        return response

    async def _get(self, path: str, kind: type[T], **params: Any) -> T:
        return decode(await self._send("GET", path, params=params), kind)

    async def _post(self, path: str, kind: type[T], body: Any = None, **kwargs: Any) -> T:
        return decode(await self._send("POST", path, json_body=body, **kwargs), kind)

    async def _events(self, path: str, body: Any) -> AsyncIterator[tuple[str, Any]]:
        """A server-sent event stream: (event name, decoded JSON data) pairs."""
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        request = self._http.build_request(
            "POST", f"{API}/{path}", content=msgspec.json.encode(body), headers=headers
        )
        try:
            response = await self._http.send(request, stream=True)
        except httpx.TransportError as exc:
            raise Unreachable(f"cannot reach Lore at {self.base_url}: {exc}") from exc
        try:
            if response.status_code >= 400:
                await response.aread()
                raise _error(response)
            name, data = "message", list[str]()
            async for line in response.aiter_lines():
                if not line:
                    if data:
                        yield name, json.loads("\n".join(data))
                    name, data = "message", []
                elif line.startswith("event:"):
                    name = line[6:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].removeprefix(" "))
        finally:
            await response.aclose()


def decode(response: httpx.Response, kind: type[T]) -> T:
    try:
        return msgspec.json.decode(response.content, type=kind)
    except msgspec.ValidationError as exc:
        raise LoreError(
            f"unexpected reply from {response.request.method} {response.request.url.path}: {exc}",
            status=response.status_code,
        ) from exc


def _error(response: httpx.Response) -> LoreError:
    try:
        body = response.json()
    except ValueError:
        body = None
    error = error_for(response.status_code, body, response.text[:200] or response.reason_phrase)
    if isinstance(error, RateLimited):
        retry = response.headers.get("retry-after", "")
        error.retry_after = float(retry) if retry.replace(".", "", 1).isdigit() else None
    return error
