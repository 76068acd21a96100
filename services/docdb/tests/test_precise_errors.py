"""Errors a new user meets first say exactly what is wrong, in the one error shape of every module."""

from __future__ import annotations

from typing import Any

import pytest

DS = "/api/v1/docdb/files/raw-files/datasets"
CHAT = "/api/v1/docdb/chat"
RETRIEVE = "/api/v1/docdb/retrieve"
Client = Any


async def test_a_blank_filename_is_named_as_such_not_as_no_files(docdb: Client) -> None:
    assert (await docdb.post(DS, json={"name": "reports"})).status_code == 200
    r = await docdb.post(f"{DS}/reports/files", files={"files": ("", b"alpha")})
    assert r.status_code == 400
    assert r.json()["success"] is False and "blank filename" in r.json()["message"]
    assert "no files" not in r.json()["message"]


@pytest.mark.parametrize(
    ("query", "says"),
    [(123, "query must be a string, not a number"), (None, "query is missing"), ("  ", "query is empty")],
)
async def test_chat_says_whether_the_query_is_missing_mistyped_or_blank(
    docdb: Client, query: Any, says: str
) -> None:
    r = await docdb.post(CHAT, json={"query": query, "kb_id": "x", "user_id": "u"})
    assert r.status_code == 200 and r.json()["code"] == 400
    assert r.json()["message"].startswith(says)


async def test_retrieve_reports_a_number_as_query_as_a_type_error(docdb: Client) -> None:
    r = await docdb.post(RETRIEVE, json={"query": 123, "kb_id": "x"})
    assert r.status_code == 400
    assert r.json()["message"] == "query must be a string, not an integer"
    assert r.json()["detail"] == [{"field": "query", "message": "Expected `str`, got `int`"}]
