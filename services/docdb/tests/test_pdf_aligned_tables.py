"""PDF tables drawn without ruling lines (#40): columns of text aligned down the page, with at most a
few horizontal rules (a paper's "booktabs" table), or rules between the columns only, come out as
Markdown rows whose cells stay together; the prose, list, contents and equations around them stay
text. The PDFs are written here with hand-written operators; each table's cells are drawn a column
at a time, as some producers do, so that the text's own order parts a row's cells."""

from __future__ import annotations

from pathlib import Path

from lore_common.testing.pdf import pages_pdf
from lore_docdb.parse.convert.pdf import pdf_text

HEADER = ["Region", "Sales", "Margin", "Staff"]
ROWS = [
    ["North", "12,400", "8.5", "41"],
    ["South", "9,870", "7.2", "35"],
    ["East", "15,020", "9.1", "52"],
    ["West", "6,310", "5.4", "18"],
]
COLUMNS = [72, 170, 250, 330]
PROSE = (
    "The harbour board met on the first Monday of the month and heard the reports of the pilots",
    "the lock keepers and the harbour master on the state of the channel and the quays before",
    "it turned to the accounts of the year and the repairs to the north breakwater in full.",
)


def write(path: Path, ops: list[str]) -> Path:
    """A one-page PDF of these content operators, /F1 Helvetica."""
    path.write_bytes(pages_pdf([ops]))
    return path


def text(x: float, y: float, words: str, size: float = 10) -> str:
    return f"BT /F1 {size} Tf 1 0 0 1 {x} {y} Tm ({words}) Tj ET"


def rule(x0: float, y0: float, x1: float, y1: float) -> str:
    return f"0.5 w {x0} {y0} m {x1} {y1} l S"


def table(top: float, header: list[str] = HEADER, rows: list[list[str]] = ROWS) -> list[str]:
    """The table's cells a column at a time, top down, 16 points a row."""
    ops = []
    for j, x in enumerate(COLUMNS):
        for i, row in enumerate([header, *rows]):
            ops.append(text(x, top - 16 * i, row[j]))
    return ops


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_booktabs_table_keeps_each_row_with_its_header(tmp_path: Path) -> None:
    top = 600
    pdf = write(
        tmp_path / "booktabs.pdf",
        [
            *(text(72, 700 - 14 * i, line) for i, line in enumerate(PROSE)),
            rule(70, top + 14, 400, top + 14),  # top, middle and bottom rules, no vertical ones
            rule(70, top - 5, 400, top - 5),
            rule(70, top - 16 * len(ROWS) - 5, 400, top - 16 * len(ROWS) - 5),
            *table(top),
            text(72, 480, "Sales are in thousands of euros for the year to the end of March."),
        ],
    )
    lines = pdf_text(pdf).splitlines()
    rows = [cells(line) for line in lines if line.startswith("|") and "---" not in line]
    assert rows == [HEADER, *ROWS]
    assert any(line.startswith("The harbour board met") for line in lines)  # the prose stays prose
    assert "Sales are in thousands of euros for the year to the end of March." in lines


def test_table_ruled_between_columns_only_reads_by_rows(tmp_path: Path) -> None:
    """Rules between the columns, over and under the table and under its header, none between the
    body's rows: the ruled grid has one cell per column holding every row's text (a census table's
    way); the aligned text parts it into rows."""
    body = ROWS + [[f"{name} {k}", "1,000", "1.0", str(k)] for k in range(1, 5) for name in ["Isles"]]
    top, bottom = 600 + 14, 600 - 16 * len(body) - 5
    pdf = write(
        tmp_path / "columns.pdf",
        [
            rule(66, top, 400, top),
            rule(66, 600 - 5, 400, 600 - 5),
            rule(66, bottom, 400, bottom),
            *(rule(x - 6, top, x - 6, bottom) for x in [*COLUMNS, 406]),
            *table(600, rows=body),
        ],
    )
    rows = [cells(line) for line in pdf_text(pdf).splitlines() if line.startswith("|") and "---" not in line]
    assert rows == [HEADER, *body]


