"""PDF pages as a trial on Unstructured-IO's example-docs found them read wrong: letters set at a fixed
pitch (a narrow letter's room read as a space), and a page whose paragraphs are drawn in ruled boxes
(read as a table of paragraphs). The PDFs are written here with hand-written operators."""

from __future__ import annotations

from pathlib import Path

from lore_common.testing.pdf import pages_pdf
from lore_docdb.parse.convert.pdf import pdf_text

PROSE = (
    "The harbour board met on the first Monday of the month and heard the reports of the pilots, "
    "the lock keepers and the harbour master on the state of the channel, the moorings and the quays "
    "before it turned to the accounts of the year and the repairs to the north breakwater"
).split()


def write(path: Path, ops: list[str]) -> Path:
    """A one-page PDF of these content operators, /F1 Helvetica."""
    path.write_bytes(pages_pdf([ops]))
    return path


def text(x: float, y: float, size: float, words: str) -> str:
    return f"BT /F1 {size} Tf 1 0 0 1 {x} {y} Tm ({words}) Tj ET"


def pitched(x: float, y: float, words: str, pitch: float, bold: bool = False) -> list[str]:
    """Each letter of the words at its own place, `pitch` points after the last (a space a pitch of
    its own); with `bold`, each drawn twice half a point apart, as faked bold is."""
    ops = []
    for i, letter in enumerate(words):
        if letter != " ":
            ops.append(text(x + i * pitch, y, 12, letter))
            if bold:
                ops.append(text(x + i * pitch + 0.5, y, 12, letter))
    return ops


def test_letters_set_at_a_fixed_pitch_read_as_words_not_pieces(tmp_path: Path) -> None:
    pdf = write(
        tmp_path / "pitch.pdf",
        [
            text(72, 740, 12, "Normal text: Hello World"),
            *pitched(72, 700, "Testing Deduplication of lines", 7, bold=True),
            *pitched(72, 670, "filling little lists", 7),
            text(72, 640, 12, "More normal text: The quick brown fox jumps over the lazy dog."),
        ],
    )
    lines = pdf_text(pdf).splitlines()
    assert "Testing Deduplication of lines" in lines  # was "Test i ng Dedupl i cat i on of l i nes"
    assert "filling little lists" in lines
    assert "More normal text: The quick brown fox jumps over the lazy dog." in lines


def test_letters_drawn_twice_a_little_aside_read_once(tmp_path: Path) -> None:
    # faked bold: each letter drawn again 1.5 points to its right (pdfium takes the wide ones for one)
    widths = {"i": 2.67, " ": 3.34, "r": 4.0, "t": 3.34, "l": 2.67, "f": 3.34}
    ops, x = [], 72.0
    for letter in "Harbour reports filed":
        if letter != " ":
            ops += [text(x, 700, 12, letter), text(x + 1.5, 700, 12, letter)]
        x += widths.get(letter, 6.67)
    ops.append(text(72, 680, 12, "A letter will be sent, all three of them off to the committee."))
    lines = pdf_text(write(tmp_path / "bold.pdf", ops)).splitlines()
    assert lines == [
        "Harbour reports filed",
        "A letter will be sent, all three of them off to the committee.",  # its double letters kept
    ]


def test_words_placed_one_by_one_in_proportional_type_keep_their_spaces(tmp_path: Path) -> None:
    # each word drawn at its own place, no space characters: pdfium's spaces come from the gaps alone
    words = "not even a little x or y is lost in it".split()
    ops, x = [], 72.0
    for word in words:
        ops.append(text(x, 700, 10, word))
        x += 5.56 * len(word) + 2.78
    pdf = write(tmp_path / "words.pdf", ops)
    assert " ".join(words) in pdf_text(pdf)


def box(x0: float, y0: float, x1: float, y1: float) -> list[str]:
    return [
        "0.5 w",
        f"{x0} {y0} m {x1} {y0} l S",
        f"{x0} {y1} m {x1} {y1} l S",
        f"{x0} {y0} m {x0} {y1} l S",
        f"{x1} {y0} m {x1} {y1} l S",
    ]


