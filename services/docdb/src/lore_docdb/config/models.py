"""Wire shapes of the config routes: the merged configuration is free-form, as the files are."""

from __future__ import annotations

from typing import Any

from lore_docdb.envelope import Success


class ConfigReply(Success, kw_only=True):
    """A configuration (or one section of it) with secrets masked; its keys are the files' keys."""

    message: str
    data: Any