def test_prose_lists_contents_and_equations_stay_text_beside_a_table(tmp_path: Path) -> None:
    """Only the table becomes rows: a page set in two columns of prose, a bulleted list, a contents
    page's titles and page numbers, numbered equations and a list of references are no tables."""
    ops = []
    for i in range(6):  # two columns of prose side by side
        ops.append(text(72, 760 - 12 * i, PROSE[i % 3][:44]))
        ops.append(text(320, 760 - 12 * i, PROSE[(i + 1) % 3][:44]))
    for i, item in enumerate(["first the pilots reported", "then the keepers spoke", "and the master last"]):
        ops += [text(72, 670 - 14 * i, "-"), text(90, 670 - 14 * i, item)]
    for i, (title, page) in enumerate([("Introduction", "1"), ("The channel", "4"), ("The quays", "9")]):
        ops += [text(72, 610 - 14 * i, title), text(400, 610 - 14 * i, page)]
    for i, equation in enumerate(["x = a + b", "y = x * x", "z = y - a"]):
        ops += [text(200, 550 - 16 * i, equation), text(480, 550 - 16 * i, f"({i + 1})")]
    for i, reference in enumerate(["A. Smith. Tables.", "B. Jones. Columns.", "C. Brown. Rows."]):
        ops += [text(72, 500 - 12 * i, f"[{i + 1}]"), text(100, 500 - 12 * i, reference)]
    ops += table(440)
    output = pdf_text(write(tmp_path / "mixed.pdf", ops))
    rows = [cells(line) for line in output.splitlines() if line.startswith("|") and "---" not in line]
    assert rows == [HEADER, *ROWS]
    for kept in (
        "first the pilots reported",
        "Introduction",
        "x = a + b",
        "B. Jones. Columns.",
        PROSE[0][:44],
    ):
        assert any(line.strip().endswith(kept) or kept in line for line in output.splitlines()), kept


def test_table_in_one_column_of_a_two_column_paper_leaves_the_other_column_text(tmp_path: Path) -> None:
    """A paper's table set in its right column, beside the left column's paragraph at another line
    pitch: the table's rows come out whole, and the left column's lines stay text, not cells."""
    left = [
        "Retrieval is measured on five data sets of questions",
        "drawn from the web, from trivia leagues and from the",
        "archives of the papers, and each question is matched",
        "with the passages that hold its answer in the corpus",
        "of articles that the systems search before they can",
        "read and answer; the share of the questions for which",
        "an answer stands in the first twenty passages found",
        "is reported for every system and every data set here.",
    ]
    ops = [text(56, 700 - 13 * i, line, 9) for i, line in enumerate(left)]
    header = ["Model", "Top-1", "Top-5", "Top-20"]
    body = [
        ["Gold", "44.9", "66.8", "78.1"],
        ["Sparse", "43.9", "65.3", "77.1"],
        ["Dense", "41.6", "65.0", "77.2"],
    ]
    for j, x in enumerate([320, 400, 450, 500]):
        for i, row in enumerate([header, *body]):
            ops.append(text(x, 696 - 17 * i, row[j], 9))
    ops.append(text(320, 620, "Table 5: Retrieval accuracy on the development set.", 8))
    output = pdf_text(write(tmp_path / "paper.pdf", ops))
    rows = [cells(line) for line in output.splitlines() if line.startswith("|") and "---" not in line]
    assert rows == [header, *body]
    for line in left:
        assert line in output.splitlines()


