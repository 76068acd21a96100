"""`lore chat` lists its sources with the page of a PDF passage, the slide of a presentation's."""

from __future__ import annotations

from lore_client.cli import knowledge


def test_sources_name_the_cited_pages() -> None:
    with knowledge.console.capture() as captured:
        knowledge._print_sources(
            [
                {"index": 1, "source_file": "guide.pdf", "dataset": "docs", "page": 4, "page_end": 4},
                {"index": 2, "source_file": "guide.pdf", "dataset": "docs", "page": 6, "page_end": 7},
                {"index": 3, "source_file": "notes.md", "dataset": "docs", "page": None},
                {"index": 4, "source_file": "deck.pptx", "dataset": "docs", "page": 2, "page_end": 3},
                {"index": 5, "source_file": "old.PPT", "dataset": "docs", "page": 5, "page_end": 5},
            ]
        )
    lines = captured.get().splitlines()
    assert lines[-5:] == [
        "  [1] guide.pdf, p. 4 (dataset docs)",
        "  [2] guide.pdf, pp. 6-7 (dataset docs)",
        "  [3] notes.md (dataset docs)",
        "  [4] deck.pptx, slides 2-3 (dataset docs)",
        "  [5] old.PPT, slide 5 (dataset docs)",
    ]
