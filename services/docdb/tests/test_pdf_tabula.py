"""PDF tables without rules, as tabula-java's test PDFs have them (government statistics, voting records,
disclosures, Hebrew and Arabic reports): each row's cells come back on one line of the converter's
text, in order, and the text around them stays text. The PDFs are written here with hand-written
operators, each table's cells drawn a column at a time so that the text's own order parts a row."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lore_common.testing.pdf import pages_pdf
from lore_docdb.parse.convert.pdf import pdf_text

# a font whose codes 128 to 154 are the Hebrew letters alef to tav (by their glyph names), so that a
# hand-written PDF can set Hebrew; every glyph 556 units wide, a space 278
HEBREW_FONT = (
    "/BaseFont /Helvetica /FirstChar 32 /LastChar 154 /Widths ["
    + " ".join("278" if code == 32 else "556" for code in range(32, 155))
    + "] /Encoding << /Type /Encoding /BaseEncoding /WinAnsiEncoding /Differences [128 "
    + " ".join(f"/uni{0x05D0 + k:04X}" for k in range(27))
    + "] >>"
)


def text(x: float, y: float, words: str, size: float = 10, font: str = "F1") -> str:
    return f"BT /{font} {size} Tf 1 0 0 1 {x} {y} Tm ({words}) Tj ET"


def hebrew(x: float, y: float, words: str, size: float = 10) -> str:
    """Hebrew words drawn as a right-to-left script is set: their letters left to right on the page
    in the reverse of their reading order (what producers write)."""
    drawn = "".join(f"\\{ord(c) - 0x05D0 + 128:03o}" if "\u05d0" <= c <= "\u05ea" else c for c in words[::-1])
    return text(x, y, drawn, size, "F2")


def table_lines(markdown: str) -> list[list[str]]:
    return [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in markdown.splitlines()
        if line.startswith("|") and "---" not in line
    ]


def test_hebrew_labels_read_in_order_beside_their_figures(tmp_path: Path) -> None:
    """A table of figures whose labels, in Hebrew, stand in its right column: each row keeps its
    figures and its label on one line, the label's words in reading order (not each backwards as
    the letters stand left to right), so a search for the label finds its row."""
    rows = [
        ("2.2", "2.4", "5.8", "סך הכל"),
        ("3.8", "3.5", "2.7", "צריכה פרטית"),
        ("2.5", "3.1", "3.6", "בנייה ציבורית"),
        ("7.8", "4.7", "0.1", "יבוא ביטחוני"),
        ("8.6", "2.3", "1.9", "מכונות וציוד"),
    ]
    ops = []
    for j, x in enumerate([300, 350, 400]):  # the figures a column at a time, then the labels
        ops += [text(x, 600 - 16 * i, row[j]) for i, row in enumerate(rows)]
    ops += [hebrew(460, 600 - 16 * i, row[3]) for i, row in enumerate(rows)]
    pdf = tmp_path / "hebrew.pdf"
    pdf.write_bytes(pages_pdf([ops], fonts=("/BaseFont /Helvetica", HEBREW_FONT)))
    assert table_lines(pdf_text(pdf)) == [list(row) for row in rows]


def test_sparse_ledger_keeps_each_label_with_its_amount(tmp_path: Path) -> None:
    """An estimate's table: a column of labels (a group's sub-labels set in), hours and rates for a few
    rows only, a column of amounts. Under 60 % of its places hold text, as a figure's scattered
    labels do; its column of amounts, each beside a label, makes it a table all the same, so each
    label stays on the line of its amount, where the text's own order (a column at a time) parts them."""
    rows = [
        ["", "", "Hours", "Rate", "Cost"],
        ["Parts", "", "", "", "2,100"],
        ["Body Labor", "", "2", "150", "300"],
        ["Paint Labor", "", "1.5", "150", "225"],
        ["Supplies", "", "", "", ""],
        ["", "Paint Supplies", "", "", "60"],
        ["", "Body Supplies", "", "", "30"],
        ["Other Charges", "", "", "", "15"],
        ["Subtotal", "", "", "", "2,730"],
        ["Sales Tax", "", "", "10.20%", "278.46"],
    ]
    ops = [text(72, 700, "Estimate Totals", 12)]
    for j, x in enumerate([72, 150, 250, 300, 360]):
        ops += [text(x, 660 - 16 * i, row[j]) for i, row in enumerate(rows) if row[j]]
    ops.append(text(72, 480, "This is a preliminary estimate for the visible damage of the vehicle only."))
    pdf = tmp_path / "ledger.pdf"
    pdf.write_bytes(pages_pdf([ops]))
    out = pdf_text(pdf)
    got = [[c for c in row if c] for row in table_lines(out)]
    assert got == [[c for c in row if c] for row in rows]
    assert "This is a preliminary estimate for the visible damage of the vehicle only." in out.splitlines()


