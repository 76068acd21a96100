"""PDF headings from the document's own outline (its bookmarks, as LaTeX's hyperref, Word and manual
writers put them there): a title the outline lists is a heading at the outline's level wherever its
type does not say so, with or without its section number, over two lines, on a page the outline
gets wrong; an outline that only lists pages says nothing; headings guessed from type rank beside the
outline's. And what the same trial (kreuzberg's test PDFs) found beside: a paragraph that pdfium's
reading of a hyphenated line end would part, a contract's titles ending in a full stop, a section's
title straight over its first subsection's, a line of text with a bold word at each end. The PDFs
are written here with hand-written operators and outlines, one per test."""

from __future__ import annotations

from pathlib import Path

from lore_common.testing.pdf import Bookmark, pages_pdf
from lore_docdb.parse.convert.pdf import pdf_text

FONTS = ("/BaseFont /Helvetica", "/BaseFont /Helvetica-Bold")
PROSE = (
    "The harbour board met on the first Monday of the month and heard the reports of the pilots, "
    "the lock keepers and the harbour master on the state of the channel, the moorings and the quays "
    "before it turned to the accounts of the year and the repairs to the north breakwater"
).split()


def text(x: float, y: float, size: float, words: str, font: str = "F1") -> str:
    escaped = words.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return f"BT /{font} {size} Tf 1 0 0 1 {x} {y} Tm ({escaped}) Tj ET"


def prose(y: float, lines: int, size: float = 11) -> list[str]:
    """Lines of body text from y down, about 75 characters each, the last one ending a sentence."""
    ops: list[str] = []
    at = 0
    for i in range(lines):
        words: list[str] = []
        while sum(len(w) + 1 for w in words) < 950 / size:
            words.append(PROSE[at % len(PROSE)])
            at += 1
        ops.append(text(72, y - i * size * 1.25, size, " ".join(words) + ("." if i == lines - 1 else "")))
    return ops


def write(path: Path, pages: list[list[str]], outline: list[Bookmark]) -> Path:
    path.write_bytes(pages_pdf(pages, FONTS, outline))
    return path


def headings(path: Path) -> list[str]:
    """The `#` lines of the converter's text, marks and all (the level is what a reader navigates by)."""
    return [line for line in pdf_text(path).splitlines() if line.startswith("#")]


def test_titles_in_body_type_that_the_outline_lists_are_headings_at_its_levels(tmp_path: Path) -> None:
    # a report whose section titles are set in the body's own type and face: nothing but the
    # outline tells them from the text
    pdf = write(
        tmp_path / "report.pdf",
        [
            [
                text(72, 720, 11, "1 Harbour works"),
                *prose(700, 6),
                text(72, 610, 11, "1.1 The north breakwater"),
                *prose(590, 6),
            ],
            [text(72, 720, 11, "2 Accounts of the year"), *prose(700, 8)],
        ],
        [
            Bookmark("1 Harbour works", 0, 0, 735),
            Bookmark("1.1 The north breakwater", 1, 0, 625, action=True),  # hyperref's GoTo action
            Bookmark("2 Accounts of the year", 0, 1, 735),
        ],
    )
    assert headings(pdf) == ["# 1 Harbour works", "## 1.1 The north breakwater", "# 2 Accounts of the year"]


def test_an_outline_title_is_found_with_or_without_its_number_and_over_two_lines(tmp_path: Path) -> None:
    pdf = write(
        tmp_path / "numbers.pdf",
        [
            [
                text(72, 720, 11, "1 Introduction"),  # the outline leaves the number out
                *prose(700, 6),
                text(72, 610, 11, "Methods"),  # the page leaves it out
                *prose(590, 6),
                text(72, 500, 11, "3 A survey of the channel, the moorings"),  # a title set on two lines
                text(72, 486, 11, "and the quays"),
                *prose(466, 6),
            ]
        ],
        [
            Bookmark("Introduction", 0, 0),
            Bookmark("2 Methods", 0, 0),
            Bookmark("3 A survey of the channel, the moorings and the quays", 0, 0),
        ],
    )
    assert headings(pdf) == [
        "# 1 Introduction",
        "# Methods",
        "# 3 A survey of the channel, the moorings and the quays",
    ]


