"""A file's identity in a dataset: its path (subfolders allowed) and its content hash.

A dataset keeps its files in one flat folder (or one flat object prefix), so a path with subfolders is
stored under a flat name that can never collide: `%` is written `%25`, then `/` is written `%2F`
(`guide/README.md` is stored as `guide%2FREADME.md`, `50%.txt` as `50%25.txt`). Two different paths
always give two different names, and the path is read back from the name. A file uploaded by name
(the contract's upload) has the path of its name.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from lore_core.errors import BadRequest
from lore_core.naming import FILENAME_MAX, safe_filename

MAX_DEPTH = 32
_ESCAPED = re.compile(r"%(25|2[Ff])")
HASH_BUFFER = 1024 * 1024


def flatten(path: str) -> str:
    """The stored name of a dataset path, or a 400 saying what is wrong with the path."""
    parts = path.strip("/").split("/")
    if len(parts) > MAX_DEPTH:
        raise BadRequest(f"invalid path {path[:80]!r}: more than {MAX_DEPTH} folders deep")
    for part in parts:
        try:
            safe_filename(part)
        except BadRequest as exc:
            raise BadRequest(
                f"invalid path {path[:80]!r}: the part {part[:80]!r} is refused ({exc})"
            ) from exc
    name = "%2F".join(part.replace("%", "%25") for part in parts)
    if len(name.encode("utf-8")) > FILENAME_MAX:
        raise BadRequest(
            f"invalid path {path[:80]!r}: its stored name would be longer than {FILENAME_MAX} bytes"
        )
    return safe_filename(name)


def path_of(name: str) -> str:
    """The dataset path a stored name stands for (the inverse of `flatten`)."""
    if "%" not in name:
        return name  # most names: every passage of a chat's answer asks
    return _ESCAPED.sub(lambda m: "%" if m.group(1) == "25" else "/", name)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(HASH_BUFFER):
            digest.update(block)
    return digest.hexdigest()
