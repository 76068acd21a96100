"""Lines that look like headings and are not (#40): a table of contents' entries set in bold (a title,
dot leaders, a page number), and in OCR'd pages an author block's lines (affiliations opened by a
superscript number, e-mail addresses), a margin's stray marks read into a line, and garbled lines.
The PDFs are written here with hand-written operators; the OCR tests lay out recognised boxes."""

from __future__ import annotations

from pathlib import Path

from lore_common.testing.pdf import pages_pdf
from lore_docdb.parse.convert.ocr import _Box, layout
from lore_docdb.parse.convert.pdf import pdf_text

FONTS = ("/BaseFont /Helvetica", "/BaseFont /Helvetica-Bold")
PROSE = (
    "The clinic sees most people within a week of their first visit and the nurse explains each test "
    "before it is done so that nobody has to wait for the results without knowing what they mean"
).split()


def text(x: float, y: float, size: float, words: str, font: str = "F1") -> str:
    escaped = words.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return f"BT /{font} {size} Tf 1 0 0 1 {x} {y} Tm ({escaped}) Tj ET"


def prose(y: float, lines: int) -> list[str]:
    """Lines of 11 pt body text from y down, the last ending a sentence."""
    ops = []
    for i in range(lines):
        words = [PROSE[(i * 9 + k) % len(PROSE)] for k in range(14)]
        ops.append(text(72, y - i * 14, 11, " ".join(words) + ("." if i == lines - 1 else "")))
    return ops


def write(path: Path, pages: list[list[str]]) -> Path:
    path.write_bytes(pages_pdf(pages, FONTS))
    return path


def headings(markdown: str) -> list[str]:
    return [line.lstrip("#").strip() for line in markdown.splitlines() if line.startswith("#")]


def test_bold_entries_of_a_table_of_contents_stay_text(tmp_path: Path) -> None:
    contents = [
        text(72, 720, 20, "Contents", "F2"),
        text(72, 680, 11, "What is cancer? ............................ 4"),
        text(72, 664, 11, "Diagnosis .................................. 13", "F2"),
        text(72, 648, 11, "Mammogram ............................... 13"),
        text(72, 632, 11, "Ultrasound ................................. 14"),
        text(72, 616, 11, "Treatment .................................. 27", "F2"),
        text(72, 600, 11, "Surgery ..................................... 28"),
    ]
    chapter = [text(72, 720, 20, "Diagnosis", "F2"), *prose(690, 12)]
    pdf = write(tmp_path / "booklet.pdf", [contents, chapter])
    out = pdf_text(pdf)
    assert headings(out) == ["Contents", "Diagnosis"]
    assert "Diagnosis .................................. 13" in out.splitlines()


def test_a_run_of_titles_with_page_numbers_and_no_leaders_stays_text(tmp_path: Path) -> None:
    contents = [
        text(72, 720, 20, "In this guide", "F2"),
        text(72, 680, 11, "Before you start 3", "F2"),
        text(72, 664, 11, "What to bring 4"),
        text(72, 648, 11, "Your first visit 5", "F2"),
        text(72, 632, 11, "Seeing the nurse 6"),
        text(72, 616, 11, "Getting help 12", "F2"),
    ]
    chapter = [text(72, 720, 14, "Before you start", "F2"), *prose(690, 12)]
    pdf = write(tmp_path / "guide.pdf", [contents, chapter])
    assert headings(pdf_text(pdf)) == ["In this guide", "Before you start"]


def page(lines: list[tuple[str, float, float, float]]) -> list[_Box]:
    """Boxes of recognised text: (text, left, top, height), each as wide as its characters at half
    its height each, as a recogniser draws them."""
    return [_Box(t, left, left + 0.5 * h * len(t), top, top + h) for t, left, top, h in lines]


BODY = [
    ("Recent advances in document image analysis have been driven by neural networks and", 160, 400, 15),
    ("research outcomes could be easily deployed in production and extended for further", 160, 418, 15),
    ("investigation, though various factors complicate the easy reuse of the innovations.", 160, 436, 15),
    ("Deep learning approaches are the state of the art for a wide range of analysis tasks", 160, 454, 15),
]