def test_an_entry_whose_page_is_wrong_or_missing_is_found_on_a_page_nearby(tmp_path: Path) -> None:
    pdf = write(
        tmp_path / "pages.pdf",
        [
            [text(72, 720, 11, "Harbour works"), *prose(700, 30)],
            [text(72, 720, 11, "The north breakwater"), *prose(700, 30)],
            [text(72, 720, 11, "Accounts of the year"), *prose(700, 30)],
        ],
        [
            Bookmark("Harbour works", 0, 0),
            Bookmark("The north breakwater", 1, 2),  # a page off (page labels mistaken for indexes)
            Bookmark("Accounts of the year", 0, None),  # a page of an extract the file lacks
        ],
    )
    assert headings(pdf) == ["# Harbour works", "## The north breakwater", "# Accounts of the year"]


def test_a_title_the_outline_lists_twice_is_the_heading_of_the_later_entry(tmp_path: Path) -> None:
    # a structured abstract's parts listed under it (`Abstract > Methods`), set in the text as a run-in
    # label, and the article's own Methods section: the section's line is the top entry's
    pdf = write(
        tmp_path / "article.pdf",
        [
            [
                text(72, 720, 11, "Abstract"),
                text(72, 700, 11, "Methods: the harbour board heard the reports of the pilots and keepers."),
                *prose(680, 4),
                text(72, 600, 11, "Methods"),
                *prose(580, 6),
                text(72, 490, 11, "Sampling the channel"),
                *prose(470, 6),
            ]
        ],
        [
            Bookmark("Abstract", 0, 0),
            Bookmark("Methods", 1, 0),
            Bookmark("Methods", 0, 0),
            Bookmark("Sampling the channel", 1, 0),
        ],
    )
    assert headings(pdf) == ["# Abstract", "# Methods", "## Sampling the channel"]


def test_an_outline_of_pages_says_nothing_of_headings(tmp_path: Path) -> None:
    # a scanner's or an image tool's outline: one entry per page, named after the page or a file
    pages = [
        [text(72, 720, 11, f"Page {n}"), text(72, 700, 11, "Report"), *prose(680, 20)] for n in (1, 2, 3)
    ]
    by_number = write(tmp_path / "numbers.pdf", pages, [Bookmark(f"Page {n}", 0, n - 1) for n in (1, 2, 3)])
    by_name = write(tmp_path / "names.pdf", pages, [Bookmark("Report", 0, n) for n in range(3)])
    assert headings(by_number) == []
    assert headings(by_name) == []


def test_the_outline_title_that_the_running_header_repeats_stays_on_its_own_page(tmp_path: Path) -> None:
    pdf = write(
        tmp_path / "chapter.pdf",
        [
            [text(72, 740, 11, "Harbour Works"), *prose(700, 30)],
            [text(72, 740, 11, "Harbour Works"), *prose(700, 30)],  # the running header
            [text(72, 740, 11, "Harbour Works"), *prose(700, 30)],
        ],
        [Bookmark("Harbour Works", 0, 0, 750)],
    )
    text_ = pdf_text(pdf)
    assert [line for line in text_.splitlines() if "Harbour Works" in line] == ["# Harbour Works"]
    assert text_.startswith("# Harbour Works")


def test_a_heading_the_outline_leaves_out_ranks_beside_the_entries_in_its_type(tmp_path: Path) -> None:
    # sections in 14 pt bold, listed at the outline's top level under a 20 pt title it does not list;
    # the references' heading, also 14 pt bold, left out of it: the same level as the sections
    pdf = write(
        tmp_path / "paper.pdf",
        [
            [
                text(72, 730, 20, "Harbour Works of the Year", "F2"),
                text(72, 690, 14, "1 Introduction", "F2"),
                *prose(670, 6),
                text(72, 580, 14, "2 The north breakwater", "F2"),
                *prose(560, 6),
                text(72, 470, 14, "3 Accounts", "F2"),
                *prose(450, 6),
                text(72, 360, 14, "References", "F2"),
                *prose(340, 4),
            ]
        ],
        [
            Bookmark("1 Introduction", 0, 0),
            Bookmark("2 The north breakwater", 0, 0),
            Bookmark("3 Accounts", 0, 0),
        ],
    )
    assert headings(pdf) == [
        "# Harbour Works of the Year",
        "# 1 Introduction",
        "# 2 The north breakwater",
        "# 3 Accounts",
        "# References",
    ]


