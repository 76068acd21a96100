"""Lore as tools for agents over the Model Context Protocol, served by the gateway at `/mcp`.

Streamable HTTP, stateless (any gateway replica answers any call) with JSON replies. Every tool is
a call to a service's public `/api/v1/...` route, through the gateway's own upstreams (replica choice
included): the gateway holds no service code. An error answer of a service becomes a tool error whose
text is the service's message, so the model can read what to fix.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any, Literal

import aiohttp
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, TextContent
from typing_extensions import TypedDict  # pydantic reads TypedDicts from here on Python < 3.12

from lore_core import __version__
from lore_core.internal import CALLER_HEADER
from lore_core.logging import REQUEST_ID_HEADER
from lore_gateway.guard import Denied, Guard, current_limits
from lore_gateway.proxy import Proxy

TABLE_WAIT_S = 300.0


class Message(TypedDict):
    role: Literal["user", "assistant", "system"]
    content: str


class Services:
    """HTTP calls to the services, as the gateway proxies them."""

    def __init__(self, proxy: Proxy, guard: Guard) -> None:
        self.proxy = proxy
        self.guard = guard

    async def call(
        self,
        module: str,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        form: aiohttp.FormData | None = None,
    ) -> Any:
        replica = self.proxy.downstreams[module].pick()
        assert replica is not None  # a module has at least one replica
        query = {k: str(v) for k, v in (params or {}).items() if v is not None}
        request_id = f"mcp-{uuid.uuid4()}"
        # The calling key's limits (knowledge bases, datasets, memories), as on the proxied routes.
        limits = current_limits.get()
        checked = None
        if limits is not None and limits.limits_module(module):
            try:
                checked = await self.guard.prepare(
                    limits, module, method, f"/api/v1/{module}{path}", query, request_id
                )
                query.update(checked.query)
                if checked.body is not None:
                    json = checked.body(json)
            except Denied as denied:
                raise ToolError(denied.message) from denied
        try:
            async with self.proxy.session.request(
                method,
                f"{replica.url}/api/v1/{module}{path}",
                json=json,
                data=form,
                params=query,
                headers={
                    REQUEST_ID_HEADER: request_id,
                    # gen's tasks show to the key that started them (see guard.Plan.caller).
                    **({CALLER_HEADER: limits.key} if limits and checked and checked.caller else {}),
                },
                timeout=aiohttp.ClientTimeout(total=600),
            ) as response:
                body = await response.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            raise ToolError(f"the {module} service could not be reached: {exc}") from exc
        if response.status >= 400:
            raise ToolError(f"{module} answered {response.status}: {_message(body)}")
        if isinstance(body, dict) and body.get("success") is False:
            raise ToolError(f"{module}: {_message(body)}")
        if limits is not None and checked is not None:
            body = self.guard.checked_reply(limits, checked, body)
            if body is None:
                raise ToolError(f"{module} answered 404: not found")
        return body


def _message(body: Any) -> str:
    if isinstance(body, dict):
        for key in ("message", "detail"):
            if body.get(key):
                return str(body[key])
    return str(body)[:500]


def json_array(items: list[Any]) -> CallToolResult:
    """A list as one JSON array (text and structured content): the SDK would otherwise send each item
    as its own text block, which a client reads as objects joined by newlines."""
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(items, ensure_ascii=False))],
        structured_content={"result": items},
    )


def _scope(user_id: str | None, agent_id: str | None, run_id: str | None) -> dict[str, str | None]:
    if not (user_id or agent_id or run_id):
        raise ToolError("name whose memories these are: give user_id, agent_id or run_id")
    return {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}


def build_server(services: Services) -> MCPServer:
    server: MCPServer = MCPServer(
        name="lore",
        version=__version__,
        instructions=(
            "Lore holds document knowledge bases (search them, ask them with citations), long-term memory "
            "scoped by user_id / agent_id / run_id, a knowledge-graph memory, and table generation."
        ),
    )

    @server.tool(description="List the knowledge bases: name, status and creation time.")
    async def knowledge_bases() -> CallToolResult:
        body = await services.call("docdb", "GET", "/files/knowledge-bases")
        return json_array(list(body.get("data", [])))

    @server.tool(
        description="Search a knowledge base for the passages nearest a query (no model call). Returns "
        "passages with their file, dataset and score."
    )
    async def knowledge_search(
        kb: str, query: str, top_k: int = 8, mode: Literal["naive", "rerank"] = "rerank"
    ) -> CallToolResult:
        body = await services.call(
            "docdb",
            "POST",
            "/retrieve",
            json={"kb_id": kb, "query": query, "mode": mode, "max_results": top_k},
        )
        return json_array(
            [
                {
                    "content": item["content"],
                    "file": item["kb_name"],
                    "dataset": item["dataset"],
                    "score": item["score"],
                }
                for item in body.get("data", [])
            ]
        )

    @server.tool(
        description="Ask a knowledge base a question. Returns the answer, which cites passages as [n], "
        "and the citations (n, file, dataset)."
    )
    async def knowledge_ask(
        kb: str,
        question: str,
        mode: Literal["naive", "rerank", "rewriter", "multihop", "direct"] = "naive",
    ) -> dict[str, Any]:
        body = await services.call(
            "docdb",
            "POST",
            "/chat",
            json={"query": question, "kb_id": kb, "user_id": "mcp", "query_mode": mode},
        )
        return {"answer": body.get("response"), "citations": body.get("citations") or []}

    @server.tool(
        description="Remember what a conversation says about a user, agent or run: facts are extracted and "
        "merged with what is already remembered. Give messages, or just text."
    )
    async def memory_add(
        messages: list[Message] | None = None,
        text: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        said = [{"role": m["role"], "content": m["content"]} for m in messages or []]
        if text:
            said.append({"role": "user", "content": text})
        if not said:
            raise ToolError("nothing to remember: give messages or text")
        body = {"messages": said, **_scope(user_id, agent_id, run_id), "metadata": metadata}
        result: dict[str, Any] = await services.call("mem", "POST", "/vg/add", json=body)
        return result

    @server.tool(
        description="Search the memories of a user, agent or run for a query; best first, with scores."
    )
    async def memory_search(
        query: str,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int = 10,
    ) -> CallToolResult:
        body = {"query": query, **_scope(user_id, agent_id, run_id), "limit": limit}
        return json_array(
            list((await services.call("mem", "POST", "/vg/search", json=body)).get("results", []))
        )

    @server.tool(description="List the memories of a user, agent or run.")
    async def memory_list(
        user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None, limit: int = 100
    ) -> CallToolResult:
        body = await services.call(
            "mem", "GET", "/vg", params={**_scope(user_id, agent_id, run_id), "limit": limit}
        )
        return json_array(list(body.get("results", body) if isinstance(body, dict) else body))

    @server.tool(description="Replace the text of one memory (by its id).")
    async def memory_update(memory_id: str, text: str) -> dict[str, Any]:
        result: dict[str, Any] = await services.call("mem", "PUT", f"/vg/{memory_id}", json={"data": text})
        return result

    @server.tool(description="Forget one memory (by its id); the deletion stays in its history.")
    async def memory_delete(memory_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await services.call("mem", "DELETE", f"/vg/{memory_id}")
        return result

    @server.tool(description="The history of one memory: each add, update and delete, oldest first.")
    async def memory_history(memory_id: str) -> CallToolResult:
        return json_array(list(await services.call("mem", "GET", f"/vg/{memory_id}/history")))

    @server.tool(
        description="Add text to the knowledge-graph memory. Entities and relations are extracted in the "
        "background; the text is searchable by kb_memory_query seconds later. Returns the insert job."
    )
    async def kb_memory_insert(text: str) -> dict[str, Any]:
        form = aiohttp.FormData()
        form.add_field("query", text)
        result: dict[str, Any] = await services.call("mem", "POST", "/kb/insert", form=form)
        return result

    @server.tool(
        description="Ask the knowledge-graph memory. Modes: hybrid (entities and communities), local "
        "(entity neighbourhood), global (community summaries), naive (nearest chunks)."
    )
    async def kb_memory_query(
        question: str, mode: Literal["hybrid", "local", "global", "naive"] = "hybrid"
    ) -> dict[str, Any]:
        body = await services.call("mem", "POST", "/kb/query", json={"query": question, "mode": mode})
        return {"answer": body.get("final_answer", ""), "context": body.get("rag_memory", "")}

    @server.tool(
        description="Generate a table that answers a question from a knowledge base (`kb`; by default the "
        "one gen is set up with); waits for the result (up to 5 minutes)."
    )
    async def generate_table(
        question: str, kb: str | None = None, top_k: int = 5, threshold: float = 0.5
    ) -> dict[str, Any]:
        ask: dict[str, Any] = {"question": question, "top_k": top_k, "threshold": threshold}
        if kb:
            ask["kb_name"] = kb
        submitted = await services.call("gen", "POST", "/pipeline/submit", json=ask)
        task_id = submitted["task_id"]
        deadline = time.monotonic() + TABLE_WAIT_S
        while time.monotonic() < deadline:
            status = await services.call("gen", "GET", f"/pipeline/status/{task_id}")
            if status.get("status") == "completed":
                return {"task_id": task_id, "result": status.get("result")}
            if status.get("status") == "failed":
                raise ToolError(f"table generation failed: {status.get('error') or status}")
            await asyncio.sleep(0.5)
        raise ToolError(
            f"table {task_id} is not ready after {TABLE_WAIT_S:.0f} s; poll /api/v1/gen/pipeline/status"
        )

    return server


class AgentTools:
    """The MCP server and its ASGI app, served at `path` (`mcp_endpoint` starts them on the first
    request there)."""

    def __init__(self, proxy: Proxy, path: str, guard: Guard) -> None:
        self.server = build_server(Services(proxy, guard))
        self.app = self.server.streamable_http_app(
            streamable_http_path=path,
            stateless_http=True,
            json_response=True,
            # The gateway is reached by many names (a cluster's Service, an ingress): API keys guard it.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
