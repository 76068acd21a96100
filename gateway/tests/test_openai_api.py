"""How the OpenAI-compatible chat reads a conversation and a model name (the routes themselves are
exercised with the openai SDK in tests/e2e/test_streaming_and_telemetry.py)."""

from __future__ import annotations

import pytest

from lore_gateway.openai_api import (
    QUERY_CHARS,
    ChatMessage,
    OpenAiError,
    Target,
    docdb_sources,
    parse_model,
    question_with_history,
    sources_text,
)


def test_earlier_turns_travel_with_the_question_without_their_sources_lists() -> None:
    messages = [
        ChatMessage(role="system", content="Be terse."),
        ChatMessage(role="user", content="Who developed the first compiler?"),
        ChatMessage(role="assistant", content="Grace Hopper [1].\n\nSources:\n[1] facts.txt (facts)"),
        ChatMessage(role="user", content=[{"type": "text", "text": "What did she design later?"}]),
    ]
    assert question_with_history(messages) == (
        "Conversation so far:\n"
        "user: Who developed the first compiler?\n"
        "assistant: Grace Hopper [1].\n\n"
        "Question: What did she design later?"
    )
    assert question_with_history(messages[-1:]) == "What did she design later?"


def test_a_long_conversation_keeps_its_latest_turns_within_the_query_limit() -> None:
    turns = [
        ChatMessage(role="user" if i % 2 == 0 else "assistant", content=f"turn {i} " * 80) for i in range(40)
    ]
    query = question_with_history([*turns, ChatMessage(role="user", content="and now?")])
    assert len(query) <= QUERY_CHARS and query.endswith("Question: and now?")
    assert "turn 39" in query and "turn 0 " not in query


def test_a_conversation_must_end_with_a_users_question() -> None:
    for messages in (
        [],
        [ChatMessage(role="user", content="  ")],
        [ChatMessage(role="assistant", content="hi")],
    ):
        with pytest.raises(OpenAiError, match="non-empty user message"):
            question_with_history(messages)


def test_the_model_name_picks_the_knowledge_base_and_its_mode() -> None:
    assert parse_model("facts", None) == Target("docdb", "facts", "naive")
    assert parse_model("facts:rerank", None) == Target("docdb", "facts", "rerank")
    assert parse_model("facts:rerank", "multihop") == Target("docdb", "facts", "multihop")
    assert parse_model("mem:kb", None) == Target("mem", "", "hybrid")
    assert parse_model("mem:kb:local", None) == Target("mem", "", "local")
    with pytest.raises(OpenAiError, match="not one of naive, rerank"):
        parse_model("facts:sideways", None)


def test_docdb_sources_name_the_cited_page_and_sections() -> None:
    sources = docdb_sources(
        [
            {
                "index": 1,
                "source_file": "guide.pdf",
                "dataset": "docs",
                "file_url": None,
                "page": 4,
                "page_end": 5,
                "heading_path": ["Guide", "Install"],
            },
            {
                "index": 2,
                "source_file": "notes.md",
                "dataset": "docs",
                "file_url": None,
                "page": None,
                "heading_path": [],
            },
        ]
    )
    assert (sources[0].page, sources[0].page_end, sources[0].heading_path) == (4, 5, ["Guide", "Install"])
    assert sources_text(sources) == "\n\nSources:\n[1] guide.pdf (docs), pp. 4-5\n[2] notes.md (docs)"
