"""PDF headings as a reader sees them: a title's lines and its subtitle, a label in small type before a
title, a heading on a page set in smaller type than the rest, a banner drawn as a ruled box, and the
lines that only look like headings (a running header in a font of its own, a document set all in bold,
a list's item). The PDFs are written here with hand-written operators, one per test."""

from __future__ import annotations

from pathlib import Path

from lore_common.testing.pdf import pages_pdf
from lore_docdb.parse.convert.pdf import pdf_text

# /F1 to /F4; /F4 is Helvetica whose descriptor calls it bold (a weight of 700, forced bold), as some
# producers write every font of a document
FONTS = (
    "/BaseFont /Helvetica",
    "/BaseFont /Helvetica-Bold",
    "/BaseFont /Times-Roman",
    "/BaseFont /Helvetica /FirstChar 32 /LastChar 126 /FontDescriptor << /Type /FontDescriptor "
    "/FontName /Helvetica /Flags 262176 /FontWeight 700 /ItalicAngle 0 /Ascent 718 /Descent -207 "
    "/CapHeight 718 /StemV 140 /FontBBox [-166 -225 1000 931] >>",
)
PROSE = (
    "The harbour board met on the first Monday of the month and heard the reports of the pilots, "
    "the lock keepers and the harbour master on the state of the channel, the moorings and the quays "
    "before it turned to the accounts of the year and the repairs to the north breakwater"
).split()


def text(x: float, y: float, size: float, words: str, font: str = "F1") -> str:
    escaped = words.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return f"BT /{font} {size} Tf 1 0 0 1 {x} {y} Tm ({escaped}) Tj ET"


def prose(y: float, size: float, lines: int, font: str = "F1", end: str = ".") -> list[str]:
    """Lines of body text from y down, about 75 characters each, the last one ending a sentence."""
    ops, at = [], 0
    for i in range(lines):
        words = []
        while sum(len(w) + 1 for w in words) < 950 / size:
            words.append(PROSE[at % len(PROSE)])
            at += 1
        line = " ".join(words) + (end if i == lines - 1 else "")
        ops.append(text(72, y - i * size * 1.25, size, line, font))
    return ops


def write(path: Path, pages: list[list[str]]) -> Path:
    """A PDF of these pages (each a list of content operators) in the standard fonts of FONTS."""
    path.write_bytes(pages_pdf(pages, FONTS))
    return path


def headings(path: Path) -> list[str]:
    return [line.lstrip("#").strip() for line in pdf_text(path).splitlines() if line.startswith("#")]


def test_a_title_and_its_subtitle_set_well_below_it_are_two_headings(tmp_path: Path) -> None:
    pdf = write(
        tmp_path / "report.pdf",
        [
            [
                text(72, 720, 24, "Annual Report", "F2"),
                text(72, 640, 24, "Harbour Works", "F2"),  # the same type, far below: a heading of its own
                *prose(600, 11, 12),
                text(72, 400, 24, "North Breakwater", "F2"),
                text(72, 372, 24, "and the Old Pier", "F2"),  # the next line of one title
                *prose(330, 11, 10),
            ]
        ],
    )
    # two headings, the title kept though nothing but its subtitle stands under it
    assert headings(pdf) == ["Annual Report", "Harbour Works", "North Breakwater and the Old Pier"]


def test_a_label_in_small_type_before_a_title_stays_out_of_the_heading(tmp_path: Path) -> None:
    pdf = write(
        tmp_path / "chapter.pdf",
        [
            [
                text(72, 700, 9, "Chapter 3.", "F2"),
                text(130, 700, 24, "Tides and Currents", "F2"),  # on the same line, in large type
                *prose(650, 11, 14),
            ]
        ],
    )
    text_ = pdf_text(pdf)
    assert headings(pdf) == ["Tides and Currents"]
    assert "Chapter 3." in text_  # kept, as text


def test_a_heading_on_a_page_set_in_smaller_type_than_the_document_is_found(tmp_path: Path) -> None:
    pdf = write(
        tmp_path / "brochure.pdf",
        [
            prose(740, 11, 40),  # the document's body: 11 pt
            [
                text(72, 740, 10, "Highlights"),  # smaller than the document's body, larger than the page's
                *prose(720, 8, 12),
            ],
        ],
    )
    assert headings(pdf) == ["Highlights"]


