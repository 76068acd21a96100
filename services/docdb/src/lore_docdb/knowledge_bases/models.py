"""Wire shapes of the knowledge-bases domain (contract 2.5, 4.4)."""

from __future__ import annotations

from typing import Annotated

import msgspec

from lore_core.naming import NAME_MAX, NAME_PATTERN


class CreateKnowledgeBase(msgspec.Struct, forbid_unknown_fields=True):
    name: Annotated[str, msgspec.Meta(pattern=NAME_PATTERN, max_length=NAME_MAX, min_length=1)]


class ParseRequest(msgspec.Struct, forbid_unknown_fields=True):
    datasets: Annotated[list[str], msgspec.Meta(min_length=1)]
    mode: int = 0
    schema_name: str | None = None
    force: bool = False
