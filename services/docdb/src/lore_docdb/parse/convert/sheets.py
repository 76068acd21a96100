"""Spreadsheets (XLSX, XLSM, XLS, ODS) with python-calamine and CSV/TSV with the stdlib: every sheet
under its name, its first filled row the header, and each row one line of `column: value` pairs so any
chunk of a long sheet still says which column a value is in."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from lore_docdb.parse.convert.common import cell_text, decode

MAX_ROWS = 100_000  # rows read per sheet: an inflated sheet stops here instead of filling memory


def sheets_markdown(path: Path) -> str:
    from python_calamine import CalamineWorkbook

    book = CalamineWorkbook.from_path(str(path))
    parts = []
    for name in book.sheet_names:
        rows: list[list[object]] = []
        for row in book.get_sheet_by_name(name).iter_rows():
            rows.append(list(row))
            if len(rows) >= MAX_ROWS:
                break
        table = rows_as_text(rows)
        if table:
            parts.append(f"# {name}\n{table}")
    return "\n\n".join(parts)


def csv_markdown(path: Path) -> str:
    text = decode(path.read_bytes())
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(text[:4096])
    except csv.Error:
        dialect = csv.excel_tab if path.suffix.lower() == ".tsv" else csv.excel
    rows: list[list[object]] = [list(row) for row in csv.reader(io.StringIO(text), dialect)]
    return rows_as_text(rows)


def rows_as_text(rows: list[list[object]]) -> str:
    """One line per row after the header, `column: value` pairs joined by `; `."""
    cells = [[cell_text(c) for c in row] for row in rows]
    cells = [row for row in cells if any(row)]
    if not cells:
        return ""
    title = ""
    if len(cells) > 2 and sum(1 for c in cells[0] if c) == 1 and sum(1 for c in cells[1] if c) > 1:
        title = next(c for c in cells[0] if c)  # a title over the table, not its header
        cells = cells[1:]
    header, lines = cells[0], [title] if title else []
    for row in cells[1:]:
        pairs = [f"{h}: {v}" if h else v for h, v in zip(header, row, strict=False) if v]
        if pairs:
            lines.append("; ".join(pairs))
    if not lines:  # a sheet of one row: its cells are the content
        return " | ".join(c for c in header if c)
    return "\n".join(lines)