def test_a_word_hyphenated_at_a_line_end_does_not_break_its_paragraph(tmp_path: Path) -> None:
    # pdfium reads a line ending in a hyphenated word and the next line as one line of text, whose
    # first letters stand two lines above the line after it: no paragraph's space for all that
    y = 720 - 5 * 13.75 - 14
    pdf = write(
        tmp_path / "minutes.pdf",
        [
            [
                *prose(720, 5),
                text(72, y, 11, "The lock keepers asked the board for a new gate at the har-"),
                text(72, y - 13.75, 11, "bour mouth and for two more men to work the sluices at night"),
                text(72, y - 27.5, 11, "and on the days of the spring tides, which the board agreed to."),
                *prose(y - 27.5 - 28, 5),
            ]
        ],
        [],
    )
    blocks = pdf_text(pdf).split("\n\n")
    assert any("the harbour mouth" in block and "which the board agreed to." in block for block in blocks), (
        blocks
    )


def test_a_numbered_title_in_capitals_that_ends_in_a_full_stop_is_a_heading(tmp_path: Path) -> None:
    # a contract's sections, in bold body type, each ending in a full stop; a bold sentence is no title
    pdf = write(
        tmp_path / "contract.pdf",
        [
            [
                text(72, 720, 11, "1. DUTIES.", "F2"),
                *prose(700, 5),
                text(72, 620, 11, "5. INDEMNIFICATION FOR DAMAGES, TAXES AND CONTRIBUTIONS.", "F2"),
                *prose(600, 5),
                text(72, 520, 11, "The board will meet again in May.", "F2"),
                *prose(500, 5),
            ]
        ],
        [],
    )
    assert headings(pdf) == ["# 1. DUTIES.", "# 5. INDEMNIFICATION FOR DAMAGES, TAXES AND CONTRIBUTIONS."]


def test_a_section_title_straight_over_its_first_subsection_title_is_two_headings(tmp_path: Path) -> None:
    # in the same bold type, one line under the other: not one title on two lines
    pdf = write(
        tmp_path / "paper.pdf",
        [
            [
                text(72, 720, 11, "3. PARTITIONING", "F2"),
                text(72, 706, 11, "3.1 In-Cache", "F2"),
                *prose(690, 6),
                text(72, 600, 11, "4 The north breakwater and", "F2"),
                text(72, 586, 11, "2021 and after", "F2"),  # a title's second line that opens with a figure
                *prose(570, 6),
            ]
        ],
        [],
    )
    assert headings(pdf) == [
        "# 3. PARTITIONING",
        "## 3.1 In-Cache",
        "# 4 The north breakwater and 2021 and after",
    ]


def test_a_line_of_text_that_opens_and_ends_with_a_bold_word_is_no_heading(tmp_path: Path) -> None:
    # a paper that sets a language's name in a face of its own, at both ends of a line of its text
    mixed = (
        "BT /F2 11 Tf 1 0 0 1 72 600 Tm (Java) Tj /F1 11 Tf ( is a common vehicle for teaching and the "
        "availability of the ) Tj /F2 11 Tf (Java) Tj ET"
    )
    pdf = write(
        tmp_path / "languages.pdf",
        [[text(72, 720, 11, "Compiled languages", "F2"), *prose(700, 6), mixed, *prose(586, 6)]],
        [],
    )
    assert headings(pdf) == ["# Compiled languages"]


def test_of_two_lines_that_read_as_an_entry_s_title_the_one_set_as_a_heading_is_taken(tmp_path: Path) -> None:
    # a chart's label and the section's title read alike on the page the outline names, which it
    # shows whole (no height to go by)
    pdf = write(
        tmp_path / "chart.pdf",
        [
            [
                text(72, 720, 14, "Tonnage by quay", "F2"),
                *prose(700, 6),
                text(72, 610, 11, "Tonnage by quay"),
                *prose(590, 6),
            ]
        ],
        [Bookmark("Tonnage by quay", 0, 0)],
    )
    assert [line for line in pdf_text(pdf).splitlines() if "Tonnage" in line] == [
        "# Tonnage by quay",
        "Tonnage by quay",
    ]


def test_a_title_read_twice_on_its_page_is_the_heading_where_it_first_stands(tmp_path: Path) -> None:
    # an entry that points at the page's foot (a height of 0, as some writers put "anywhere"), whose
    # title a later line repeats (a figure's label): the first is the section's
    pdf = write(
        tmp_path / "twice.pdf",
        [
            [
                text(72, 720, 11, "Tonnage by quay"),
                *prose(700, 6),
                text(72, 610, 11, "Tonnage by quay"),
                *prose(590, 6),
            ]
        ],
        [Bookmark("Tonnage by quay", 0, 0, 0)],
    )
    assert [line for line in pdf_text(pdf).splitlines() if "Tonnage" in line] == [
        "# Tonnage by quay",
        "Tonnage by quay",
    ]
