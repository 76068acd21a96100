"""Keys limited to resources: which knowledge bases, datasets and memories a request may touch.

A key's `knowledge_bases`, `datasets` and `memory` (see `lore_core.settings.ApiKey`) are checked on
every route of a module the key is limited in, whichever way the request came: the proxy (HTTP, event
streams, the table WebSocket), the MCP tools and the OpenAI-compatible routes. For each route `plan`
says what to check before the call (a name in the path, the body or the query; a memory's or task's
owner, read first) and what to filter in the reply (lists keep what the key may see; a single thing
it may not see is a 404, as if it did not exist). A route `plan` does not know is refused to a limited
key, so a route added later leaks nothing until it is given its rule.

The knowledge-graph memory (mem kb) is partitioned by workspace: every kb call of a key with memory
limits carries the workspace the key may use (`?workspace=`, put in or checked here; see
`Limits.kb_workspace`), so it never reads or writes another workspace's graph.

gen's tasks started by a limited key carry the key's name (`x-lore-caller`, lore_core.internal): gen
stores it with the task and shows the task to that caller only, so every gateway replica agrees.
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any
from urllib.parse import parse_qsl, urlencode

import aiohttp
import msgspec

from lore_core import audit
from lore_core.errors import error_body
from lore_core.internal import CALLER_HEADER
from lore_core.logging import REQUEST_ID_HEADER, request_id_from
from lore_core.settings import MemoryLimits
from lore_core.web import JSON_BODY_LIMIT
from lore_gateway.proxy import Message, Proxy, Receive, Scope, Send

SCOPE_IDS = ("user_id", "agent_id", "run_id")
CALLER = CALLER_HEADER.encode()
# mem kb's workspace of a call that names none (lore_mem.kb.models.DEFAULT_WORKSPACE).
KB_DEFAULT_WORKSPACE = "default"
GLOB = frozenset("*?[")


class Denied(Exception):
    """A request outside the key's limits: 403 when the key names what it asked for, 404 for a thing
    the key may not see (a memory, a task), so its existence is not told."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Limits:
    """What one key may touch; an empty tuple or None: no limit of that kind."""

    key: str
    knowledge_bases: tuple[str, ...] = ()
    datasets: tuple[str, ...] = ()
    memory: MemoryLimits | None = None

    @property
    def limited(self) -> bool:
        return bool(self.knowledge_bases or self.datasets or self.memory)

    def limits_module(self, module: str) -> bool:
        if module == "mem":
            return self.memory is not None
        if module == "gen":
            return bool(self.knowledge_bases)
        return bool(self.knowledge_bases or self.datasets)

    def kb_allowed(self, name: Any) -> bool:
        return not self.knowledge_bases or (
            isinstance(name, str) and any(fnmatchcase(name, p) for p in self.knowledge_bases)
        )

    def dataset_allowed(self, name: Any) -> bool:
        return not self.datasets or (
            isinstance(name, str) and any(fnmatchcase(name, p) for p in self.datasets)
        )

    def check_kb(self, name: Any) -> None:
        if not self.kb_allowed(name):
            raise Denied(403, f"API key {self.key!r} may not use knowledge base {name!r}")

    def check_dataset(self, name: Any) -> None:
        if not self.dataset_allowed(name):
            raise Denied(403, f"API key {self.key!r} may not use dataset {name!r}")

    def scoped(self, given: dict[str, Any]) -> dict[str, Any]:
        """The memory scope of a request (`user_id`, `agent_id`, `run_id`) within the key's limits: a
        missing id the key fixes is put in; a missing id the key limits by pattern, or an id outside the
        pattern, is refused."""
        limits = self.memory
        if limits is None:
            return given
        out = dict(given)
        for name in SCOPE_IDS:
            pattern = getattr(limits, name)
            if pattern is None:
                continue
            value = out.get(name)
            if value in (None, ""):
                if GLOB & set(pattern):
                    raise Denied(403, f"API key {self.key!r} is limited to {name} {pattern!r}: name one")
                out[name] = pattern
            elif not isinstance(value, str) or not fnmatchcase(value, pattern):
                raise Denied(
                    403, f"API key {self.key!r} may not use {name} {value!r} (limited to {pattern!r})"
                )
        return out

    def kb_workspace(self, given: Any) -> str:
        """The memory-graph workspace of a kb call that names `given` (None: none): the key's own
        workspace, put in, or the named one when it matches the key's `workspace` pattern."""
        limits = self.memory
        if limits is None:
            return given if isinstance(given, str) and given else KB_DEFAULT_WORKSPACE
        allowed = limits.workspace if limits.workspace is not None else own_workspace(limits)
        if limits.workspace is not None and GLOB & set(allowed):
            if given in (None, ""):
                raise Denied(403, f"API key {self.key!r} is limited to workspace {allowed!r}: name one")
            if not isinstance(given, str) or not fnmatchcase(given, allowed):
                raise Denied(
                    403, f"API key {self.key!r} may not use workspace {given!r} (limited to {allowed!r})"
                )
            return given
        if given not in (None, "", allowed):
            raise Denied(403, f"API key {self.key!r} may not use workspace {given!r} (its own: {allowed!r})")
        return allowed

    def memory_visible(self, record: Any) -> bool:
        limits = self.memory
        if limits is None:
            return True
        if not isinstance(record, dict):
            return False
        for name in SCOPE_IDS:
            pattern = getattr(limits, name)
            if pattern is None:
                continue
            value = record.get(name)
            if not isinstance(value, str) or not fnmatchcase(value, pattern):
                return False
        return True

    def task_visible(self, task: Any) -> bool:
        """A docdb parse task: visible when its knowledge base and dataset are."""
        if not isinstance(task, dict):
            return False
        metadata = task.get("metadata") or {}
        return self.kb_allowed(metadata.get("kb_name")) and self.dataset_allowed(metadata.get("dataset"))


