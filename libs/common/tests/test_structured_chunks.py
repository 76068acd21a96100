"""Chunks that follow structure: cut at headings and paragraph ends, tables whole or split by rows under
their header, each chunk with its heading path and page span."""

from __future__ import annotations

import itertools

from lore_common.chunking import count_tokens
from lore_common.structured_chunks import chunk_structured, heading_title

GUIDE = """# Guide

Lore keeps documents, memories and tables behind one API.

## Install

Install uv first. Then run the two commands of the README.

```bash
# not a heading: a comment inside a code fence
uv run just up
```

## Configure

### Stores

Embedded stores need no server.
PostgreSQL needs pgvector.

| store | default | server |
|---|---|---|
| vectors | Qdrant Edge | none |
| rows | SQLite | none |

## Troubleshooting

If a parse fails, read the task's skipped files.
"""


def test_chunks_are_cut_at_headings_and_carry_their_heading_path() -> None:
    chunks = chunk_structured(GUIDE, chunk_size=1024, overlap=50)
    assert [c.heading_path for c in chunks] == [
        ["Guide"],
        ["Guide", "Install"],
        ["Guide", "Configure", "Stores"],
        ["Guide", "Troubleshooting"],
    ]
    install = chunks[1]
    assert install.text.startswith("## Install\n\nInstall uv first.")
    assert "# not a heading: a comment inside a code fence\nuv run just up\n```" in install.text
    # `## Configure` has no text of its own: it waits for `### Stores` and goes into that chunk
    assert chunks[2].text.startswith("## Configure\n\n### Stores\n\nEmbedded stores need no server.")
    assert "| rows | SQLite | none |" in chunks[2].text
    assert all(c.page_start is None and c.page_end is None for c in chunks)


def test_headings_with_no_text_under_them_are_kept() -> None:
    # a document that ends in titles, and one that is only an outline, lose none of them
    [intro, tail] = chunk_structured("# Plan\n\nWhat we do.\n\n## Later\n\n### Much later", 1024, 0)
    assert intro.text == "# Plan\n\nWhat we do."
    assert (tail.text, tail.heading_path) == ("## Later\n\n### Much later", ["Plan", "Later", "Much later"])
    outline = "\n\n".join(f"## Part {n} of the long outline" for n in range(40))
    parts = chunk_structured(outline, chunk_size=30, overlap=0)
    assert len(parts) > 1 and all(count_tokens(p.text) <= 30 for p in parts)
    assert "\n\n".join(p.text for p in parts) == outline


def test_paragraphs_are_packed_whole_up_to_the_size() -> None:
    paragraphs = [f"Paragraph {n} says one thing about lighthouses and their keepers." for n in range(6)]
    size = count_tokens(paragraphs[0]) * 2 + 1  # room for two whole paragraphs, not three
    chunks = chunk_structured("\n\n".join(paragraphs), chunk_size=size, overlap=5)
    assert [c.text for c in chunks] == ["\n\n".join(paragraphs[i : i + 2]) for i in (0, 2, 4)]
    assert all(count_tokens(c.text) <= size for c in chunks)


def test_a_long_paragraph_is_cut_at_sentence_ends_with_the_overlap_repeated() -> None:
    sentences = [f"Sentence number {n} is short." for n in range(10)]  # 6 tokens each
    chunks = chunk_structured("# Notes\n\n" + " ".join(sentences), chunk_size=20, overlap=6)
    assert chunks[0].text.startswith("# Notes\n\nSentence number 0 is short.")
    for chunk in chunks:
        assert chunk.heading_path == ["Notes"]
        body = chunk.text.removeprefix("# Notes\n\n")
        assert body.endswith("is short."), body  # never cut inside a sentence
        assert count_tokens(chunk.text) <= 20
    # each piece after the first repeats the last sentence of the one before
    for before, after in itertools.pairwise(chunks):
        last = "Sentence" + before.text.split("Sentence")[-1]
        assert after.text.startswith(last)
    joined = " ".join(c.text for c in chunks)
    assert all(s in joined for s in sentences)