def columns_at_a_time(rows: list[list[str]], xs: Sequence[float], top: float, pitch: float = 16) -> list[str]:
    """The rows' cells drawn a column at a time, top down (a row of no text in a column skipped)."""
    return [
        text(x, top - pitch * i, row[j]) for j, x in enumerate(xs) for i, row in enumerate(rows) if row[j]
    ]


def test_label_wrapped_over_two_lines_stays_with_its_figures(tmp_path: Path) -> None:
    """A row's label wrapped onto a second line that opens in capitals (`American Indian/` over
    `Alaska Native`), set closer under it than the rows are set apart, is the rest of that label: it
    joins the row's figures, in the table's last row too, and is no row (or text) of its own."""
    rows = [
        ["Group", "Cases", "Rate"],
        ["White", "61,206", "4.7"],
        ["Hispanic", "12,609", "7.7"],
        ["American Indian/", "707", "7.2"],
        ["Asian", "4,050", "4.3"],
        ["Pacific Islander/", "352", "7.8"],
    ]
    wraps = {3: "Alaska Native", 5: "Native Hawaiian"}
    ys, y = [], 640.0
    for i in range(len(rows)):  # rows 16 points apart, a label's second line 12 under its first
        ys.append(y)
        y -= 16 + (12 if i in wraps else 0)
    ops = [text(x, ys[i], row[j]) for j, x in enumerate([72, 200, 260]) for i, row in enumerate(rows)]
    ops += [text(72, ys[i] - 12, rest) for i, rest in wraps.items()]
    ops.append(text(72, y - 30, "Rates are per 100,000 of the population in the year of the survey."))
    pdf = tmp_path / "wrapped.pdf"
    pdf.write_bytes(pages_pdf([ops]))
    out = pdf_text(pdf)
    wanted = [list(row) for row in rows]
    wanted[3][0] = "American Indian/ Alaska Native"
    wanted[5][0] = "Pacific Islander/ Native Hawaiian"
    assert table_lines(out) == wanted
    assert "Rates are per 100,000 of the population in the year of the survey." in out.splitlines()


def test_table_set_in_lower_case_with_repeated_labels_is_a_table(tmp_path: Path) -> None:
    """A table whose labels are set in lower case (`total` under each group) is no prose going on from
    line to line: a sentence does not repeat its words the way a table repeats a label."""
    rows = [
        ["age group", "no.", "rate"],
        ["Women", "", ""],
        ["45–54", "47", "21.8"],
        ["55–64", "116", "85.5"],
        ["total", "163", "107.3"],
        ["Men", "", ""],
        ["45–54", "164", "81.0"],
        ["55–64", "241", "191.7"],
        ["total", "405", "272.7"],
    ]
    rows = [[c.replace("–", "-") for c in row] for row in rows]  # Helvetica's WinAnsi has no en dash
    pdf = tmp_path / "lower.pdf"
    pdf.write_bytes(pages_pdf([columns_at_a_time(rows, [72, 200, 260], 640)]))
    assert table_lines(pdf_text(pdf)) == [list(row) for row in rows]


