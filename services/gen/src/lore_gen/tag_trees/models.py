"""Wire and model-reply structures of tag trees."""

from __future__ import annotations

from typing import Literal

import msgspec

from lore_core.bounds import QueryText
from lore_core.naming import NameRef


class GenerateRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    topic: QueryText
    mode: Literal["kb", "pure_llm"]
    kb_name: NameRef | None = None


class NodeReply(msgspec.Struct, kw_only=True):
    """A node as a model writes it; `category` is computed from the ancestors, never trusted."""

    node_name: str
    description: str = ""
    children: list[NodeReply] = []


class TreeReply(msgspec.Struct, kw_only=True):
    nodes: list[NodeReply]
    description: str = ""