def own_workspace(limits: MemoryLimits) -> str:
    """The memory-graph workspace of a key that names none: one per set of id limits, written out
    (`user_id=alice-*`); the default workspace for a key that limits no id (it sees every memory)."""
    named = [f"{name}={getattr(limits, name)}" for name in SCOPE_IDS if getattr(limits, name) is not None]
    return ",".join(named) or KB_DEFAULT_WORKSPACE


Check = Callable[[Any], Any]
Forward = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass
class Plan:
    """What one call needs: `body` checks (and may rewrite) the JSON body; `query` replaces query
    parameters; `first` is a GET whose reply `first_ok` must accept (else 404); `reply` filters a JSON
    reply (None: answer 404); `caller` sends the key's name to gen (`CALLER_HEADER`), which then shows
    only the tasks that name started."""

    body: Check | None = None
    query: dict[str, str] = field(default_factory=dict)
    first: str | None = None
    first_ok: Callable[[Any], bool] | None = None
    reply: Check | None = None
    caller: bool = False

    def body_checked(self, body: Any) -> Any:
        return self.body(body) if self.body is not None else body

    @property
    def reads_body(self) -> bool:
        return self.body is not None

    @property
    def filters_reply(self) -> bool:
        return self.reply is not None


NOT_FOUND = "not found"


def _filter_data(limits: Limits, allowed: Callable[[Any], bool]) -> Check:
    def check(reply: Any) -> Any:
        if isinstance(reply, dict) and isinstance(reply.get("data"), list):
            reply["data"] = [item for item in reply["data"] if allowed(item)]
            if "total_count" in reply:
                reply["total_count"] = len(reply["data"])
        return reply

    return check