def test_a_long_table_is_split_by_rows_with_its_header_repeated() -> None:
    rows = [f"| Sample {n:02d} | {n * 3} mg | passed review |" for n in range(40)]
    table = "| sample | dose | outcome |\n|---|---:|---|\n" + "\n".join(rows)
    text = f"## Results\n\nThe doses given to each sample.\n\n{table}\n\nNo sample was lost."
    chunks = chunk_structured(text, chunk_size=120, overlap=10)
    parts = [c for c in chunks if "| sample | dose | outcome |" in c.text]
    assert len(parts) >= 3
    seen: list[str] = []
    for part in parts:
        lines = part.text.split("\n")
        assert lines[:2] == ["| sample | dose | outcome |", "|---|---:|---|"]
        seen.extend(line for line in lines[2:] if line.startswith("| Sample"))
        assert count_tokens(part.text) <= 120
        assert part.heading_path == ["Results"]
    assert seen == rows  # every row once, whole, in order
    assert chunks[0].text.startswith("## Results\n\nThe doses given to each sample.")
    assert chunks[-1].text.endswith("No sample was lost.")


def test_a_table_that_fits_starts_a_new_chunk_rather_than_being_cut() -> None:
    intro = "Prices changed during the year. " * 8
    table = "| item | price |\n|---|---|\n| tea | 3 |\n| coffee | 4 |\n| milk | 1 |"
    chunks = chunk_structured(f"{intro}\n\n{table}", chunk_size=60, overlap=0)
    assert [c.text for c in chunks][-1] == table


def test_a_row_longer_than_a_chunk_is_never_cut() -> None:
    cell = " ".join(f"word{n}" for n in range(50))
    table = f"| name | notes |\n|---|---|\n| short | fine |\n| long | {cell} |"
    chunks = chunk_structured(table, chunk_size=30, overlap=0)
    assert any(f"| long | {cell} |" in c.text for c in chunks)
    assert all(c.text.startswith("| name | notes |\n|---|---|\n") for c in chunks)


def test_pages_are_counted_by_form_feeds() -> None:
    pages = [
        "# Report\n\nThe first page introduces the survey.",
        "The second page holds the method.\n\n## Results\n\nThe results begin here.",
        "| site | count |\n|---|---|\n| north | 12 |\n\f| south | 9 |",
    ]
    text = "\n\f\n".join(pages)
    chunks = chunk_structured(text, chunk_size=1024, overlap=0, paged=True)
    assert [(c.heading_path, c.page_start, c.page_end) for c in chunks] == [
        (["Report"], 1, 2),
        (["Report", "Results"], 2, 4),
    ]
    # a table goes on across a page break, still one table
    assert "| north | 12 |\n| south | 9 |" in chunks[1].text
    small = chunk_structured(text, chunk_size=12, overlap=0, paged=True)
    spans = {c.text.split("\n")[-1]: (c.page_start, c.page_end) for c in small}
    assert spans["The second page holds the method."] == (2, 2)
    assert spans["| south | 9 |"] == (4, 4)
    # without pages (not a PDF) a form feed only ends a paragraph
    assert all(c.page_start is None for c in chunk_structured(text, paged=False))


def test_plain_text_keeps_its_text() -> None:
    text = "Aspirin and the heart\n\nAspirin lowers the risk of a second heart attack. 研究表明阿司匹林有效。"
    [chunk] = chunk_structured(text)
    assert chunk.text == text and chunk.heading_path == []
    assert chunk_structured("   \n\n ") == []


def test_heading_titles() -> None:
    assert heading_title("## **Install**  ##") == "Install"
    assert heading_title("#hashtag") is None
    assert heading_title("#") is None
    assert heading_title("###### 安装 说明") == "安装 说明"


def test_a_heading_s_emphasis_is_dropped_and_other_marks_are_kept() -> None:
    assert heading_title("## _Intro_ and *more*") == "Intro and more"
    assert heading_title("## ***Note:*** read `config.yaml` first") == "Note: read config.yaml first"
    assert heading_title("## **_Both_** marks") == "Both marks"
    # marks inside a word or without a pair are the title's own
    assert heading_title("# File: word_sample.docx") == "File: word_sample.docx"
    assert heading_title("## Стрелец A*") == "Стрелец A*"
    assert heading_title("### call my_function(a, b)") == "call my_function(a, b)"
    assert heading_title("## 2 * 3 = 6") == "2 * 3 = 6"


def test_a_contents_heading_holds_its_list_only() -> None:
    """A booklet's contents page set in its largest type: the sections after it are not under it."""
    booklet = (
        "# Contents\n\nDiagnosis 13\n\nTreatment 21\n\n## Diagnosis\n\nA biopsy confirms the diagnosis.\n\n"
        "## Treatment\n\n### Hormone therapy\n\nTamoxifen blocks oestrogen."
    )
    paths = [c.heading_path for c in chunk_structured(booklet, chunk_size=1024, overlap=50)]
    assert paths == [["Contents"], ["Diagnosis"], ["Treatment", "Hormone therapy"]]
