"""Apple iWork documents are read: a Pages document's body with its table in place, a Keynote's slides
with their titles, a Numbers workbook's sheets and tables; iWork '09 packages too; a password-protected
or damaged one is skipped with its reason. Before, `.pages`, `.key` and `.numbers` were refused as
unsupported types."""

from __future__ import annotations

import datetime
import io
import warnings
import zipfile
from pathlib import Path
from typing import Any

import pytest

from lore_common.testing.flows import KB, parse, upload, wait_task
from lore_docdb.chat.retrieval import Hit
from lore_docdb.chat.service import place
from lore_docdb.parse.extract import ExtractionError, extract_text
from lore_docdb.parse.sandbox import sniff

DATA = Path(__file__).parent / "data"
TABLE = [
    "| Column one | Column two | Column three |",
    "|---|---|---|",
    "| Cell one | Cell two | Cell three |",
    "| Cell four | Cell five | Cell six |",
    "| Cell seven | Cell eight | Cell nine |",
]


def blocks(text: str) -> list[str]:
    return [b for b in text.split("\n\n") if b.strip()]


def test_pages_gives_its_body_in_order_with_the_table_where_it_is_anchored() -> None:
    text = extract_text(DATA / "sample.pages")
    found = blocks(text)
    assert found[:3] == ["Sample pages document", "Some plain text to parse.", "\n".join(TABLE)]
    assert found[3].startswith("Both Pages 1.x and Keynote 2.x, which form the basis of Apple’s iWork")
    assert found[-2].startswith("Extensible Markup Language (XML) is a ubiquitous")
    assert found[-1] == "A text box with text."  # a floating text box, after the body
    assert found[-3].startswith("A second page") and "\ufffc" not in text  # no attachment marks


def test_a_pages_09_package_reads_as_the_same_document() -> None:
    """The same document saved by Pages '09 (an XML index) and by Pages 5 (IWA): one text; the
    template's placeholder pages (`Lorem ipsum`) and its empty headers are not in it."""
    legacy = extract_text(DATA / "sample-09.pages")
    assert legacy == extract_text(DATA / "sample.pages")
    assert "Lorem" not in legacy and "Plloaso" not in legacy


def test_pages_headings_lists_and_tables_come_from_their_styles() -> None:
    """A Pages document made from a template: `Title` and `Heading` paragraphs are headings though
    every paragraph carries the list style `None` (named in the document's language), bulleted ones
    list items, and a text box the template repeats on each page is read once."""
    text = extract_text(DATA / "proposal.pages")
    headings = [line for line in text.split("\n") if line.startswith("#")]
    assert headings[:4] == ["# Project Proposal", "## EXECUTIVE SUMMARY", "### Goals", "### Solution"]
    assert "## BUDGET" in headings
    assert "\n- Wisi at id praesent bibendum libero faucibus porta egestas" in text
    assert "| Item 1 | 55 | 100 | 5500 |\n| Item 2 | 13 | 90 | 1170 |" in text
    assert text.count("company name") == 1 and "\x05" not in text


def test_a_numbers_09_workbook_gives_sheets_tables_formula_results_and_menu_choices() -> None:
    text = extract_text(DATA / "sample-09.numbers")
    assert text.startswith("# Checking\n\n## Account Categories\n\n| Category | Amount |")
    assert "| Home | -872.4 |" in text  # a formula's last result
    # a date kept as seconds since 2001, a pop-up menu's choice, a running balance
    assert "| Debit Card | 2009-10-16 | Fill up SUV for camping trip | Gas | -75 | 3702.6 |" in text
    assert "\n# Second sheet\n" in text


def test_a_pages_09_document_keeps_its_footnotes_after_the_body() -> None:
    text = extract_text(DATA / "footnotes-09.pages")
    assert text.index("Footnote: Do a lot of people really use iWork") > text.index("IBM Content Analytics")


def test_keynote_slide_title_is_a_heading_and_the_masters_text_is_not_read() -> None:
    text = extract_text(DATA / "sample.key")
    assert text == "# Example Presentation\n\nThis is a subtitle."  # master slides hold `Title Text`…


def test_keynote_slides_are_pages_with_their_titles_lists_tables_and_notes() -> None:
    slides = extract_text(DATA / "slides.key").split("\f")
    assert slides == [
        "# A sample presentation\n\nFor the Apache Tika project",
        "# Slide 1\n\n- Some random text for the sake of testability.\n\nA nice comment"
        "\n\nNotes:\n\nA nice note",
        "# Slide 3\n\n| Cell one | Cell two | Cell three |\n|---|---|---|\n"
        "| Cell four | Cell 5 | Cell six |\n| 7 | Cell eight | 5/5/1985 |",
    ]


def test_a_keynote_passage_is_cited_with_its_slide() -> None:
    assert place(Hit("c", 1.0, "t", "decks", "plan.key", ("Plan",), 3, 3)) == "plan.key, slide 3, Plan"