def paragraph(x: float, y: float, count: int, start: int) -> list[str]:
    """Lines of about 40 characters of body text from y down."""
    ops, at = [], start
    for i in range(count):
        words: list[str] = []
        while sum(len(w) + 1 for w in words) < 40:
            words.append(PROSE[at % len(PROSE)])
            at += 1
        ops.append(text(x, y - i * 13, 10, " ".join(words)))
    return ops


def test_paragraphs_drawn_in_ruled_boxes_read_as_text_not_a_table(tmp_path: Path) -> None:
    # two columns of boxes round the page's paragraphs, as a course outline draws its modules
    ops = [
        *box(60, 420, 560, 760),
        "300 420 m 300 760 l S",
        "60 590 m 560 590 l S",
        text(70, 740, 12, "Module One"),
        *paragraph(70, 720, 8, 0),
        text(310, 740, 12, "Module Two"),
        *paragraph(310, 720, 8, 20),
        text(70, 570, 12, "Module Three"),
        *paragraph(70, 550, 8, 40),
        text(310, 570, 12, "Module Four"),
        *paragraph(310, 550, 8, 60),
    ]
    pdf = write(tmp_path / "outline.pdf", ops)
    out = pdf_text(pdf)
    assert "|" not in out
    flat = " ".join(out.split())
    assert "Module One The harbour board met on the first Monday" in flat
    assert flat.index("Module One") < flat.index("Module Two") < flat.index("Module Three")


def test_a_ruled_table_of_short_cells_is_still_a_table(tmp_path: Path) -> None:
    ops = [*box(72, 600, 372, 690), "222 600 m 222 690 l S", "72 660 m 372 660 l S", "72 630 m 372 630 l S"]
    for row, (name, value) in enumerate((("Pier", "Length"), ("North", "420 m"), ("South", "380 m"))):
        ops += [text(80, 670 - 30 * row, 10, name), text(230, 670 - 30 * row, 10, value)]
    pdf = write(tmp_path / "table.pdf", ops)
    assert "| North | 420 m |" in pdf_text(pdf)


def test_the_rest_of_an_author_line_broken_at_a_footnote_mark_is_no_heading(tmp_path: Path) -> None:
    # pdfium breaks an authors' line after a raised mark; the piece after it starts with a comma
    ops = [
        text(72, 740, 16, "Dense Retrieval of Harbour Records"),
        text(72, 712, 10, "Ann Smith*"),
        text(72, 698, 12, ", Barlas Oguz"),  # as the line's other pieces, in type larger than the body's
        text(72, 684, 10, "University of the North Sea"),
        *paragraph(72, 660, 12, 0),
    ]
    out = pdf_text(write(tmp_path / "authors.pdf", ops))
    assert [line for line in out.splitlines() if line.startswith("#")] == [
        "# Dense Retrieval of Harbour Records"
    ]
    assert ", Barlas Oguz" in out.splitlines()  # was "### , Barlas Oguz"


def test_rules_drawn_across_running_text_make_no_table(tmp_path: Path) -> None:
    """A figure's boxes drawn over the next column's text (pdf.js's TraceMonkey paper read `ol flow
    graph` in a cell and `Figure 7. Contr` outside it): a "table" whose frame cuts words is none."""
    ops = [*box(72, 600, 372, 690), "222 600 m 222 690 l S", "72 660 m 372 660 l S", "72 630 m 372 630 l S"]
    for row, label in enumerate(("Pier", "North", "South")):
        ops.append(text(80, 670 - 30 * row, 10, label))
    column = ("the keeper logs every vessel", "that passes the northern cape", "one by one the lighthouses")
    for row, words in enumerate(column):  # the next column's lines, under the figure's right boxes
        ops.append(text(316, 672 - 30 * row, 10, words))
    out = pdf_text(write(tmp_path / "figure.pdf", ops))
    assert "|" not in out
    assert all(line in out for line in column)  # each line whole, not `the keeper lo` | `gs every`
