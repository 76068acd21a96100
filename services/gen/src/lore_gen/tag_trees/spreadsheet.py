"""Legacy spreadsheet trees: each row is a leaf, its cells left to right the path; a blank cell ends it."""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from typing import Any

from lore_core.errors import BadRequest

SUPPORTED = (".xlsx", ".xls")


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def _xlsx_rows(content: bytes, sheet: str) -> Iterator[tuple[Any, ...]]:
    import openpyxl

    try:
        book = openpyxl.load_workbook(io.BytesIO(content), read_only=True, data_only=True)
    except Exception as exc:  # a corrupt upload is the client's problem, whatever the reader raises
        raise BadRequest(f"the file is not a readable .xlsx workbook: {exc}") from None
    try:
        names = book.sheetnames
        if sheet in names:
            worksheet = book[sheet]
        elif sheet.isdigit() and int(sheet) < len(names):
            worksheet = book[names[int(sheet)]]
        else:
            raise BadRequest(f"sheet {sheet!r} not found; the workbook has {names}")
        yield from worksheet.iter_rows(values_only=True)
    finally:
        book.close()


def _xls_rows(content: bytes, sheet: str) -> Iterator[tuple[Any, ...]]:
    import xlrd

    try:
        book = xlrd.open_workbook(file_contents=content, on_demand=True)
    except Exception as exc:
        raise BadRequest(f"the file is not a readable .xls workbook: {exc}") from None
    try:
        names = book.sheet_names()
        if sheet in names:
            worksheet = book.sheet_by_name(sheet)
        elif sheet.isdigit() and int(sheet) < len(names):
            worksheet = book.sheet_by_index(int(sheet))
        else:
            raise BadRequest(f"sheet {sheet!r} not found; the workbook has {names}")
        for index in range(worksheet.nrows):
            yield tuple(worksheet.row_values(index))
    finally:
        book.release_resources()


def paths(rows: Iterable[tuple[Any, ...]]) -> Iterator[list[str]]:
    for row in rows:
        path: list[str] = []
        for cell in row:
            text = _text(cell)
            if not text:
                break
            path.append(text)
        if path:
            yield path


def read_paths(filename: str, content: bytes, sheet: str) -> list[list[str]]:
    """The hierarchy paths of a workbook's sheet (by name, or by zero-based index)."""
    lower = filename.lower()
    if lower.endswith(".xlsx"):
        return list(paths(_xlsx_rows(content, sheet)))
    if lower.endswith(".xls"):
        return list(paths(_xls_rows(content, sheet)))
    raise BadRequest(f"unsupported file {filename!r}: upload an .xlsx or .xls workbook")