def numbers_file(path: Path) -> Path:
    """A Numbers workbook written by numbers-parser: two sheets, a merged cell, a date with and
    without its time, truth values, a pipe in a cell, and a table longer than one tile (256 rows)."""
    from numbers_parser import Document

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        doc = Document()
        sheet = doc.sheets[0]
        sheet.name = "Tides"
        table = sheet.tables[0]
        table.name = "Harbour"
        rows: list[list[Any]] = [
            ["Port", "High water", "Height m", "Spring"],
            ["Brest", datetime.datetime(2026, 3, 4, 6, 15), 7.25, True],
            ["Cherbourg", datetime.datetime(2026, 3, 4), 6.1, False],
            ["Merged over two", None, None, None],
        ]
        for r, row in enumerate(rows):
            for c, value in enumerate(row):
                if value is not None:
                    table.write(r, c, value)
        table.merge_cells("A4:B4")
        doc.add_sheet("Crew", "Roster")
        roster = doc.sheets["Crew"].tables[0]
        roster.write(0, 0, "Name")
        roster.write(0, 1, "Role")
        for r in range(1, 301):
            roster.write(r, 0, f"Sailor {r}")
            roster.write(r, 1, "Pilot | navigator" if r == 300 else "Deckhand")
        doc.save(path)
    return path


def test_numbers_gives_each_sheet_and_table_under_its_name_with_the_values_shown(tmp_path: Path) -> None:
    text = extract_text(numbers_file(tmp_path / "harbour.numbers"))
    assert text.startswith(
        "# Tides\n\n## Harbour\n\n"
        "| Port | High water | Height m | Spring |\n|---|---|---|---|\n"
        "| Brest | 2026-03-04 06:15:00 | 7.25 | TRUE |\n"
        "| Cherbourg | 2026-03-04 | 6.1 | FALSE |\n"
        "| Merged over two | Merged over two |"  # a merged cell's value in each cell it covers
    )
    crew = text[text.index("# Crew") :]
    assert crew.startswith("# Crew\n\n## Roster\n\n| Name | Role |\n|---|---|\n| Sailor 1 | Deckhand |")
    assert "| Sailor 256 | Deckhand |\n| Sailor 257 | Deckhand |" in crew  # across two tiles, in order
    assert crew.rstrip().endswith("| Sailor 300 | Pilot \\| navigator |")


def test_a_password_protected_or_damaged_package_is_refused_with_its_reason(tmp_path: Path) -> None:
    with pytest.raises(ExtractionError, match=r"encrypted\.pages: is password-protected"):
        extract_text(DATA / "encrypted.pages")
    damaged = io.BytesIO()
    with zipfile.ZipFile(damaged, "w") as package:
        package.writestr("Index/Document.iwa", b"\x00\x10\x00\x00" + b"\xff" * 16)
    path = tmp_path / "broken.numbers"
    path.write_bytes(damaged.getvalue())
    assert sniff(path, 1 << 20) is None
    with pytest.raises(ExtractionError, match=r"broken\.numbers: its part Index/Document\.iwa is damaged"):
        extract_text(path)
    bomb = io.BytesIO()  # a Snappy block that says it inflates to 3 GiB: refused before it is
    with zipfile.ZipFile(bomb, "w") as package:
        block = b"\x80\x80\x80\x80\x0c\x00a"  # the varint 3 << 30, then one literal byte
        package.writestr("Index/Document.iwa", b"\x00" + len(block).to_bytes(3, "little") + block)
    path.write_bytes(bomb.getvalue())
    with pytest.raises(
        ExtractionError, match=r"broken\.numbers: its part Index/Document\.iwa inflates past 256 MiB"
    ):
        extract_text(path)
    pem = tmp_path / "server.key"  # `.key` is also what a TLS private key is called
    pem.write_text("-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n")
    assert sniff(pem, 1 << 20) == "is not a .key document (not a zip archive)"


async def test_iwork_files_parse_into_a_kb_and_their_table_rows_come_back_whole(
    docdb_factory: Any, tmp_path: Path
) -> None:
    files = {
        "notes.pages": (DATA / "sample.pages").read_bytes(),
        "deck.key": (DATA / "sample.key").read_bytes(),
        "talk.key": (DATA / "slides.key").read_bytes(),
        "harbour.numbers": numbers_file(tmp_path / "harbour.numbers").read_bytes(),
        "locked.pages": (DATA / "encrypted.pages").read_bytes(),
    }
    async with docdb_factory() as client:
        await upload(client, "apple", files)
        await client.post(KB, json={"name": "apple"})
        [task_id] = await parse(client, "apple", ["apple"], mode=1)
        task = await wait_task(client, task_id)
        assert task["status"] == "completed", task
        [skipped] = task["metadata"]["skipped_files"]
        assert skipped["file"] == "locked.pages" and "password-protected" in skipped["reason"]
        for query, file, wanted in (
            ("Cell four Cell five Cell six", "notes.pages", "| Cell four | Cell five | Cell six |"),
            ("When is high water at Brest?", "harbour.numbers", "| Brest | 2026-03-04 06:15:00 | 7.25 |"),
            ("Example Presentation subtitle", "deck.key", "This is a subtitle."),
        ):
            reply = await client.post("/api/v1/docdb/retrieve", json={"kb_id": "apple", "query": query})
            [top, *_] = reply.json()["data"]
            assert top["kb_name"] == file and wanted in top["content"], (query, top)
        reply = await client.post(
            "/api/v1/docdb/retrieve",
            json={"kb_id": "apple", "query": "Cell eight 5/5/1985", "mode": "rerank"},
        )
        [top, *_] = reply.json()["data"]
        assert (top["kb_name"], top["page"], top["page_end"]) == ("talk.key", 3, 3), top  # its slide
