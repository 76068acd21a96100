"""PDF paragraphs as real documents set them apart: by a first line set in (LaTeX's default, books,
Korean reports), by a last line that falls short where nothing else parts them, a list's items, a
footnote in smaller type under the text, and paragraphs on a page with a table; and what must stay
one block: a list item's hanging lines, a displayed formula inside a paragraph, a program's lines,
the lines of two columns. The PDFs are written here in Courier (every letter 0.6 of the type's size
wide), so a justified line reaches the column's right edge exactly."""

from __future__ import annotations

from pathlib import Path

from lore_common.testing.pdf import pages_pdf, pdf_bytes
from lore_docdb.parse.convert.pdf import _CONTROL, _headings_again, pdf_text

SIZE = 10.0
PITCH = 0.6 * SIZE  # Courier's advance
LEADING = 12.0

HARBOUR = (
    "The harbour board met on the first Monday of the month and heard the reports of the pilots. "
    "The lock keepers told of the silt that the spring floods had left in the outer channel."
)
ACCOUNTS = (
    "The accounts of the year showed a surplus on the dues of the quays and a loss on the ferry. "
    "The treasurer proposed to raise the fares before the summer season began again."
)
REPAIRS = (
    "Repairs to the north breakwater were put out to tender in March and awarded in May. "
    "Work will start when the autumn gales are over and end before the herring fleet returns."
)
DREDGING = (
    "Dredging of the inner basin is to follow the repairs and will close two berths for a month. "
    "Owners of the boats moored there will be offered places at the fish quay meanwhile."
)


def text(x: float, y: float, words: str, size: float = SIZE, spacing: float = 0.0) -> str:
    escaped = words.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return f"BT /F1 {size} Tf {spacing:.3f} Tw 1 0 0 1 {x:.2f} {y:.2f} Tm ({escaped}) Tj ET"


def wrap(words: list[str], chars: int, first: int) -> list[str]:
    """Words in lines of at most `chars` letters, the first line `first` letters shorter."""
    lines: list[str] = []
    line: list[str] = []
    for word in words:
        room = chars - (first if not lines else 0)
        if line and len(" ".join([*line, word])) > room:
            lines.append(" ".join(line))
            line = []
        line.append(word)
    lines.append(" ".join(line))
    return lines


class Column:
    """A column of text set line under line, justified (each line but a paragraph's last reaches the
    right edge), as a page draws it."""

    def __init__(self, x: float, top: float, chars: int = 60) -> None:
        self.x, self.y, self.chars = x, top, chars
        self.ops: list[str] = []

    def line(self, words: str, indent: float = 0.0, justify: bool = False, size: float = SIZE) -> None:
        spacing = 0.0
        if justify and words.count(" "):
            room = self.chars * PITCH - indent - len(words) * size * 0.6
            spacing = room / words.count(" ")
        self.ops.append(text(self.x + indent, self.y, words, size, spacing))
        self.y -= LEADING * size / SIZE

    def paragraph(self, words: str, indent: int = 0, size: float = SIZE) -> list[str]:
        """A paragraph whose first line is set in by `indent` letters; its lines as set."""
        lines = wrap(words.split(), self.chars, indent)
        for number, line in enumerate(lines):
            last = number == len(lines) - 1
            self.line(line, indent * PITCH if number == 0 else 0.0, justify=not last, size=size)
        return lines


def convert(tmp_path: Path, pages: list[list[str]]) -> list[str]:
    """The converter's blocks (paragraphs, headings, tables) of a PDF of these pages, in Courier."""
    path = tmp_path / "doc.pdf"
    path.write_bytes(pages_pdf(pages, ("/BaseFont /Courier",)))
    return [" ".join(block.split()) for block in pdf_text(path).split("\n\n") if block.strip()]


def test_paragraphs_set_apart_only_by_an_indent_are_blocks_of_their_own(tmp_path: Path) -> None:
    # LaTeX's way: no space between paragraphs, each one's first line set in (the first paragraph
    # after a title is not)
    column = Column(72, 700)
    column.paragraph(HARBOUR)
    for paragraph in (ACCOUNTS, REPAIRS, DREDGING):
        column.paragraph(paragraph, indent=3)
    assert convert(tmp_path, [column.ops]) == [HARBOUR, ACCOUNTS, REPAIRS, DREDGING]


def test_two_columns_of_indented_paragraphs_keep_their_columns_and_paragraphs(tmp_path: Path) -> None:
    left, right = Column(54, 700, chars=40), Column(320, 700, chars=40)
    left.paragraph(HARBOUR, indent=2)
    left.paragraph(ACCOUNTS, indent=2)
    right.paragraph(REPAIRS, indent=2)
    right.paragraph(DREDGING, indent=2)
    assert convert(tmp_path, [left.ops + right.ops]) == [HARBOUR, ACCOUNTS, REPAIRS, DREDGING]


