"""Wire and model-reply structures of tag trees."""

from __future__ import annotations

from typing import Literal

import msgspec


class GenerateRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    topic: str
    mode: Literal["kb", "pure_llm"]
    kb_name: str | None = None


class NodeReply(msgspec.Struct, kw_only=True):
    """A node as a model writes it; `category` is computed from the ancestors, never trusted."""

    node_name: str
    description: str = ""
    children: list[NodeReply] = []


class TreeReply(msgspec.Struct, kw_only=True):
    nodes: list[NodeReply]
    description: str = ""