def test_heading_over_a_group_of_columns_joins_the_header(tmp_path: Path) -> None:
    """A heading centred over some of the columns (`Race/ethnicity` over the races' names) is part of
    the table's header, on the header's line, not a line of text over the table; the caption at the
    table's left edge stays text."""
    rows = [
        ["Year", "Total", "White", "Black", "Hispanic"],
        ["2009", "49,373", "26,753", "8,282", "10,918"],
        ["2010", "49,484", "25,932", "7,916", "11,444"],
        ["2011", "49,522", "25,602", "7,827", "11,759"],
    ]
    xs = [72, 150, 230, 300, 370]
    ops = [
        text(72, 700, "Table 3. Enrollment in public schools, by race/ethnicity"),
        text(270, 676, "Race/ethnicity"),
    ]
    ops += columns_at_a_time(rows, xs, 662)
    pdf = tmp_path / "spanning.pdf"
    pdf.write_bytes(pages_pdf([ops]))
    out = pdf_text(pdf)
    got = table_lines(out)
    assert got[1:] == rows[1:]
    assert " ".join(got[0]).split() == ["Year", "Total", "White", "Race/ethnicity", "Black", "Hispanic"]
    assert "Table 3. Enrollment in public schools, by race/ethnicity" in out.splitlines()


def test_long_labels_beside_figures_stay_in_the_table_over_another_alike(tmp_path: Path) -> None:
    """Two tables of the same long labels (`Projections of Education Statistics to 2017`), one under the
    other: the labels of the one under are rows beside figures, not the page's other column of text
    going on, so each table keeps its column of labels beside its figures."""
    labels = [f"Projections of Education Statistics to {year}" for year in range(2017, 2021)]
    first = [["49,644", "49,825", "50,067"], ["49,470", "49,623", "49,788"], ["48,901", "49,265", "49,312"]]
    second = [["0.7", "1.1", "1.4"], ["0.4", "0.7", "0.8"], ["0.1", "0.2", "0.3"]]
    ops = [text(72, 720, "Table A-3. Example of constructing mean absolute percentage errors", 9)]
    tables = [(690, "Projected enrollment, in thousands", first), (630, "Percentage difference", second)]
    for top, heading, figures in tables:
        ops.append(text(330, top + 12, heading, 8))
        rows = [[label, *row] for label, row in zip(labels, figures, strict=False)]
        ops += [
            op.replace("/F1 10 Tf", "/F1 8 Tf")
            for op in columns_at_a_time(rows, [36, 300, 380, 460], top, 11)
        ]
    pdf = tmp_path / "stacked.pdf"
    pdf.write_bytes(pages_pdf([ops]))
    got = table_lines(pdf_text(pdf))
    for labels_figures in (
        [[label, *row] for label, row in zip(labels, rows, strict=False)] for rows in (first, second)
    ):
        for row in labels_figures:
            assert row in got


def test_header_set_over_five_lines_reads_as_one_row(tmp_path: Path) -> None:
    """A statistics table's header set over five lines (each column's name wrapped in a narrow column)
    reads as one row: each column's whole name in its cell, on one line over the figures."""
    names = [
        ["Education system"],
        ["Percentage of", "international", "desired", "population", "coverage"],
        ["National", "desired", "population", "overall", "exclusion rate"],
        ["Weighted", "school", "participation", "rate before", "substitution"],
    ]
    depth = 5
    header = [[""] * len(names) for _ in range(depth)]
    for j, name in enumerate(names):
        for k, part in enumerate(name[-depth:]):  # bottom-aligned: each name's last line on the last
            header[depth - len(name[-depth:]) + k][j] = part
    body = [["Australia", "100", "4", "96"], ["Austria", "100", "5", "100"], ["Belgium", "100", "6", "77"]]
    pdf = tmp_path / "header.pdf"
    pdf.write_bytes(pages_pdf([columns_at_a_time([*header, *body], [72, 180, 280, 380], 660, 12)]))
    got = table_lines(pdf_text(pdf))
    assert got[:1] == [[" ".join(p for p in name if p) for name in names]]
    assert got[1:] == body
