"""Durable local writes: a file is on disk whole or not at all."""

from __future__ import annotations

import os
import uuid
from pathlib import Path


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to a hidden temp file beside `path`, fsync it, then rename it over `path`.

    A crash leaves the old file or the new one, never half of either; a leftover `.<name>.<hex>.tmp`
    is swept by the store that owns the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    with open(temp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)


def fsync_path(path: Path) -> None:
    """Flush a file someone else wrote (in place, by offset) to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