def test_a_list_items_hanging_lines_a_displayed_formula_and_code_stay_together(tmp_path: Path) -> None:
    column = Column(72, 700)
    column.paragraph(HARBOUR, indent=3)
    # a list whose items' lines hang under their first words
    items = [f"{number}. {words}" for number, words in ((1, ACCOUNTS), (2, REPAIRS))]
    for item in items:
        lines = wrap(item.split(), column.chars - 3, 0)
        for at, line in enumerate(lines):
            column.line(line, 0.0 if at == 0 else 3 * PITCH, justify=at < len(lines) - 1)
    # a paragraph with a formula displayed in its middle, set in and centred, and the text going on
    column.line("The depth at the quays follows from the tide and the silt", 3 * PITCH, justify=True)
    column.line("as the pilots measured it:", 0.0)
    column.line("d = h - s + t", 23 * PITCH)
    column.line("where h is the depth at the chart datum and s the silt left by", 0.0, justify=True)
    column.line("the floods of the spring.", 0.0)
    # a program: short lines, some set in
    fares = (
        "The fares of the ferry are reckoned by the age of the passenger and whether a bike comes too, so:"
    )
    column.paragraph(fares, indent=3)
    code = ["def fare(age, bike):", "    base = 3", "    if bike:", "        base += 1", "    return base"]
    for line in code:
        column.line(line)
    blocks = convert(tmp_path, [column.ops])
    assert blocks[0] == HARBOUR
    assert blocks[1:3] == items  # each item one block, its hanging lines with it
    formula = (
        "The depth at the quays follows from the tide and the silt as the pilots measured it: "
        "d = h - s + t where h is the depth at the chart datum and s the silt left by the floods of the "
        "spring."
    )
    assert blocks[3] == formula
    assert blocks[4:] == [fares, " ".join(" ".join(code).split())]  # the program's lines together


def test_a_last_line_falling_short_ends_a_paragraph_where_nothing_else_parts_them(tmp_path: Path) -> None:
    # block style without space between paragraphs: only the short last line tells them apart; a
    # line that ends a sentence at the column's edge goes on in the same paragraph
    column = Column(72, 700, chars=52)
    for paragraph in (HARBOUR, ACCOUNTS, REPAIRS, DREDGING):
        lines = column.paragraph(paragraph)
        assert len(lines[-1]) < column.chars - 12  # the next line's first word would have fitted
    assert convert(tmp_path, [column.ops]) == [HARBOUR, ACCOUNTS, REPAIRS, DREDGING]


def test_a_sentence_ending_at_a_full_lines_end_does_not_part_a_paragraph(tmp_path: Path) -> None:
    column = Column(72, 700)
    column.paragraph(HARBOUR)
    column.line("The pilots asked for a new launch and the board agreed to it.", justify=True)
    column.line("The launch is to be built at the yard by the lock before June", justify=True)
    column.line("and paid for from the surplus of the year.")
    column.line("The lock keepers asked for nothing at all.")
    column.ops.append(text(72, column.y - 40, "Next item"))  # a line that is no paragraph's
    blocks = convert(tmp_path, [column.ops])[1:]
    assert blocks[0] == (
        "The pilots asked for a new launch and the board agreed to it. The launch is to be built "
        "at the yard by the lock before June and paid for from the surplus of the year."
    )
    assert blocks[1] == "The lock keepers asked for nothing at all."


def test_list_items_and_a_footnote_in_smaller_type_are_blocks_of_their_own(tmp_path: Path) -> None:
    column = Column(72, 700)
    column.line("The board resolved the following:", justify=False)
    items = [
        "- to raise the fares of the ferry;",
        "- to tender for the breakwater;",
        "- to dredge the basin.",
    ]
    for item in items:
        column.line(item)
    column.paragraph(HARBOUR)
    column.y -= 18  # the footnote under the text, in smaller type, nearer than a paragraph's space
    note = "1 The minutes of the meeting are kept at the harbour office."
    column.line(note, size=7)
    blocks = convert(tmp_path, [column.ops])
    assert blocks == ["The board resolved the following:", *items, HARBOUR, note]


def test_indented_paragraphs_are_kept_apart_on_a_page_with_a_ruled_table(tmp_path: Path) -> None:
    column = Column(72, 700)
    column.paragraph(HARBOUR)
    column.paragraph(ACCOUNTS, indent=3)
    grid = ["0.5 w"]
    for y in (560, 540, 520):
        grid.append(f"72 {y} m 372 {y} l S")
    for x in (72, 222, 372):
        grid.append(f"{x} 520 m {x} 560 l S")
    cells = [text(80, 546, "Quay"), text(230, 546, "Dues"), text(80, 526, "North"), text(230, 526, "1200")]
    after = Column(72, 490)
    after.paragraph(REPAIRS, indent=3)
    after.paragraph(DREDGING, indent=3)
    blocks = convert(tmp_path, [column.ops + grid + cells + after.ops])
    assert [b for b in blocks if not b.startswith("|")] == [HARBOUR, ACCOUNTS, REPAIRS, DREDGING]
    assert "| North | 1200 |" in blocks[2]


