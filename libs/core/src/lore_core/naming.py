"""Names that reach the filesystem or another service: dataset and KB names, safe filenames."""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated

import msgspec

from lore_core.errors import BadRequest

NAME_PATTERN = r"^[A-Za-z0-9_\-]+$"
NAME_MAX = 64
FILENAME_MAX = 255
_NAME = re.compile(NAME_PATTERN)
# A dataset or KB name in a request body (the contract's naming rule).
Name = Annotated[str, msgspec.Meta(pattern=NAME_PATTERN, max_length=NAME_MAX, min_length=1)]
# A name that the service checks itself with `check_name`, for its clearer message; its length is bounded
# here so that the OpenAPI documents show it.
NameRef = Annotated[str, msgspec.Meta(max_length=NAME_MAX)]


def check_name(kind: str, value: str) -> str:
    """A dataset or KB name: `^[A-Za-z0-9_\\-]+$`, at most 64 characters."""
    if not value or len(value) > NAME_MAX or not _NAME.match(value):
        raise BadRequest(
            f"invalid {kind} name {value[:80]!r}: use 1-{NAME_MAX} characters from A-Z, a-z, 0-9, '_' and '-'"
        )
    return value


def safe_filename(value: str) -> str:
    """The filename a user gave, normalised (NFC), or a 400 saying why it cannot stay inside its dataset."""
    name = unicodedata.normalize("NFC", value or "")
    reason = None
    if not name.strip():
        reason = "it is empty"
    elif len(name) > FILENAME_MAX or len(name.encode("utf-8")) > FILENAME_MAX:
        reason = f"it is longer than {FILENAME_MAX} characters"
    elif "/" in name or "\\" in name:
        reason = "it contains a path separator"
    elif name in (".", "..") or ".." in name.split("."):
        reason = "it contains '..'"
    elif name.startswith("."):
        reason = "it starts with a dot (hidden files are reserved)"
    elif any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in name):
        reason = "it contains control characters"
    elif name != name.strip():
        reason = "it starts or ends with whitespace"
    if reason:
        raise BadRequest(f"invalid filename {value[:80]!r}: {reason}")
    return name