def test_a_banner_drawn_as_a_ruled_box_is_no_table_and_its_title_a_heading(tmp_path: Path) -> None:
    pdf = write(
        tmp_path / "banner.pdf",
        [
            [
                text(80, 715, 18, "Quarterly Harbour Report", "F2"),
                text(400, 760, 11, "Harbour Board"),  # in the other cell, above the title's line
                "0.5 w",
                "72 775 m 540 775 l S",
                "72 705 m 540 705 l S",
                "72 705 m 72 775 l S",
                "390 705 m 390 775 l S",
                "540 705 m 540 775 l S",
                "390 740 m 540 740 l S",  # the right cell in two rows, the lower one empty
                *prose(680, 11, 14),
            ]
        ],
    )
    text_ = pdf_text(pdf)
    assert "|" not in text_
    assert "Quarterly Harbour Report" in headings(pdf)


def test_a_running_header_in_a_font_of_its_own_is_not_a_heading(tmp_path: Path) -> None:
    header = "Journal of Harbour Studies, volume 12, issue 3, March 2024, the annual series of the board"
    page = [text(72, 760, 11, header, "F3"), *prose(700, 11, 30)]
    pdf = write(tmp_path / "journal.pdf", [page])
    assert headings(pdf) == []
    assert header in pdf_text(pdf)


def test_where_the_body_reads_as_bold_a_bold_font_still_makes_a_heading(tmp_path: Path) -> None:
    page = [
        text(72, 740, 18, "Insurance and Bond Quote", "F2"),
        *prose(700, 11, 10, "F4"),  # a regular font whose descriptor says bold
        text(72, 540, 11, "Liability Insurance", "F2"),
        *prose(520, 11, 10, "F4"),
        text(72, 360, 11, "Performance Bond", "F2"),
        *prose(340, 11, 6, "F4"),
    ]
    pdf = write(tmp_path / "bold.pdf", [page])
    assert headings(pdf) == ["Insurance and Bond Quote", "Liability Insurance", "Performance Bond"]


def test_a_list_item_in_large_type_is_not_a_heading(tmp_path: Path) -> None:
    page = [
        *prose(740, 11, 20),
        text(72, 400, 14, "- the north pier reopens in spring"),
        *prose(370, 11, 10),
    ]
    pdf = write(tmp_path / "list.pdf", [page])
    assert headings(pdf) == []
    assert "- the north pier reopens in spring" in pdf_text(pdf)


def test_a_latin_word_in_arabic_text_keeps_the_space_pdfium_drops_where_the_direction_turns() -> None:
    from lore_docdb.parse.convert.pdf import _page_lines

    # "with R and Python" as pdfium reads a right-to-left title: the space before "Python" lost
    assert _page_lines("البرمجة بلغة R وPython\r\nتعتبر Pythonمن الأدوات") == [
        "البرمجة بلغة R و Python",
        "تعتبر Python من الأدوات",
    ]
    assert _page_lines("R and Python, 3.5%") == ["R and Python, 3.5%"]  # no Arabic: as it was


def test_a_title_whose_first_line_ends_with_a_colon_is_one_heading(tmp_path: Path) -> None:
    page = [
        text(72, 720, 16, "Module Two: Initial Planning and Step 1:", "F2"),
        text(72, 700, 16, "Concept Development", "F2"),
        *prose(670, 11, 8),
    ]
    pdf = write(tmp_path / "course.pdf", [page])
    assert headings(pdf) == ["Module Two: Initial Planning and Step 1: Concept Development"]


def test_a_line_in_lower_case_over_a_title_in_the_same_type_leaves_the_title_a_heading(
    tmp_path: Path,
) -> None:
    page = [
        text(72, 740, 18, "Harbour Works", "F2"),
        text(72, 710, 14, "llncs, version 2.22, Sep 05, 2022"),
        text(72, 660, 14, "1 Installation", "F2"),
        *prose(630, 11, 8),
    ]
    pdf = write(tmp_path / "manual.pdf", [page])
    assert headings(pdf) == ["Harbour Works", "1 Installation"]


def test_a_title_in_larger_type_opening_in_lower_case_is_still_a_heading(tmp_path: Path) -> None:
    # an outline's numbered level, as ODF's sample writes it; only lines in body size, bold or another
    # face are refused for opening in lower case
    page = [
        text(72, 740, 18, "Harbour Works", "F2"),
        text(72, 700, 15, "heading level 1.0"),
        *prose(670, 11, 8),
    ]
    pdf = write(tmp_path / "outline.pdf", [page])
    assert headings(pdf) == ["Harbour Works", "heading level 1.0"]
