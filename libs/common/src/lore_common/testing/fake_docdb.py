"""docdb's public API as gen uses it (KB lookup, `/retrieve`, overview), for respx-mocked gen tests."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx


class FakeDocdb:
    """docdb's public API as gen uses it (KB lookup, `/retrieve`, overview), over in-memory passages."""

    def __init__(self) -> None:
        self.kbs: dict[str, list[tuple[str, str]]] = {}
        self.entities: dict[str, list[dict[str, Any]]] = {}
        self.queries: list[str] = []
        self.down = False

    def add_kb(
        self, name: str, passages: dict[str, str], entities: list[dict[str, Any]] | None = None
    ) -> None:
        self.kbs[name] = [(text, source) for source, text in passages.items()]
        self.entities[name] = entities or []

    def handle(self, request: httpx.Request) -> httpx.Response:
        if self.down:
            raise httpx.ConnectError("connection refused", request=request)
        path = request.url.path.removeprefix("/api/v1/docdb")
        if path == "/retrieve":
            body = json.loads(request.content)
            self.queries.append(body["query"])
            if body["kb_id"] not in self.kbs:
                return httpx.Response(404, json={"success": False, "code": 404, "message": "no such KB"})
            terms = {w.lower() for w in re.findall(r"\w+", body["query"]) if len(w) > 3}
            scored = []
            for text, source in self.kbs[body["kb_id"]]:
                overlap = len(terms & {w.lower() for w in re.findall(r"\w+", text)})
                score = overlap / max(1, len(terms))
                if overlap and score >= body["threshold"]:
                    scored.append((score, text, source))
            scored.sort(reverse=True)
            data = [
                {
                    "kb_id": body["kb_id"],
                    "kb_name": s,
                    "score": sc,
                    "content": t,
                    "source_id": ["c1"],
                    "dataset": "d",
                }
                for sc, t, s in scored[: body["top_k"]]
            ]
            return httpx.Response(200, json={"success": True, "data": data, "total_count": len(data)})
        match = re.fullmatch(r"/files/knowledge-bases/([^/]+)(/overview)?", path)
        if match:
            name = match.group(1)
            if name not in self.kbs:
                return httpx.Response(404, json={"success": False, "code": 404, "message": "no such KB"})
            if match.group(2):
                overview = {"name": name, "top_entities": self.entities[name], "sample_relations": []}
                return httpx.Response(200, json={"success": True, "overview": overview, "prompt": ""})
            return httpx.Response(
                200, json={"success": True, "name": name, "status": "ready", "datasets": []}
            )
        return httpx.Response(404, json={"success": False, "code": 404, "message": "unknown path"})