def test_an_author_block_read_by_ocr_gives_no_headings() -> None:
    boxes = page(
        [
            ("A Unified Toolkit for Document Analysis", 160, 100, 24),
            ("1Allen Institute for AI", 255, 199, 22),
            ("2Brown University", 262, 222, 21),
            ("ruochen-zhang@brown.edu", 252, 240, 22),
            ("5 University of Waterloo", 255, 288, 20),
            ("{melissadell,jacob_carlson}@fas.harvard.edu", 205, 310, 21),
            *BODY,
        ]
    )
    assert headings(layout(boxes)) == ["A Unified Toolkit for Document Analysis"]


def test_a_margin_mark_read_into_a_line_does_not_make_it_a_heading() -> None:
    # an arXiv stamp down the left margin, its pieces read as tall boxes on the lines beside them
    boxes = page(
        [
            *BODY,
            ("and humanities. This paper introduces a library, open source", 160, 472, 16),
            ("and it is publicly available to all of its users and their readers.", 160, 490, 15),
        ]
    )
    boxes += [_Box("1.", 18, 35, 462, 500), _Box("unf", 16, 37, 395, 433)]
    assert headings(layout(boxes)) == []


def test_a_garbled_ocr_line_in_larger_boxes_is_no_heading() -> None:
    boxes = page([("Frchdatet, we trinevmdls fdiferent sesfrdieet eeds", 174, 380, 20), *BODY])
    assert headings(layout(boxes)) == []


def test_a_stamp_set_up_the_margin_is_no_heading_and_does_not_outrank_the_title(tmp_path: Path) -> None:
    stamp = "BT /F1 20 Tf 0 1 -1 0 40 250 Tm (arXiv:2103.15348v2 [cs.CV] 21 Jun 2021) Tj ET"
    pdf = write(
        tmp_path / "paper.pdf",
        [
            [
                text(72, 720, 16, "A Toolkit for Clinics", "F2"),
                stamp,
                text(72, 680, 12, "1 Introduction", "F2"),
                *prose(660, 14),
            ]
        ],
    )
    assert [line for line in pdf_text(pdf).splitlines() if line.startswith("#")] == [
        "# A Toolkit for Clinics",
        "## 1 Introduction",
    ]


def test_a_link_or_an_address_in_large_type_is_no_heading(tmp_path: Path) -> None:
    pdf = write(
        tmp_path / "scan.pdf",
        [
            [
                text(72, 720, 16, "Clinic Letters", "F2"),
                *prose(690, 10),
                text(72, 520, 16, "Source: https://www.example.org/docs/mjgl0226"),
                text(72, 490, 16, "nurse.team@example.org", "F2"),
                *prose(460, 10),
            ]
        ],
    )
    assert headings(pdf_text(pdf)) == ["Clinic Letters"]


def test_a_bold_line_opening_in_lower_case_is_no_heading(tmp_path: Path) -> None:
    # a paragraph's line set in bold for emphasis, as a report's pull-out text is, or a chart's label
    pdf = write(
        tmp_path / "report.pdf",
        [
            [
                text(72, 720, 16, "Clinic Letters", "F2"),
                *prose(690, 6),
                text(72, 590, 11, "cybersecurity strategy and perform effective", "F2"),
                *prose(570, 6),
            ]
        ],
    )
    assert headings(pdf_text(pdf)) == ["Clinic Letters"]


def test_a_scanned_title_in_wider_letters_but_boxes_of_body_height_is_one_heading() -> None:
    # a bold title two points larger: at a scan's low resolution its boxes are as tall as the body's
    # (the recogniser's boxes vary by a few pixels), its letters clearly wider
    title = [
        _Box("A Unified Toolkit for Deep", 160, 360, 114, 132),
        _Box("Learning Based Document Analysis", 157, 420, 134, 148),
    ]
    boxes = [*title, *page([(t, 160, top + 60, h) for t, _left, top, h in BODY])]
    for box in boxes[2:]:
        box.right = box.left + 4.1 * len(box.text.replace(" ", ""))
    markdown = layout(boxes)
    assert headings(markdown) == ["A Unified Toolkit for Deep Learning Based Document Analysis"]


