"""The gateway's own replies (`/`, `/health`, `/livez`, the merged OpenAPI document, the console's
labels) as msgspec Structs."""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType


class ServiceInfo(msgspec.Struct, kw_only=True):
    name: str
    version: str


class Liveness(msgspec.Struct, kw_only=True):
    status: str
    service: str


class GatewayHealth(msgspec.Struct, kw_only=True, omit_defaults=True):
    """`/health`: the gateway's status and each module's; `failing` and `detail` only when one is down.

    A module's entry is its replica's probe (`status`, `url`, then `latency_ms` and `checks`, or
    `error`), or with several replicas `{status, url, replicas, latency_ms?, checks?}`.
    """

    status: str
    version: str
    gateway: dict[str, str]
    services: dict[str, dict[str, Any]]
    failing: list[str] | UnsetType = UNSET
    detail: str | UnsetType = UNSET


class ConsoleLabels(msgspec.Struct, kw_only=True):
    """`/console/labels.json`: the language of the labels people read (`display.language`) and the label
    of each entity type value."""

    language: str
    types: dict[str, str]


class OpenApiDocument(msgspec.Struct, kw_only=True):
    """The three services' OpenAPI documents merged into one (their `/api/` paths and schemas)."""

    openapi: str
    info: dict[str, Any]
    paths: dict[str, Any]
    components: dict[str, Any]


class MemoryScopeLimits(msgspec.Struct, kw_only=True):
    """The memories a key may touch: a pattern or fixed value per id (null: any), whether it reaches
    the knowledge-graph memory, and which of its workspaces (a pattern, or the one it is given)."""

    user_id: str | None
    agent_id: str | None
    run_id: str | None
    kb: bool
    workspace: str | None = None  # null when `kb` is false


class KeySelf(msgspec.Struct, kw_only=True):
    """`GET /api/v1/keys/self`: the calling key's name and limits (never the key). Without keys
    configured, `auth` is false and everything is open. Empty `modules`, `knowledge_bases`, `datasets`
    and a null `memory` mean no limit of that kind."""

    success: bool = True
    auth: bool
    name: str | None
    scope: str
    modules: list[str]
    knowledge_bases: list[str]
    datasets: list[str]
    memory: MemoryScopeLimits | None
    rate_per_second: float | None
