"""Scripted behaviour for the fake model server (`--responder lore_common.testing.responders:NAME`)."""

from __future__ import annotations

import json
from typing import Any

from lore_common.providers.offline import extract_entities


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            return str(message.get("content", ""))
    return ""


def entities(body: dict[str, Any]) -> str:
    """Realistic entity-extraction replies: the offline extractor's findings for the user's text."""
    return json.dumps(extract_entities(_last_user_text(body)), ensure_ascii=False)
