"""Spreadsheets (XLSX, XLSM, XLS, ODS) with python-calamine and CSV/TSV with the stdlib, as pipe tables:
every sheet under its name as a heading, each table on it (a block of filled cells set apart from the
others by empty rows or columns) a pipe table whose first row is its header, a merged cell's value in
every cell it covers, and a title row over a table kept as a line above it. The chunker repeats a
table's header row in each chunk of a long one, so any chunk still says which column a value is in."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from lore_docdb.parse.convert.common import cell_text, decode, md_table

MAX_ROWS = 100_000  # rows read per sheet: an inflated sheet stops here instead of filling memory
# Empty cells a table may have between two filled ones in a row or a column and still be one table:
# forms and data sheets leave a spacer column or row; two tables are set apart by more.
TABLE_GAP = 1

Cell = tuple[int, int]


def sheets_markdown(path: Path) -> str:
    from python_calamine import CalamineWorkbook

    book = CalamineWorkbook.from_path(str(path))
    parts = []
    for name in book.sheet_names:
        sheet = book.get_sheet_by_name(name)
        rows: list[list[str]] = []
        for row in sheet.iter_rows():
            rows.append([cell_text(c) for c in row])
            if len(rows) >= MAX_ROWS:
                break
        merged = sheet.merged_cell_ranges or []
        _fill_merged(rows, merged, sheet.start)
        text = sheet_text(rows)
        if text:
            parts.append(f"# {name}\n\n{text}")
    return "\n\n".join(parts)


def csv_markdown(path: Path) -> str:
    text = decode(path.read_bytes())
    try:
        # the delimiters files use: left free, the sniffer takes a letter common to every line for one
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel_tab if path.suffix.lower() == ".tsv" else csv.excel
    rows = [[cell_text(c) for c in row] for row in csv.reader(io.StringIO(text), dialect)]
    return table_text([row for row in rows if any(row)])  # a CSV file is one table


def _fill_merged(rows: list[list[str]], merged: Iterable[Any], start: Cell | None) -> None:
    """A merged cell's value in every cell of its range (calamine leaves all but the first empty), so
    each row reads whole, as HTML's spanned cells do. Ranges are in the sheet's coordinates, `rows`
    starts at the sheet's first used cell."""
    top, left = start or (0, 0)
    for (r0, c0), (r1, c1) in merged:
        r0, r1, c0, c1 = r0 - top, r1 - top, c0 - left, c1 - left
        if not (0 <= r0 < len(rows) and 0 <= c0 < len(rows[r0])):
            continue
        value = rows[r0][c0]
        for r in range(r0, min(r1, len(rows) - 1) + 1):
            row = rows[r]
            for c in range(c0, c1 + 1):
                if c < len(row) and not row[c]:
                    row[c] = value


def _blocks(rows: list[list[str]]) -> list[list[Cell]]:
    """Groups of filled cells that touch through their rows and columns."""
    filled = {(r, c) for r, row in enumerate(rows) for c, value in enumerate(row) if value}
    seen: set[Cell] = set()
    groups: list[list[Cell]] = []
    for cell in sorted(filled):
        if cell in seen:
            continue
        seen.add(cell)
        group, stack = [], [cell]
        while stack:
            r, c = stack.pop()
            group.append((r, c))
            for near in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
                if near in filled and near not in seen:
                    seen.add(near)
                    stack.append(near)
        groups.append(group)
    return groups


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Two spans (first, last) share at least half of the longer one."""
    shared = min(a[1], b[1]) - max(a[0], b[0]) + 1
    return shared * 2 >= max(a[1] - a[0], b[1] - b[0]) + 1


def _tables(rows: list[list[str]]) -> list[list[Cell]]:
    """The sheet's tables in reading order: blocks of touching cells, two of them one table when at
    most TABLE_GAP empty columns (rows) part them and they share half their rows (columns) or more, as
    the parts of a form around a spacer column do; a table beside another that shares only a row or
    two with it stays apart."""
    groups = _blocks(rows)
    owner = {cell: i for i, group in enumerate(groups) for cell in group}
    rows_of = [(min(r for r, _ in g), max(r for r, _ in g)) for g in groups]
    cols_of = [(min(c for _, c in g), max(c for _, c in g)) for g in groups]
    parent = list(range(len(groups)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, group in enumerate(groups):
        for r, c in group:
            for step in range(2, TABLE_GAP + 2):
                for near, across in (((r, c + step), True), ((r + step, c), False)):
                    j = owner.get(near)
                    if j is None or j == i or root(i) == root(j):
                        continue
                    spans = (rows_of[i], rows_of[j]) if across else (cols_of[i], cols_of[j])
                    if _overlap(*spans):
                        parent[root(j)] = root(i)
    tables: dict[int, list[Cell]] = {}
    for i, group in enumerate(groups):
        tables.setdefault(root(i), []).extend(group)
    return sorted(tables.values(), key=lambda g: (min(r for r, _ in g), min(c for _, c in g)))


def sheet_text(rows: list[list[str]]) -> str:
    """Each table of the sheet as a pipe table, a lone cell as a line of text."""
    parts = []
    for group in _tables(rows):
        if len(group) == 1:
            r, c = group[0]
            parts.append(rows[r][c])
            continue
        r0, c0 = min(r for r, _ in group), min(c for _, c in group)
        height = max(r for r, _ in group) + 1 - r0
        width = max(c for _, c in group) + 1 - c0
        block = [[""] * width for _ in range(height)]
        for r, c in group:  # only the table's own cells: another table may lie within its bounds
            block[r - r0][c - c0] = rows[r][c]
        parts.append(table_text([row for row in block if any(row)]))
    return "\n\n".join(p for p in parts if p)


def table_text(rows: list[list[str]]) -> str:
    """A pipe table of the rows, the first its header; a title row over it (one value, the next row
    several) kept as a line above it."""
    if not rows:
        return ""
    title = ""
    if len(rows) > 2 and len(set(filter(None, rows[0]))) == 1 and len(set(filter(None, rows[1]))) > 1:
        title = next(c for c in rows[0] if c)  # a title over the table (merged across it or not)
        rows = rows[1:]
    table = md_table(rows)
    return f"{title}\n\n{table}" if title else table
