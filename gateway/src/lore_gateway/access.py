"""Who may call what: API keys with scopes, module limits, resource limits and rate limits.

A key is known by its SHA-256 only (config or key file); a plain-string key in `gateway.api_keys` is the
older form, hashed at start and given every right. Scopes nest: `admin` ⊃ `write` ⊃ `read`. A route
needs `read` when it only reads (GET, and the POSTs that ask: chat, retrieve, memory search, kb query),
`admin` for deletes and configuration reloads, `write` otherwise. Rate limits are a token bucket per key
and per gateway replica. Resource limits (knowledge bases, datasets, memories) are `Limits`, applied by
`lore_gateway.guard` on every route.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import yaml

from lore_core import audit
from lore_core.settings import ApiKey, GatewayConfig
from lore_gateway.guard import Limits

SCOPES = ("read", "write", "admin")
# POSTs that only read: a key with `read` may ask questions.
READING_POSTS = {
    "/api/v1/docdb/chat",
    "/api/v1/docdb/retrieve",
    "/api/v1/mem/vg/search",
    "/api/v1/mem/kb/query",
    "/v1/chat/completions",  # the OpenAI-compatible chat (openai_api.py)
}


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def needed_scope(method: str, path: str) -> str:
    path = path.rstrip("/")
    if method == "DELETE" or path.endswith("/config/reload"):
        return "admin"
    if method in ("GET", "HEAD", "OPTIONS") or (method == "POST" and path in READING_POSTS):
        return "read"
    return "write"


@dataclass
class Bucket:
    """A token bucket: `rate` tokens a second, at most `burst` saved up."""

    rate: float
    burst: float
    tokens: float = 0.0
    updated: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.tokens = self.burst

    def take(self) -> float:
        """0 when a request may pass now, else the seconds until one may."""
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / self.rate


@dataclass
class Grant:
    name: str
    scope: str
    modules: frozenset[str]  # empty: every module
    bucket: Bucket | None
    limits: Limits = field(default_factory=lambda: Limits(""))
    rate_per_second: float | None = None

    def allows(self, scope: str) -> bool:
        return SCOPES.index(self.scope) >= SCOPES.index(scope)


@dataclass
class Refusal:
    status: int
    detail: str
    retry_after: int | None = None


class Access:
    def __init__(self, config: GatewayConfig) -> None:
        entries: list[str | ApiKey] = [*config.api_keys]
        if config.api_keys_file:
            entries += load_key_file(Path(config.api_keys_file))
        self.grants: dict[str, Grant] = {}
        for number, entry in enumerate(entries, 1):
            if isinstance(entry, str):
                if entry:
                    name = f"key {number}"
                    self.grants[key_hash(entry)] = Grant(name, "admin", frozenset(), None, Limits(name))
                continue
            bucket = None
            if entry.rate_per_second:
                burst = entry.burst or max(1, math.ceil(entry.rate_per_second))
                bucket = Bucket(entry.rate_per_second, burst)
            scope = max(entry.scopes, key=SCOPES.index) if entry.scopes else "read"
            limits = Limits(entry.name, tuple(entry.knowledge_bases), tuple(entry.datasets), entry.memory)
            self.grants[entry.key_sha256.lower()] = Grant(
                entry.name, scope, frozenset(entry.modules), bucket, limits, entry.rate_per_second
            )
        if self.grants:
            limited = sorted(g.name for g in self.grants.values() if g.limits.limited)
            audit.record(
                "keys_loaded", "ok", keys=sorted(g.name for g in self.grants.values()), limited=limited
            )

    @property
    def enabled(self) -> bool:
        return bool(self.grants)

    def grant(self, token: str) -> Grant | None:
        """The grant of a key (None for an unknown key)."""
        return self.grants.get(key_hash(token)) if token else None

    def admit(self, token: str, module: str | None, method: str, path: str) -> Refusal | None:
        """None when the request may go on; else why not. `module` None: a route that reaches every
        module (`/mcp`)."""
        return self.check(token, module, method, path)[1]

    def check(
        self, token: str, module: str | None, method: str, path: str
    ) -> tuple[Grant | None, Refusal | None]:
        """The key's grant, and why the request may not go on (None when it may); a refusal is audited."""
        grant = self.grant(token)
        refusal = self._admit(grant, module, method, path)
        if refusal is not None:
            audit.record(
                "refused",
                str(refusal.status),
                key=grant.name if grant else None,
                route=path,
                method=method,
                reason=refusal.detail,
            )
        return grant, refusal

    def _admit(self, grant: Grant | None, module: str | None, method: str, path: str) -> Refusal | None:
        if grant is None:
            return Refusal(401, "missing or wrong API key: send `Authorization: Bearer <key>`")
        scope = "write" if module is None else needed_scope(method, path)
        if not grant.allows(scope):
            return Refusal(
                403, f"API key {grant.name!r} has scope {grant.scope!r}; {method} {path} needs {scope!r}"
            )
        if grant.modules and (module is None or module not in grant.modules):
            allowed = ", ".join(sorted(grant.modules))
            target = f"the {module} module" if module else "every module (it calls them all)"
            return Refusal(403, f"API key {grant.name!r} is limited to {allowed}; {path} needs {target}")
        if grant.bucket is not None:
            wait = grant.bucket.take()
            if wait > 0:
                return Refusal(
                    429,
                    f"API key {grant.name!r} is over its limit of {grant.bucket.rate:g} requests a second",
                    retry_after=max(1, math.ceil(wait)),
                )
        return None


def load_key_file(path: Path) -> list[str | ApiKey]:
    """A YAML (or JSON) list of keys in the config's form; read at start."""
    try:
        raw = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ValueError(f"gateway.api_keys_file {path}: {exc.strerror}") from exc
    try:
        return msgspec.convert(raw or [], list[str | ApiKey])
    except msgspec.ValidationError as exc:
        raise ValueError(f"gateway.api_keys_file {path}: {exc}") from exc


if __name__ == "__main__":  # python -m lore_gateway.access <key>: the key_sha256 to put in the config
    import sys

    if len(sys.argv) != 2:
        sys.exit("usage: python -m lore_gateway.access <key>")
    print(key_hash(sys.argv[1]))
