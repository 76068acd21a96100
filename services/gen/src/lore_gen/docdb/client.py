"""gen's HTTP client for docdb: KB existence, retrieval (`/retrieve`) and the KB overview.

gen never reads docdb's stores (ARCHITECTURE §1); everything goes through docdb's public API, with the
caller's request id forwarded so one id follows a request through both services.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx
import structlog

from lore_core import internal
from lore_core.errors import LoreError, NotFound
from lore_core.logging import REQUEST_ID_HEADER
from lore_gen.docdb.models import DocdbUnavailable, Passage

PREFIX = "/api/v1/docdb"


class DocdbClient:
    def __init__(
        self, base_url: str, timeout: float = 60.0, transport: httpx.AsyncBaseTransport | None = None
    ):
        self.base_url = base_url.rstrip("/")
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            timeout=timeout,
            transport=transport,
            verify=internal.client_ssl() or True,
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=64),
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    def _headers(self) -> dict[str, str]:
        request_id = structlog.contextvars.get_contextvars().get("request_id")
        headers = internal.outgoing_headers()  # docdb answers only Lore's own processes
        return headers | {REQUEST_ID_HEADER: str(request_id)} if request_id else headers

    async def _call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return await self._http.request(method, PREFIX + path, headers=self._headers(), **kwargs)
        except httpx.HTTPError as exc:
            raise DocdbUnavailable(
                f"docdb at {self.base_url} could not be reached ({type(exc).__name__}: {exc}); "
                "check gen.docdb_url and that docdb is running"
            ) from exc

    @staticmethod
    def _failure(response: httpx.Response, what: str) -> LoreError:
        """docdb's own trouble (5xx) is an outage gen's tasks wait out; a refusal (4xx) is not, and
        answers 502 with docdb's reason."""
        try:
            message = response.json().get("message") or response.text[:300]
        except ValueError:
            message = response.text[:300]
        text = f"docdb {what} failed with HTTP {response.status_code}: {message}"
        if response.status_code >= 500:
            return DocdbUnavailable(text)
        return LoreError(text, status_code=502)

    async def require_kb(self, kb_name: str) -> None:
        """404 (NotFound) for an unknown KB, so the caller can answer before starting any work."""
        response = await self._call("GET", f"/files/knowledge-bases/{quote(kb_name, safe='')}")
        if response.status_code == 404:
            raise NotFound(f"knowledge base {kb_name!r} does not exist in docdb")
        if response.status_code != 200:
            raise self._failure(response, f"lookup of knowledge base {kb_name!r}")

    async def retrieve(self, kb_name: str, query: str, top_k: int, threshold: float) -> list[Passage]:
        response = await self._call(
            "POST",
            "/retrieve",
            json={
                "kb_id": kb_name,
                "query": query,
                "mode": "naive",
                "top_k": top_k,
                "max_results": top_k,
                "threshold": threshold,
            },
        )
        if response.status_code == 404:
            raise NotFound(f"knowledge base {kb_name!r} does not exist in docdb")
        if response.status_code != 200:
            raise self._failure(response, f"retrieval from {kb_name!r}")
        return [
            Passage(
                content=str(item.get("content", "")),
                score=float(item.get("score", 0.0)),
                source=str(item.get("kb_name", "")),
                dataset=str(item.get("dataset", "")),
            )
            for item in response.json().get("data", [])
        ]

    async def overview(self, kb_name: str, top_nodes: int, sample_relations: int) -> dict[str, Any]:
        response = await self._call(
            "GET",
            f"/files/knowledge-bases/{quote(kb_name, safe='')}/overview",
            params={"top_nodes": top_nodes, "sample_relations": sample_relations},
        )
        if response.status_code == 404:
            raise NotFound(f"knowledge base {kb_name!r} does not exist in docdb")
        if response.status_code != 200:
            raise self._failure(response, f"overview of {kb_name!r}")
        overview: dict[str, Any] = response.json().get("overview", {})
        return overview