def test_group_label_wrapped_over_two_ruled_rows_reads_whole_in_its_first_row(tmp_path: Path) -> None:
    """A ruled table whose groups of rows are headed by a label in the first column: a label too long
    for its cell goes on in the row under it ("syndrome"); it reads whole beside its first figures."""
    grid = [
        ["Condition", "Measure", "Men", "Women"],
        ["Allergy problems", "Count", "93", "77"],
        ["", "Percentage", "18.8%", "15.6%"],
        ["Chronic fatigue", "Count", "19", "4"],
        ["syndrome", "Percentage", "3.8%", "0.8%"],
        ["Asthma", "Count", "31", "22"],
        ["", "Percentage", "6.3%", "4.4%"],
        ["Depression", "Count", "48", "12"],
        ["", "Percentage", "9.7%", "2.4%"],
        ["Diabetes", "Count", "1", "1"],
        ["", "Percentage", "0.2%", "0.2%"],
    ]
    xs = [60, 180, 260, 320, 380]
    ops = []
    for i, row in enumerate(grid):
        y = 700 - 16 * i
        ops += [text(xs[j] + 4, y, cell) for j, cell in enumerate(row) if cell]
    ops += [rule(xs[0], 700 + 12 - 16 * i, xs[-1], 700 + 12 - 16 * i) for i in range(len(grid) + 1)]
    ops += [rule(x, 712, x, 712 - 16 * len(grid)) for x in xs]
    rows = [cells(line) for line in pdf_text(write(tmp_path / "groups.pdf", ops)).splitlines() if "|" in line]
    assert ["Chronic fatigue syndrome", "Count", "19", "4"] in rows
    assert ["Allergy problems", "Count", "93", "77"] in rows


# A parts list whose descriptions wrap onto two or three lines while the other columns keep one:
# the code, quantity and price sit on each row's first line. The lines of a description are wrapped
# as a word processor wraps them (each line as full as its column allows) and open in capitals where
# the wrap falls before a name.
PARTS = [
    ("Code", ["Description"], "Qty", "Price"),
    ("A-100", ["Steel bolt with a hexagonal", "Head for the frame, zinc coated"], "120", "0.45"),
    ("A-200", ["Flat washer"], "300", "0.05"),
    (
        "B-310",
        ["Copper pipe cut to length for", "Boiler room with two elbow", "Joints and a drain valve"],
        "12",
        "14.20",
    ),
    ("C-020", ["Rubber seal for the cold tap"], "48", "1.10"),
    ("C-090", ["Brass valve for the cold water", "Main in the north wing"], "6", "22.00"),
]
PARTS_COLUMNS = [72, 130, 300, 350]


def parts_table(top: float, pitch: float, gap: float) -> list[str]:
    """The parts list a column at a time: `pitch` points between a description's lines, `gap` more
    between rows."""
    ops = []
    y = top
    for code, description, qty, price in PARTS:
        ops += [
            text(PARTS_COLUMNS[0], y, code),
            text(PARTS_COLUMNS[2], y, qty),
            text(PARTS_COLUMNS[3], y, price),
        ]
        ops += [text(PARTS_COLUMNS[1], y - pitch * k, line) for k, line in enumerate(description)]
        y -= pitch * len(description) + gap
    return ops


def joined(part: tuple[str, list[str], str, str]) -> list[str]:
    code, description, qty, price = part
    return [code, " ".join(description), qty, price]


def test_description_wrapped_over_lines_stays_in_its_row(tmp_path: Path) -> None:
    """Rows set apart by more white than a description's lines: every wrapped line, the last row's
    too, joins its row, so each row's code, description and figures are one line of the output."""
    ops = [*(text(72, 720 - 14 * i, line) for i, line in enumerate(PROSE)), *parts_table(660, 12, 7)]
    ops.append(text(72, 420, "Prices are in euros and include the delivery to the site."))
    output = pdf_text(write(tmp_path / "parts.pdf", ops))
    rows = [cells(line) for line in output.splitlines() if line.startswith("|") and "---" not in line]
    assert rows == [joined(part) for part in PARTS]
    assert "Prices are in euros and include the delivery to the site." in output.splitlines()
    assert any(line.startswith("The harbour board met") for line in output.splitlines())


