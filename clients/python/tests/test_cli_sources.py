"""`lore chat` lists its sources with the page of a PDF passage."""

from __future__ import annotations

from lore_client.cli import knowledge


def test_sources_name_the_cited_pages() -> None:
    with knowledge.console.capture() as captured:
        knowledge._print_sources(
            [
                {"index": 1, "source_file": "guide.pdf", "dataset": "docs", "page": 4, "page_end": 4},
                {"index": 2, "source_file": "guide.pdf", "dataset": "docs", "page": 6, "page_end": 7},
                {"index": 3, "source_file": "notes.md", "dataset": "docs", "page": None},
            ]
        )
    lines = captured.get().splitlines()
    assert lines[-3:] == [
        "  [1] guide.pdf, p. 4 (dataset docs)",
        "  [2] guide.pdf, pp. 6-7 (dataset docs)",
        "  [3] notes.md (dataset docs)",
    ]
