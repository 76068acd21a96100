"""Wire shapes of chunked uploads (contract 2.4, 4.3)."""

from __future__ import annotations

from typing import Annotated

import msgspec


class InitUpload(msgspec.Struct, forbid_unknown_fields=True):
    filename: Annotated[str, msgspec.Meta(min_length=1, max_length=255)]
    total_chunks: Annotated[int, msgspec.Meta(ge=1, le=10000)]
    total_size: Annotated[int, msgspec.Meta(ge=1)]
