"""Wire and model-reply structures of tag trees."""

from __future__ import annotations

from typing import Literal

import msgspec
from litestar.datastructures import UploadFile

from lore_core.bounds import QueryText
from lore_core.naming import NameRef


class GenerateRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    topic: QueryText
    mode: Literal["kb", "pure_llm"]
    kb_name: NameRef | None = None


class SpreadsheetForm(msgspec.Struct, kw_only=True):
    """The multipart fields of the legacy spreadsheet submit (`file` is checked by the route, so that a
    missing one gets a 400 that names the field)."""

    file: UploadFile | None = None
    tree_name: str = "tag_tree"
    tree_description: str = ""
    sheet_name: str = "0"  # a sheet name or a zero-based index


class TreeBuilt(msgspec.Struct, kw_only=True):
    """The answer to a spreadsheet submit: the tree is built during the request."""

    task_id: str
    status: str
    node_count: int


class NodeReply(msgspec.Struct, kw_only=True):
    """A node as a model writes it; `category` is computed from the ancestors, never trusted."""

    node_name: str
    description: str = ""
    children: list[NodeReply] = []


class TreeReply(msgspec.Struct, kw_only=True):
    nodes: list[NodeReply]
    description: str = ""