def _docdb(limits: Limits, method: str, parts: list[str], query: dict[str, str]) -> Plan:
    # parts: the path after /api/v1/docdb/
    if not parts:
        raise Denied(403, "this route is not open to keys limited to knowledge bases")
    head = parts[0]
    if head in ("schemas", "config"):
        return Plan()  # entity schemas and the (redacted) configuration hold no knowledge base's data
    if head in ("chat", "retrieve") and len(parts) == 1:

        def kb_id(body: Any) -> Any:
            limits.check_kb(body.get("kb_id") if isinstance(body, dict) else None)
            return body

        return Plan(body=kb_id)
    if head != "files" or len(parts) < 2:
        raise Denied(403, "this route is not open to keys limited to knowledge bases")
    area, rest = parts[1], parts[2:]
    if area == "raw-files" and rest[:1] == ["datasets"]:
        if len(rest) == 1:
            if method == "GET":
                return Plan(reply=_filter_data(limits, limits.dataset_allowed))

            def name(body: Any) -> Any:
                limits.check_dataset(body.get("name") if isinstance(body, dict) else None)
                return body

            return Plan(body=name)
        limits.check_dataset(rest[1])
        return Plan()
    if area == "raw-files" and rest == ["sources"] and method == "GET":
        return Plan(reply=_filter_data(limits, lambda item: limits.dataset_allowed(_dataset(item))))
    if area == "knowledge-bases":
        if not rest:
            if method == "GET":
                return Plan(reply=_filter_data(limits, lambda item: limits.kb_allowed(_name(item))))

            def kb_name(body: Any) -> Any:
                limits.check_kb(body.get("name") if isinstance(body, dict) else None)
                return body

            return Plan(body=kb_name)
        limits.check_kb(rest[0])
        if rest[1:2] == ["datasets"] and len(rest) > 2:
            limits.check_dataset(rest[2])
        if rest[1:] == ["parse"]:

            def datasets(body: Any) -> Any:
                names = body.get("datasets") if isinstance(body, dict) else None
                for dataset in names if isinstance(names, list) else [None]:
                    limits.check_dataset(dataset)
                return body

            return Plan(body=datasets)
        return Plan()
    if area == "processing":
        if rest == ["config"]:
            return Plan()
        if rest == ["tasks"]:

            def tasks(reply: Any) -> Any:
                if isinstance(reply, list):
                    return [task for task in reply if limits.task_visible(task)]
                return _filter_data(limits, limits.task_visible)(reply)

            return Plan(reply=tasks)
        if rest[:1] == ["tasks"] and len(rest) >= 2:
            task = f"/api/v1/docdb/files/processing/tasks/{rest[1]}"
            if len(rest) == 2 and method == "GET":
                return Plan(reply=lambda reply: reply if limits.task_visible(reply) else None)
            return Plan(first=task, first_ok=limits.task_visible)
    raise Denied(403, "this route is not open to keys limited to knowledge bases")


def _dataset(item: Any) -> Any:
    return item.get("dataset") if isinstance(item, dict) else None


def _name(item: Any) -> Any:
    return item.get("name") if isinstance(item, dict) else item


def _gen(limits: Limits, method: str, parts: list[str], query: dict[str, str]) -> Plan:
    if parts in (["pipeline", "submit"], ["pipeline", "stream"]):

        def kb_name(body: Any) -> Any:
            named = body.get("kb_name") if isinstance(body, dict) else None
            if named is None:
                raise Denied(403, f"API key {limits.key!r} is limited to knowledge bases: name kb_name")
            limits.check_kb(named)
            return body

        return Plan(body=kb_name, caller=True)
    if parts == ["tag-tree", "generate"]:

        def tree(body: Any) -> Any:
            if isinstance(body, dict) and body.get("mode") != "pure_llm":
                limits.check_kb(body.get("kb_name"))
            return body

        return Plan(body=tree, caller=True)
    if parts == ["tag-tree", "submit"]:
        return Plan(caller=True)  # a spreadsheet of the caller's own
    if len(parts) == 3 and parts[0] in ("pipeline", "tag-tree") and parts[1] == "status":
        return Plan(caller=True)  # gen answers 404 for a task another caller started
    raise Denied(403, "this route is not open to keys limited to knowledge bases")


