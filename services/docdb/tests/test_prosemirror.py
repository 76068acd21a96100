"""Rich-text documents saved as ProseMirror's JSON tree are read as documents: a Box Note
(`.boxnote`, refused as unsupported before) and an editor's or Atlassian's `.json` export give their
headings, lists, tables and code, not `content[0].content[1].text: …` lines."""

from __future__ import annotations

import json
from pathlib import Path

from lore_docdb.parse.extract import extract_text

DATA = Path(__file__).parent / "data"


def test_a_box_note_gives_headings_nested_and_checked_lists_a_table_and_code() -> None:
    text = extract_text(DATA / "sample.boxnote")
    assert text.split("\n\n") == [
        "# Release notes",
        "We shipped a new parser. See the docs for details.",  # marks dropped, the words kept
        "## Highlights",
        "- Faster conversion\n- Fewer allocations\n  - Nested detail",
        "1. First step\n2. Second step",
        "- [x] Write tests\n- [ ] Ship it",
        "Old caveat",
        '```python\nprint("hello")\n```',
        "| Name | Value |\n|---|---|\n| alpha | 1 primary |",
        "Architecture diagram",  # a picture is its alternative text
    ]


def test_an_atlassian_document_in_camel_case_reads_the_same_way(tmp_path: Path) -> None:
    """Confluence's and Jira's document format: `bulletList`, `taskItem` with a `state`, panels,
    mentions, an ordered list that starts at 3."""

    def text(value: str) -> dict[str, object]:
        return {"type": "text", "text": value}

    def paragraph(*parts: dict[str, object]) -> dict[str, object]:
        return {"type": "paragraph", "content": list(parts)}

    def cell(kind: str, value: str) -> dict[str, object]:
        return {"type": kind, "content": [paragraph(text(value))]}

    doc = {
        "version": 1,
        "type": "doc",
        "content": [
            {"type": "heading", "attrs": {"level": 2}, "content": [text("Runbook")]},
            {
                "type": "panel",
                "attrs": {"panelType": "warning"},
                "content": [
                    paragraph(text("Page "), {"type": "mention", "attrs": {"text": "@Ana"}}, text(" first."))
                ],
            },
            {
                "type": "orderedList",
                "attrs": {"order": 3},
                "content": [
                    {"type": "listItem", "content": [paragraph(text("Drain the queue"))]},
                    {
                        "type": "listItem",
                        "content": [paragraph(text("Restart"), {"type": "hardBreak"}, text("the node"))],
                    },
                ],
            },
            {
                "type": "taskList",
                "content": [
                    {"type": "taskItem", "attrs": {"state": "DONE"}, "content": [text("Notify support")]},
                    {"type": "taskItem", "attrs": {"state": "TODO"}, "content": [text("Write the report")]},
                ],
            },
            {
                "type": "table",
                "content": [
                    {
                        "type": "tableRow",
                        "content": [cell("tableHeader", "Host"), cell("tableHeader", "Role")],
                    },
                    {
                        "type": "tableRow",
                        "content": [cell("tableCell", "db-1"), cell("tableCell", "primary")],
                    },
                ],
            },
        ],
    }
    path = tmp_path / "runbook.json"
    path.write_text(json.dumps(doc))
    assert extract_text(path).split("\n\n") == [
        "## Runbook",
        "Page @Ana first.",
        "3. Drain the queue\n4. Restart the node",
        "- [x] Notify support\n- [ ] Write the report",
        "| Host | Role |\n|---|---|\n| db-1 | primary |",
    ]


def test_json_that_is_not_a_document_keeps_its_keys(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"type": "doc", "content": "not a list", "owner": "ops"}))
    assert extract_text(path) == "type: doc\ncontent: not a list\nowner: ops"