def test_description_wrapped_at_the_rows_pitch_stays_in_its_row(tmp_path: Path) -> None:
    """No extra white between rows: a line that only the description fills, under a description line
    too full for its next word, goes on that description. Rows of short names under a group's label
    (their first cell empty) stay rows of their own."""
    grid = [
        ["Region", "Country", "Capital"],
        ["Europe", "France", "Paris"],
        ["", "Germany", "Berlin"],
        ["", "Italy", "Rome"],
        ["Asia", "Japan", "Tokyo"],
        ["", "Nepal", "Kathmandu"],
    ]
    ops = parts_table(700, 12, 0)
    ops.append(text(72, 520, "The capitals of the countries that the parts are shipped to are these."))
    ops += [
        text(x, 480 - 12 * i, cell)
        for i, row in enumerate(grid)
        for x, cell in zip([72, 160, 260], row, strict=True)
        if cell
    ]
    output = pdf_text(write(tmp_path / "tight.pdf", ops))
    rows = [cells(line) for line in output.splitlines() if line.startswith("|") and "---" not in line]
    assert rows == [*(joined(part) for part in PARTS), *grid]


def test_chart_axis_labels_beside_its_legend_are_no_table(tmp_path: Path) -> None:
    """A line chart's text: the y axis's evenly stepped labels down the left, its legend's names set
    beside the top ones, the x axis's years under it. No table comes of it; the labels stay text."""
    ops = [text(60, 700 - 20 * i, f"{60 - 10 * i}") for i in range(7)]  # 60, 50, ... 0 every 20 points
    ops += [text(110, 702 - 20 * i, name) for i, name in enumerate(["Exports", "Imports", "Balance"])]
    ops += [text(100 + 60 * i, 560, str(2019 + i)) for i in range(5)]
    output = pdf_text(write(tmp_path / "chart.pdf", ops))
    assert not any(line.startswith("|") for line in output.splitlines())
    for label in ("Exports", "Imports", "Balance", "2021"):
        assert label in output


def test_label_and_description_wrapped_together_stay_in_their_row(tmp_path: Path) -> None:
    """A budget whose programme name and purpose both wrap onto a second line, the figure on the
    first: the second line's two parts go on their cells of the row, the budget column left empty."""
    grid = [
        (["Programme"], ["Purpose"], "Budget"),
        (["IT Dashboard"], ["Spending on the systems of", "Federal agencies, shown weekly"], "$1.06M"),
        (
            ["Federal Risk Authorization", "Management Program"],
            ["Security reviews of the cloud", "Services that agencies buy"],
            "$0.3M",
        ),
        (["Data.gov"], ["Open data of the government"], "$0.9M"),
        (["Citizen Engagement Platform"], ["Tools for challenges and prizes"], "$0"),
    ]
    ops, y = [], 700
    for name, purpose, budget in grid:
        ops.append(text(400, y, budget))
        ops += [text(72, y - 12 * k, part) for k, part in enumerate(name)]
        ops += [text(235, y - 12 * k, part) for k, part in enumerate(purpose)]
        y -= 12 * max(len(name), len(purpose))
    output = pdf_text(write(tmp_path / "budget.pdf", ops))
    rows = [cells(line) for line in output.splitlines() if line.startswith("|") and "---" not in line]
    assert rows == [[" ".join(name), " ".join(purpose), budget] for name, purpose, budget in grid]


def test_last_row_with_a_label_longer_than_the_others_stays_in_the_table(tmp_path: Path) -> None:
    """The table's last label runs further right than the others, into the white before the figures
    (where the gutter between the columns falls): with its figures beside it, it is the table's last
    row, not a sentence under the table."""
    grid = [
        ["Process", "Items", "Percent"],
        ["Total items", "135", "100"],
        ["Literary experience", "72", "53"],
        ["Acquire and use information", "63", "47"],
        ["Focus on stated information", "33", "24"],
        ["Make inferences", "46", "34"],
        ["Interpret ideas", "38", "28"],
        ["Examine and evaluate content and language", "18", "13"],
    ]
    ops = [
        text(x, 700 - 14 * i, cell)
        for i, row in enumerate(grid)
        for x, cell in zip([72, 300, 360], row, strict=True)
    ]
    output = pdf_text(write(tmp_path / "labels.pdf", ops))
    rows = [cells(line) for line in output.splitlines() if line.startswith("|") and "---" not in line]
    assert rows == grid


