"""What gen reads from docdb: retrieved passages, and the error when docdb cannot answer."""

from __future__ import annotations

import msgspec

from lore_core.errors import LoreError


class DocdbUnavailable(LoreError):
    """docdb could not be reached or answered with an error: gen cannot ground in a KB right now."""

    status_code = 503


class Passage(msgspec.Struct, frozen=True):
    content: str
    score: float
    source: str
    dataset: str = ""