def _mem(limits: Limits, method: str, parts: list[str], query: dict[str, str]) -> Plan:
    memory = limits.memory
    assert memory is not None  # `plan` calls this for keys with memory limits only
    if parts[:1] == ["kb"]:
        if not memory.kb:
            raise Denied(
                403, f"API key {limits.key!r} is limited to some memories and not given the memory graph (kb)"
            )
        if parts not in (["kb", "insert"], ["kb", "inserts"], ["kb", "query"]) and not (
            len(parts) == 3 and parts[1] == "insert"
        ):
            raise Denied(403, "this route is not open to keys limited to memories")
        # The key's workspace replaces whatever the call named (a wrong one is refused first).
        return Plan(query={"workspace": limits.kb_workspace(query.get("workspace"))})
    if parts[:1] != ["vg"]:
        raise Denied(403, "this route is not open to keys limited to memories")

    def results(reply: Any) -> Any:
        if isinstance(reply, dict) and isinstance(reply.get("results"), list):
            reply["results"] = [m for m in reply["results"] if limits.memory_visible(m)]
        elif isinstance(reply, list):
            return [m for m in reply if limits.memory_visible(m)]
        return reply

    if parts == ["vg"]:
        given = {name: query.get(name) for name in SCOPE_IDS}
        scoped = {k: v for k, v in limits.scoped(given).items() if v is not None}
        return Plan(query=scoped, reply=results if method == "GET" else None)
    if parts in (["vg", "add"], ["vg", "search"]):

        def scope(body: Any) -> Any:
            if not isinstance(body, dict):
                raise Denied(400, "the body must be a JSON object")
            return {**body, **{k: v for k, v in limits.scoped(body).items() if k in SCOPE_IDS and v}}

        return Plan(body=scope, reply=results if parts[1] == "search" else None)
    if len(parts) >= 2:
        memory_path = f"/api/v1/mem/vg/{parts[1]}"
        if len(parts) == 2 and method == "GET":
            return Plan(reply=lambda reply: reply if limits.memory_visible(reply) else None)
        return Plan(first=memory_path, first_ok=limits.memory_visible)
    raise Denied(403, "this route is not open to keys limited to memories")


PLANS = {"docdb": _docdb, "gen": _gen, "mem": _mem}


def plan(limits: Limits, module: str, method: str, path: str, query: dict[str, str]) -> Plan:
    """What a call of `limits`'s key to `module` needs (see `Plan`); Denied when it may not be made."""
    if not limits.limits_module(module):
        return Plan()
    prefix = f"/api/v1/{module}"
    rest = path[len(prefix) :].strip("/") if path.startswith(prefix) else ""
    parts = [p for p in rest.split("/") if p]
    return PLANS[module](limits, method.upper(), parts, query)


# The key of the request being served, for the MCP tools (they call the services themselves).
current_limits: contextvars.ContextVar[Limits | None] = contextvars.ContextVar("lore_limits", default=None)