def test_a_paragraph_ending_over_a_figure_is_parted_from_the_text_under_it(tmp_path: Path) -> None:
    # a picture's room (more than four lines' spacing) between a paragraph that ended and the next;
    # a sentence that goes on under the picture stays one paragraph
    top = Column(72, 700)
    top.paragraph(HARBOUR + " The board then turned to the accounts of the")
    under = Column(72, 560)
    under.line("year and to the repairs.")
    under.paragraph(REPAIRS)
    blocks = convert(tmp_path, [top.ops + under.ops])
    assert blocks == [
        HARBOUR + " The board then turned to the accounts of the year and to the repairs.",
        REPAIRS,
    ]


def test_paragraphs_whose_first_letter_pdfium_leaves_out_stay_apart_beside_a_table() -> None:
    # a page with a table is rebuilt from pdfium's characters, which hold a bullet of a font without
    # a Unicode map as a control code that pdfium's text leaves out (redp5110: each item began
    # "\x02 " there and " " in the text): the items set apart in the text stay apart
    marked = "\r\n".join(["Intro of the list:", "", " The pilots measured.", "", " The keepers cleared."])
    tabled = "\n".join(["Intro of the list:", "\x02 The pilots measured.", "\x02 The keepers cleared."])
    blocks = [" ".join(b.split()) for b in _headings_again(tabled, marked).split("\n\n")]
    assert [_CONTROL.sub("", b).strip() for b in blocks] == [
        "Intro of the list:",
        "The pilots measured.",
        "The keepers cleared.",
    ]


def shifted_pdf(path: Path, lines: list[str], right: int = 0) -> Path:
    """A PDF whose font has no Unicode map and whose codes are its glyphs' places in the standard
    Macintosh order (a space 3, `a` 68: 29 below the character's), as some producers write a
    TrueType subset; its last `right` lines in Helvetica, set right."""
    ops = []
    for number, line in enumerate(lines):
        font = 1 if number < len(lines) - right else 2
        codes = [3 if c == " " else ord(c) - 29 for c in line] if font == 1 else [ord(c) for c in line]
        octal = "".join(f"\\{code:03o}" for code in codes)
        ops.append(f"BT /F{font} 11 Tf 72 {700 - 14 * number} Td ({octal}) Tj ET")
    content = "\n".join(ops)
    widths = " ".join(["500"] * 256)
    path.write_bytes(
        pdf_bytes(
            [
                "<< /Type /Catalog /Pages 2 0 R >>",
                "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
                "/Resources << /Font << /F1 6 0 R /F2 7 0 R >> >> >>",
                f"<< /Length {len(content)} >>\nstream\n{content}\nendstream",
                "<< /Type /FontDescriptor /FontName /ABCDEF+Arial /Flags 4 /FontBBox [0 -200 1000 900] "
                "/ItalicAngle 0 /Ascent 900 /Descent -200 /CapHeight 700 /StemV 80 >>",
                "<< /Type /Font /Subtype /TrueType /BaseFont /ABCDEF+Arial /FirstChar 0 /LastChar 255 "
                f"/Widths [{widths}] /FontDescriptor 5 0 R >>",
                "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            ]
        )
    )
    return path


def test_a_font_read_as_its_glyphs_places_in_the_macintosh_order_reads_right(tmp_path: Path) -> None:
    # pdfium reads such a font's codes as characters: "'HXWVFKH*HPHLQGH" for "Deutsche Gemeinde",
    # its spaces lost, its digits and stops control codes
    lines = [
        "Deutsche Gemeinde Schutterwald, Amtsblatt 2025.",
        "Die Bauarbeiten sind nun offiziell gestartet (Tel. 0781/9591-0).",
        "The lock keepers told of the silt in the outer channel.",
    ]
    text = pdf_text(shifted_pdf(tmp_path / "shifted.pdf", lines))
    assert [" ".join(line.split()) for line in text.splitlines() if line.strip()] == lines


def test_only_the_font_read_as_glyph_places_is_read_again(tmp_path: Path) -> None:
    # a page of a font set right beside the shifted one, with control codes of its own (a symbol
    # font's stray codes): its text stays as it is
    lines = [
        "Deutsche Gemeinde Schutterwald",
        "Harbour dues 2025: 1,200 for the north quay.",
        "\x01\x02\x05 quays",
    ]
    text = pdf_text(shifted_pdf(tmp_path / "mixed.pdf", lines, right=2))
    assert [" ".join(line.lstrip("# ").split()) for line in text.splitlines() if line.strip()] == [
        "Deutsche Gemeinde Schutterwald",
        "Harbour dues 2025: 1,200 for the north quay.",
        "quays",
    ]
    text = pdf_text(shifted_pdf(tmp_path / "right.pdf", lines[1:], right=2))
    assert "Harbour dues 2025: 1,200 for the north quay." in text
