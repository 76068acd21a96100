"""The limits of the API's inputs, one definition each, so that every route states the same range in
its OpenAPI document and answers a value outside it with a 4xx naming the field and the range."""

from __future__ import annotations

from typing import Annotated

import msgspec
from litestar.params import QueryParameter

MAX_RESULTS = 1000
# A question or a search, the same everywhere (docdb chat and retrieve, mem kb query and vg search, gen's
# questions and topics): the API contract fixes chat's at 4,096 characters, so every query has that one.
QUERY_CHARS = 4096
TEXT_CHARS = 1_000_000  # a message or a memory's text
MESSAGES = 1000  # messages in one vg add
ID_CHARS = 255  # user, agent and run ids
JSON_BODY_LIMIT = 10_000_000  # a JSON body's bytes; routes that take files set their own limit

Limit = Annotated[int, msgspec.Meta(ge=1, le=MAX_RESULTS, description=f"1–{MAX_RESULTS}")]
TopK = Annotated[
    int, msgspec.Meta(ge=1, le=MAX_RESULTS, description=f"candidates retrieved, 1–{MAX_RESULTS}")
]
Score = Annotated[float, msgspec.Meta(ge=0.0, le=1.0, description="0–1")]
QueryText = Annotated[
    str, msgspec.Meta(max_length=QUERY_CHARS, description=f"at most {QUERY_CHARS:,} characters")
]
# chat's query, read by hand (a bad body is answered with HTTP 200 and code 400): also non-empty.
ChatQueryText = Annotated[
    str,
    msgspec.Meta(
        min_length=1, max_length=QUERY_CHARS, description=f"non-empty, at most {QUERY_CHARS:,} characters"
    ),
]
LongText = Annotated[str, msgspec.Meta(max_length=TEXT_CHARS, description=f"at most {TEXT_CHARS} characters")]
ScopeId = Annotated[str, msgspec.Meta(min_length=1, max_length=ID_CHARS)]
Workers = Annotated[int, msgspec.Meta(ge=1, le=64, description="1–64")]

# The same for query parameters (Litestar checks them; the OpenAPI documents show the range).
LimitParam = Annotated[int, QueryParameter(ge=1, le=MAX_RESULTS, description=f"1–{MAX_RESULTS}")]
OVERVIEW_MAX = 500
OverviewCount = Annotated[int, QueryParameter(ge=0, le=OVERVIEW_MAX, description=f"0–{OVERVIEW_MAX}")]
GRAPH_PAGE_MAX = 2000
GraphPage = Annotated[int, QueryParameter(ge=1, le=GRAPH_PAGE_MAX, description=f"1–{GRAPH_PAGE_MAX}")]
Offset = Annotated[int, QueryParameter(ge=0, le=10_000_000, description="0–10,000,000")]
