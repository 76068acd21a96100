"""vg search and time: a conversation added with its `timestamp` is remembered as said then, and a
question that names a time ("last week", "in May 2023", "上个月") finds what was said then first."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from lore_common.testing.asgi import AppClient
from lore_mem.vg.service import fuse
from lore_mem.vg.when import find_span

NOW = datetime(2026, 11, 24, 15, 0, tzinfo=UTC)  # a Tuesday


@pytest.mark.parametrize(
    ("question", "start", "end", "phrase"),
    [
        ("What setback did Melanie face in October 2023?", "2023-10-01", "2023-11-01", "October 2023"),
        ("What did she show me on October 13, 2023?", "2023-10-13", "2023-10-14", "October 13, 2023"),
        ("Where did we go on 8 May, 2023?", "2023-05-08", "2023-05-09", "8 May, 2023"),
        ("notes from 2023-05-08", "2023-05-08", "2023-05-09", "2023-05-08"),
        ("What did I eat last week?", "2026-11-16", "2026-11-23", "last week"),
        ("what happened yesterday", "2026-11-23", "2026-11-24", "yesterday"),
        ("Which book did I read two weeks ago?", "2026-11-09", "2026-11-16", "two weeks ago"),
        ("what did I do in the past 3 days", "2026-11-21", "2026-11-25", "in the past 3 days"),
        ("what changed since March?", "2026-03-01", "2026-11-25", "since March"),
        ("gifts I bought in December", "2025-12-01", "2026-01-01", "in December"),
        ("Who called on Friday?", "2026-11-20", "2026-11-21", "on Friday"),
        ("我上个月去了哪里", "2026-10-01", "2026-11-01", "上个月"),
        ("2023年5月我做了什么", "2023-05-01", "2023-06-01", "2023年5月"),
        ("上周三我见了谁", "2026-11-18", "2026-11-19", "上周三"),
        ("三天前吃了什么", "2026-11-21", "2026-11-22", "三天前"),
    ],
)
def test_the_time_a_question_names_is_read_as_a_span(
    question: str, start: str, end: str, phrase: str
) -> None:
    span = find_span(question, NOW)
    assert span is not None
    assert (span.start.date().isoformat(), span.end.date().isoformat(), span.phrase) == (start, end, phrase)


@pytest.mark.parametrize(
    "question",
    [
        "May I ask what my cat is called?",
        "This may be silly: where do I live?",
        "What is my second favourite movie?",
        "I exported a list of 2000 rows, which one was wrong?",
        "When did Melanie paint a sunrise?",
        "What am I doing on 3 May 2027?",  # the future: no memory is from then
    ],
)
def test_a_question_without_a_past_time_names_no_span(question: str) -> None:
    assert find_span(question, NOW) is None


def memory(i: int, text: str, said: str) -> tuple[dict[str, Any], float]:
    return {"id": f"m{i}", "memory": text, "created_at": said}, round(0.9 - i * 0.01, 2)


def test_what_was_said_in_the_named_week_comes_first_and_the_rest_keeps_its_order() -> None:
    hits = [
        memory(0, "I ate pizza with the team", "2026-10-30T12:00:00+00:00"),
        memory(1, "I go running every week", "2026-10-02T08:00:00+00:00"),
        memory(2, "We ate sushi at Nobu", "2026-11-18T20:00:00+00:00"),
        memory(3, "Went hiking in the hills", "2026-11-21T09:00:00+00:00"),
        memory(4, "Bought a lamp", "2026-09-01T09:00:00+00:00"),
    ]
    top = [record["memory"] for record, _ in fuse("What did I eat last week?", hits, 5, now=NOW)]
    # Last week's two memories first (the one about eating leads), then the others by meaning and
    # words: "week" in the question is a time, not a word to match, so the running memory does not
    # rise for it.
    assert top == [
        "We ate sushi at Nobu",
        "Went hiking in the hills",
        "I ate pizza with the team",
        "I go running every week",
        "Bought a lamp",
    ]


def test_a_time_no_memory_was_said_in_changes_nothing() -> None:
    hits = [memory(i, f"memory number {i}", "2026-11-24T09:00:00+00:00") for i in range(4)]
    assert fuse("what did I do in May 2023?", hits, 4, now=NOW) == hits


async def add(mem: AppClient, text: str, timestamp: object, **extra: Any) -> dict[str, Any]:
    reply = await mem.post(
        "/api/v1/mem/vg/add",
        json={
            "messages": [{"role": "user", "content": text}],
            "user_id": "dated",
            "timestamp": timestamp,
            **extra,
        },
    )
    assert reply.status_code == 200, reply.text
    result: dict[str, Any] = reply.json()
    return result


async def test_memories_take_the_conversations_time_and_questions_about_a_month_find_it(
    mem: AppClient,
) -> None:
    await add(mem, "I adopted a puppy called Biscuit", "2023-05-08T13:56:00Z", infer=False)
    await add(mem, "I adopted a new routine of yoga", 1690000000, infer=False)  # 22 July 2023
    for n in range(12):
        await add(mem, f"I adopted habit number {n}", f"2023-0{1 + n % 3}-1{n % 9}T10:00:00", infer=False)

    listed = (await mem.get("/api/v1/mem/vg", params={"user_id": "dated"})).json()["results"]
    by_text = {r["memory"]: r["created_at"] for r in listed}
    assert by_text["I adopted a puppy called Biscuit"] == "2023-05-08T13:56:00+00:00"
    assert by_text["I adopted a new routine of yoga"] == "2023-07-22T04:26:40+00:00"
    assert [r["created_at"] for r in listed] == sorted(by_text.values())  # listed in the order said

    for question, expected in (
        ("What did I adopt in May 2023?", "I adopted a puppy called Biscuit"),
        ("What did I adopt in July 2023?", "I adopted a new routine of yoga"),
    ):
        found = (
            await mem.post("/api/v1/mem/vg/search", json={"query": question, "user_id": "dated", "limit": 3})
        ).json()["results"]
        assert found[0]["memory"] == expected, (question, found)


async def test_facts_the_model_extracts_are_dated_too(mem: AppClient) -> None:
    result = await add(
        mem, "I moved to Lisbon last spring. My sister Ana lives in Porto.", "2024-03-02T09:00:00+01:00"
    )
    assert result["results"], result
    for item in result["results"]:
        stored = (await mem.get(f"/api/v1/mem/vg/{item['id']}")).json()
        assert stored["created_at"] == "2024-03-02T08:00:00+00:00"


@pytest.mark.parametrize(
    ("timestamp", "says"),
    [("last tuesday", "ISO 8601"), ("2999-01-01T00:00:00Z", "in the future"), (1e300, "out of range")],
)
async def test_an_unreadable_or_future_timestamp_is_a_400_that_says_what_to_send(
    mem: AppClient, timestamp: object, says: str
) -> None:
    reply = await mem.post(
        "/api/v1/mem/vg/add",
        json={
            "messages": [{"role": "user", "content": "I like tea"}],
            "user_id": "x",
            "timestamp": timestamp,
        },
    )
    assert reply.status_code == 400
    assert says in reply.json()["message"]
    listed = (await mem.get("/api/v1/mem/vg", params={"user_id": "x"})).json()["results"]
    assert listed == []  # nothing stored