def test_a_logo_or_a_chart_label_read_by_ocr_is_no_heading() -> None:
    debris = [
        ("，司YGE TREASURE", 160, 330, 24),
        ("HARUTO从F. A, HARUTO M", 160, 356, 24),
        ("(W) 0", 160, 382, 24),
    ]
    boxes = page([*debris, *BODY])
    assert headings(layout(boxes)) == []


def test_a_formula_opening_in_large_type_is_no_heading(tmp_path: Path) -> None:
    pdf = write(
        tmp_path / "paper.pdf",
        [[text(72, 720, 16, "Training", "F2"), *prose(690, 6), text(72, 600, 16, "L(qi"), *prose(570, 6)]],
    )
    assert headings(pdf_text(pdf)) == ["Training"]


def test_a_scanned_contents_page_has_no_headings_but_its_title() -> None:
    boxes = page(
        [
            ("Contents", 160, 100, 30),
            ("Diagnosis ..................... 13", 160, 150, 20),
            ("Mammogram ........................ 13", 160, 172, 15),
            ("Treatment ..................... 27", 160, 194, 20),
            ("Surgery ........................... 28", 160, 216, 15),
            *BODY,
        ]
    )
    assert headings(layout(boxes)) == ["Contents"]


def test_a_quotations_source_and_a_remark_in_brackets_are_no_headings(tmp_path: Path) -> None:
    pdf = write(
        tmp_path / "codex.pdf",
        [
            [
                text(72, 720, 16, "Books and Songs", "F2"),
                *prose(690, 5),
                # an em dash, octal 320 in the standard fonts' encoding
                "BT /F2 11 Tf 1 0 0 1 72 610 Tm (\\320From Tales of the Harbour, by Brother Genitivi) Tj ET",
                *prose(590, 5),
                text(72, 510, 11, "(Scribbled in the corner)", "F2"),
                *prose(490, 5),
            ]
        ],
    )
    assert headings(pdf_text(pdf)) == ["Books and Songs"]


def test_a_title_that_the_running_header_repeats_is_kept_on_its_page(tmp_path: Path) -> None:
    first = [text(72, 740, 18, "Waiting Times at the Clinic", "F2"), *prose(700, 30)]
    later = [text(72, 760, 9, "Waiting Times at the Clinic"), *prose(720, 30)]
    pdf = write(tmp_path / "paper.pdf", [first, later, later])
    out = pdf_text(pdf)
    assert headings(out) == ["Waiting Times at the Clinic"]
    assert out.count("Waiting Times at the Clinic") == 1  # the running header on later pages dropped


def test_a_row_of_figures_in_bold_is_no_heading(tmp_path: Path) -> None:
    pdf = write(
        tmp_path / "growth.pdf",
        [
            [
                text(72, 720, 16, "Growth of Population", "F2"),
                *prose(690, 6),
                text(72, 600, 11, "ALL INDIA 21.51 24.80 24.66 23.87", "F2"),
                *prose(580, 6),
            ]
        ],
    )
    assert headings(pdf_text(pdf)) == ["Growth of Population"]


def test_a_formulas_variables_in_large_type_are_no_headings(tmp_path: Path) -> None:
    # a displayed formula's variables set on lines of their own in larger bold type, and a form's word
    # whose first letters are set apart in large type: no words in them, so no headings; the section
    # title and the acronym in the same type are
    page = [
        text(72, 720, 16, "Results", "F2"),
        *prose(700, 4),
        text(200, 630, 16, "wD", "F2"),
        *prose(610, 4),
        text(200, 540, 16, "Xi", "F2"),
        *prose(520, 4),
        text(72, 450, 16, "Le", "F2"),
        *prose(430, 4),
        text(72, 270, 16, "NFC", "F2"),
        *prose(250, 4),
    ]
    out = pdf_text(write(tmp_path / "formula.pdf", [page]))
    assert headings(out) == ["Results", "NFC"]
    assert "wD" in out and "Xi" in out and "Le" in out  # still there, as text