def test_definition_wrapped_beside_its_term_stays_in_its_row(tmp_path: Path) -> None:
    """Two columns, a code and its description wrapped over up to three lines, the last row's too:
    each row is one line of the output, and no line of a description is left under the table."""
    ops, y = [], 700.0
    for code, description, _qty, _price in PARTS:
        ops.append(text(72, y, code))
        ops += [text(140, y - 12 * k, line) for k, line in enumerate(description)]
        y -= 12 * len(description) + 4
    output = pdf_text(write(tmp_path / "terms.pdf", ops))
    rows = [cells(line) for line in output.splitlines() if line.startswith("|") and "---" not in line]
    assert rows == [[code, " ".join(description)] for code, description, _qty, _price in PARTS]


def test_table_with_long_wrapped_descriptions_is_no_prose(tmp_path: Path) -> None:
    """Descriptions of twenty words and more over four lines beside one line of figures: the rows'
    cells hold many words, but no more a line than a narrow column holds, so the table is a table
    (each row on one line of the output), not prose."""
    parts = [
        ("Code", ["Description"], "Qty", "Price"),
        (
            "A-100",
            [
                "Steel bolt with a hexagonal",
                "head for the frame, zinc coated",
                "and sold in boxes of fifty with",
                "the nuts and washers to fit",
            ],
            "120",
            "0.45",
        ),
        (
            "B-310",
            [
                "Copper pipe cut to length for",
                "the boiler room with two elbow",
                "joints and a drain valve, with",
                "the clips to hang it from",
            ],
            "12",
            "14.20",
        ),
        (
            "C-020",
            [
                "Rubber seal for the cold tap",
                "in the kitchen of the north",
                "wing, two to a pack and with",
                "a tube of grease for the fitting",
            ],
            "48",
            "1.10",
        ),
        (
            "C-090",
            [
                "Brass valve for the cold water",
                "main in the north wing with",
                "its own key and a spare, and",
                "a plate to mark it on the wall",
            ],
            "6",
            "22.00",
        ),
    ]
    ops, y = [], 700.0
    for code, description, qty, price in parts:
        ops += [text(72, y, code), text(300, y, qty), text(350, y, price)]
        ops += [text(130, y - 12 * k, line) for k, line in enumerate(description)]
        y -= 12 * len(description) + 6
    output = pdf_text(write(tmp_path / "long.pdf", ops))
    rows = [cells(line) for line in output.splitlines() if line.startswith("|") and "---" not in line]
    assert rows == [joined(part) for part in parts]


def test_text_in_a_ruled_tables_box_but_in_none_of_its_cells_is_kept(tmp_path: Path) -> None:
    """A ruled table whose last row is closed under its first cell only (ICDAR's eu-012 and eu-013):
    the words beside that cell stand inside the table's box but in no cell of it, and were lost with
    the table; they stay in the text."""
    xs, ys = [72, 200, 320, 440], [700, 680, 660, 640]
    rows = [["Port", "Ships", "Tonnes"], ["Oban", "12", "4100"], ["Mallaig", "9", "2600"]]
    ops = [text(xs[c] + 6, ys[r] - 14, cell) for r, row in enumerate(rows) for c, cell in enumerate(row)]
    ops += [rule(xs[0], y, xs[3], y) for y in ys] + [rule(x, ys[0], x, ys[3]) for x in xs]
    ops += [rule(xs[0], 620, xs[1], 620), rule(xs[0], ys[3], xs[0], 620), rule(xs[1], ys[3], xs[1], 620)]
    ops += [text(xs[0] + 6, 626, "Total"), text(xs[1] + 6, 626, "21 ships in the 2003 season")]
    markdown = pdf_text(write(tmp_path / "open-row.pdf", ops))
    assert "| Oban | 12 | 4100 |" in markdown
    assert "21 ships in the 2003 season" in markdown