class Guard:
    """Applies `plan` to the proxy's HTTP and WebSocket calls and to the MCP tools' calls."""

    def __init__(self, proxy: Proxy) -> None:
        self.proxy = proxy

    async def first(self, module: str, path: str, accept: Callable[[Any], bool], request_id: str) -> None:
        """Read the thing a call acts on (a memory, a task) and refuse, as not found, one the key may
        not see."""
        replica = self.proxy.downstreams[module].pick()
        assert replica is not None  # a module has at least one replica
        try:
            async with self.proxy.session.get(
                f"{replica.url}{path}",
                headers={REQUEST_ID_HEADER: request_id},
                timeout=aiohttp.ClientTimeout(total=30),
            ) as response:
                body = await response.json(content_type=None) if response.status == 200 else None
        except (aiohttp.ClientError, TimeoutError, ValueError):
            body = None
        if body is None or not accept(body):
            raise Denied(404, NOT_FOUND)

    def checked_reply(self, limits: Limits, call: Plan, reply: Any) -> Any:
        """The reply as the key may see it (None: not found)."""
        return call.reply(reply) if call.reply is not None else reply

    async def prepare(
        self, limits: Limits, module: str, method: str, path: str, query: dict[str, str], request_id: str
    ) -> Plan:
        call = plan(limits, module, method, path, query)
        if call.first is not None and call.first_ok is not None:
            await self.first(module, call.first, call.first_ok, request_id)
        return call

    async def http(
        self, limits: Limits, module: str, scope: Scope, receive: Receive, send: Send, forward: Forward
    ) -> None:
        request_id = request_id_from(scope.get("headers", []))
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))
        method = scope.get("method", "GET")
        try:
            call = await self.prepare(limits, module, method, scope["path"], query, request_id)
            scope = dict(scope)
            if call.query:
                query.update(call.query)
                scope["query_string"] = urlencode(query).encode("latin-1")
                scope.pop("raw_path", None)
            if call.reads_body:
                receive, scope = await self._checked_body(call, scope, receive)
        except Denied as denied:
            audit.record(
                "refused",
                str(denied.status),
                key=limits.key,
                route=scope["path"],
                method=method,
                reason=denied.message,
            )
            await _answer(send, denied.status, denied.message, request_id)
            return
        if call.filters_reply:
            scope["headers"] = [
                (k, v) for k, v in scope.get("headers", []) if k.lower() != b"accept-encoding"
            ]
            send = self._filtering(limits, call, send, request_id)
        if call.caller:
            scope = with_caller(scope, limits.key)
        await forward(scope, receive, send)

    async def _checked_body(self, call: Plan, scope: Scope, receive: Receive) -> tuple[Receive, Scope]:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise Denied(400, "the client left before its body was read")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > JSON_BODY_LIMIT:
                raise Denied(413, "the body is larger than this route accepts (10 MB)")
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        try:
            body = msgspec.json.decode(b"".join(chunks))
        except msgspec.DecodeError as exc:
            raise Denied(400, f"the body is not valid JSON: {exc}") from exc
        assert call.body is not None
        raw = msgspec.json.encode(call.body(body))
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}

        headers = [
            (k, v)
            for k, v in scope.get("headers", [])
            if k.lower() not in (b"content-length", b"transfer-encoding")
        ]
        headers.append((b"content-length", str(len(raw)).encode()))
        return replay, {**scope, "headers": headers}

    def _filtering(self, limits: Limits, call: Plan, send: Send, request_id: str) -> Send:
        start: Message | None = None
        chunks: list[bytes] = []

        async def filtered(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if message["type"] != "http.response.body" or start is None:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            status = start["status"]
            raw = b"".join(chunks)
            if status >= 300:
                await send(start)
                await send({"type": "http.response.body", "body": raw, "more_body": False})
                return
            try:
                reply = self.checked_reply(limits, call, msgspec.json.decode(raw))
            except msgspec.DecodeError:
                await _answer(
                    send, 502, "the service's reply could not be checked against the key's limits", request_id
                )
                return
            if reply is None:
                await _answer(send, 404, NOT_FOUND, request_id)
                return
            body = msgspec.json.encode(reply)
            headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
            headers.append((b"content-length", str(len(body)).encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body, "more_body": False})

        return filtered

    async def websocket(
        self, limits: Limits, module: str, scope: Scope, receive: Receive, send: Send, forward: Forward
    ) -> None:
        """The table stream: its first message is a submit body, checked like `/pipeline/submit`; the
        task ids it reports become the key's."""
        method = "GET"
        request_id = request_id_from(scope.get("headers", []))
        try:
            call = await self.prepare(limits, module, method, scope["path"], {}, request_id)
        except Denied as denied:
            audit.record(
                "refused",
                str(denied.status),
                key=limits.key,
                route=scope["path"],
                method="WEBSOCKET",
                reason=denied.message,
            )
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1008, "reason": denied.message[:120]})
            return
        checked = call.body is None
        refused = False

        async def client() -> Message:
            nonlocal checked, refused
            message = await receive()
            if checked or message["type"] != "websocket.receive":
                return message
            checked = True
            try:
                body = msgspec.json.decode(message.get("text") or message.get("bytes") or b"")
                assert call.body is not None
                call.body(body)
            except (Denied, msgspec.DecodeError) as exc:
                reason = exc.message if isinstance(exc, Denied) else f"invalid submit message: {exc}"
                audit.record(
                    "refused", "403", key=limits.key, route=scope["path"], method="WEBSOCKET", reason=reason
                )
                refused = True
                await send(
                    {"type": "websocket.send", "text": json.dumps({"type": "error", "message": reason})}
                )
                await send({"type": "websocket.close", "code": 1008, "reason": reason[:120]})
                return {"type": "websocket.disconnect", "code": 1008}
            return message

        async def upstream(message: Message) -> None:
            if refused and message["type"] in ("websocket.send", "websocket.close"):
                return
            await send(message)

        await forward(with_caller(scope, limits.key) if call.caller else scope, client, upstream)


def with_caller(scope: Scope, key: str | None) -> Scope:
    """The request without a caller header of the client's own, with the key's when `key` is named."""
    given = scope.get("headers", [])
    if key is None and not any(k.lower() == CALLER for k, _ in given):
        return scope  # the usual case: nothing to take out
    headers = [(k, v) for k, v in given if k.lower() != CALLER]
    if key is not None:
        headers.append((CALLER, key.encode()))
    return {**scope, "headers": headers}


async def _answer(send: Send, status: int, message: str, request_id: str) -> None:
    payload = json.dumps(error_body(status, message)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                (REQUEST_ID_HEADER.encode(), request_id.encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload, "more_body": False})