def test_figures_in_one_cell_of_a_ruled_frame_read_by_their_rows(tmp_path: Path) -> None:
    """An estimate's totals drawn in a ruled frame: a title row, one cell holding every line of the
    figures (rules between its columns only), then total and note rows. The frame's 5 rows against
    the figures' 9 lines won, every line's words in one cell (markitdown's repair estimate); the
    frame's rows beside the figures are what counts, and the lines read as the table's rows."""
    items = [
        ("Parts", "", "", "2,100"), ("Body Labor", "2", "150", "300"), ("Paint Labor", "1.5", "150", "225"),
        ("Supplies", "", "", "90"), ("Other Charges", "", "", "15"), ("Subtotal", "", "", "2,730"),
        ("Sales Tax", "", "10.20%", "278.46"), ("Total", "", "", "3,008.46"),
    ]  # fmt: skip
    xs, top = [72, 220, 300, 380, 480], 700
    ops = [text(78, top - 14, "Estimate Totals"), text(220, top - 34, "Hours"), text(300, top - 34, "Rate")]
    ops.append(text(380, top - 34, "Cost"))
    for i, row in enumerate(items):
        ops += [
            text(x + (0 if j == 0 else 6), top - 50 - 16 * i, cell)
            for j, (x, cell) in enumerate(zip(xs, row, strict=False))
            if cell
        ]
    bottom = top - 50 - 16 * len(items)
    ops += [text(78, bottom - 14, "GRAND TOTAL"), text(386, bottom - 14, "3,008.46")]
    ops += [
        text(78, bottom - 34, "Note: parts prices may change."),
        text(78, bottom - 54, "Signed: the estimator."),
    ]
    ops += [rule(xs[0], y, xs[4], y) for y in (top, top - 20, bottom, bottom - 20, bottom - 40, bottom - 60)]
    ops += [rule(x, top, x, bottom - 60) for x in (xs[0], xs[4])]
    ops += [rule(x, top - 20, x, bottom) for x in xs[1:4]]
    lines = pdf_text(write(tmp_path / "estimate.pdf", ops)).splitlines()
    assert "| Body Labor | 2 | 150 | 300 |" in lines
    assert "| Sales Tax |  | 10.20% | 278.46 |" in lines
    assert "| Total |  |  | 3,008.46 |" in lines


def test_a_tables_total_row_at_each_pages_foot_is_no_running_footer(tmp_path: Path) -> None:
    """A statement whose every page ends with its table's total row: the row comes back, digits
    aside, at the foot of each page, as a running footer does, and was dropped as one."""
    pages = []
    for page, (tea, coffee) in enumerate([(12, 30), (17, 26)]):
        xs, ys = [72, 250, 400], [200, 180, 160, 140, 120]
        rows = [["Item", "Sold"], ["Tea", str(tea)], ["Coffee", str(coffee)], ["Total", str(tea + coffee)]]
        ops = [text(72, 700, f"Week {page + 1} of the harbour cafe's sales, as the till recorded them.")]
        ops += [text(xs[c] + 6, ys[r] - 14, cell) for r, row in enumerate(rows) for c, cell in enumerate(row)]
        ops += [rule(xs[0], y, xs[2], y) for y in ys] + [rule(x, ys[0], x, ys[4]) for x in xs]
        pages.append(ops)
    path = tmp_path / "statement.pdf"
    path.write_bytes(pages_pdf(pages))
    first, second = pdf_text(path).split("\f")
    assert "| Total | 42 |" in first.splitlines()
    assert "| Total | 43 |" in second.splitlines()
