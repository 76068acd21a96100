"""Spreadsheets (XLSX, XLSM, XLS, ODS) with python-calamine and CSV/TSV with the stdlib, as pipe tables:
every sheet under its name as a heading, each table on it (a block of filled cells set apart from the
others by empty rows or columns) a pipe table whose first row is its header, a merged cell's value in
every cell it covers, and a title row over a table kept as a line above it. The chunker repeats a
table's header row in each chunk of a long one, so any chunk still says which column a value is in."""

from __future__ import annotations

import csv
import datetime
import io
import re
from collections.abc import Iterable, Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

from lore_docdb.parse.convert.common import ENCRYPTED, cell_text, decode, md_table, refused, rust_panics

MAX_ROWS = 100_000  # rows read per sheet: an inflated sheet stops here instead of filling memory
# Empty cells a table may have between two filled ones in a row or a column and still be one table:
# forms and data sheets leave a spacer column or row; two tables are set apart by more.
TABLE_GAP = 1


def sheets_markdown(path: Path) -> str:
    with rust_panics():  # a corrupt .xls made calamine panic, which took the extraction child down
        return _sheets_markdown(path)


def _sheets_markdown(path: Path) -> str:
    book = _workbook(path)
    notes = _workbook_notes(path) if _format(path) != ".xls" else _xls_notes(path)
    timed = _timed_cells(path) if _format(path) != ".xls" else {}
    parts = []
    names = list(book.sheet_names)
    names += [name for name in notes if name not in names]  # chart sheets: no cells, a chart
    for name in names:
        text = ""
        if name in book.sheet_names:
            sheet = book.get_sheet_by_name(name)
            rows: list[list[str]] = []
            shows_time = timed.get(name, set())
            top, left = sheet.start or (0, 0)
            for row in sheet.iter_rows():
                at = top + len(rows)
                rows.append(
                    [
                        _with_time(c) if (at, left + j) in shows_time else cell_text(c)
                        for j, c in enumerate(row)
                    ]
                )
                if len(rows) >= MAX_ROWS:
                    break
            _fill_merged(rows, sheet.merged_cell_ranges or [], sheet.start)
            text = sheet_text(rows)
        text = "\n\n".join(filter(None, [text, *notes.get(name, [])]))
        if text:
            parts.append(f"# {name}\n\n{text}")
    return "\n\n".join(parts)


def _format(path: Path) -> str:
    """The suffix of the format the file's content is in: an .xls that is really an .xlsx reads too."""
    import zipfile

    with path.open("rb") as handle:
        head = handle.read(8)
    if not head.startswith(b"PK"):
        return ".xls"
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
    except (zipfile.BadZipFile, OSError):
        return ".xlsx"  # calamine says what is wrong with it
    return ".xlsb" if "xl/workbook.bin" in names else ".ods" if "content.xml" in names else ".xlsx"


_SAME_READER = {".xlsm": ".xlsx", ".xlam": ".xlsx", ".xla": ".xls"}


def _workbook(path: Path) -> Any:
    """calamine's workbook, opened as the format its content is in. calamine's reader for a file-like
    object tries each format and, when all fail, says only `Cannot detect file format`: an .xls with a
    password, a damaged one and a workbook calamine refuses for one odd sheet all read the same.
    A password is the reason given; a workbook refused for a sheet that is no worksheet (an Excel 4
    macro sheet, a sheet whose part is missing) is read without that sheet."""
    import tempfile

    from python_calamine import CalamineError, CalamineWorkbook, PasswordError

    kind = _format(path)
    with tempfile.TemporaryDirectory() as folder:
        named = path
        if _SAME_READER.get(path.suffix.lower(), path.suffix.lower()) != kind:
            named = Path(folder) / f"book{kind}"
            named.symlink_to(path.resolve())
        try:
            return CalamineWorkbook.from_path(str(named))
        except PasswordError:
            raise refused(path, ENCRYPTED) from None
        except CalamineError:
            if kind != ".xlsx":
                raise
            worksheets_only = _without_odd_sheets(path)
            if worksheets_only is None:
                raise
            named = Path(folder) / "worksheets.xlsx"
            named.write_bytes(worksheets_only)
            return CalamineWorkbook.from_path(str(named))


_SHEET_KINDS = ("worksheet", "chartsheet")
_WORKSHEET = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet"
_CELL_SHEETS = ("macrosheet", "xlMacrosheet", "dialogsheet")  # cells calamine has no reader for


def _without_odd_sheets(path: Path) -> bytes | None:
    """The XLSX again with its Excel 4 macro sheets and dialog sheets related as worksheets (their
    cells are cells) and the sheets whose part is missing left out of the workbook's list; None when
    it has neither (or cannot be read as a package)."""
    import posixpath
    import zipfile

    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            workbook = etree.fromstring(archive.read("xl/workbook.xml"), parser)
            relations = etree.fromstring(archive.read("xl/_rels/workbook.xml.rels"), parser)
            kinds = {}
            retyped = False
            for relation in relations:
                target = relation.get("Target", "")
                part = target.lstrip("/") if target.startswith("/") else posixpath.join("xl", target)
                kind = relation.get("Type", "").rsplit("/", 1)[-1]
                if posixpath.normpath(part) in names and kind in _CELL_SHEETS:
                    relation.set("Type", _WORKSHEET)
                    kind, retyped = "worksheet", True
                if posixpath.normpath(part) in names:
                    kinds[relation.get("Id", "")] = kind
            sheets = workbook.xpath("//*[local-name()='sheet']")
            missing = [sheet for sheet in sheets if kinds.get(sheet.get(_REL, "")) not in _SHEET_KINDS]
            if len(missing) == len(sheets) or not (missing or retyped):
                return None
            for sheet in missing:
                sheet.getparent().remove(sheet)
            changed = {
                "xl/workbook.xml": etree.tostring(workbook, xml_declaration=True, encoding="UTF-8"),
                "xl/_rels/workbook.xml.rels": etree.tostring(
                    relations, xml_declaration=True, encoding="UTF-8"
                ),
            }
            out = io.BytesIO()
            with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
                for info in archive.infolist():
                    target.writestr(info.filename, changed.get(info.filename) or archive.read(info))
            return out.getvalue()
    except (KeyError, etree.Error, zipfile.BadZipFile, OSError, ValueError):
        return None


MAX_XML_PART = 16 * 1024 * 1024  # one comments, chart or drawing part of a workbook, uncompressed
MAX_SHEET_PART = 256 * 1024 * 1024  # a sheet's cells read again for their formats, uncompressed
_REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"


def _workbook_notes(path: Path) -> dict[str, list[str]]:
    """Per sheet of an XLSX/XLSM workbook, what calamine does not read: its charts' titles, its text
    boxes' paragraphs and its cells' comments (threaded ones with their author and time, the way the
    Office converter writes a document's comments), in workbook order; a chart sheet by its name. {}
    for other formats or an unreadable part: these are extras, the cells are the sheet."""
    import posixpath
    import zipfile

    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, recover=True)
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError):
        return {}

    parts = set(archive.namelist())

    def xml(name: str) -> Any:
        if name not in parts or archive.getinfo(name).file_size > MAX_XML_PART:
            return None
        return etree.fromstring(archive.read(name), parser)

    def rels(part: str) -> list[tuple[str, str, str]]:
        """(id, type's last word, target path) of a part's relationships."""
        folder, name = posixpath.split(part)
        root = xml(posixpath.join(folder, "_rels", name + ".rels"))
        if root is None:
            return []
        return [
            (
                r.get("Id", ""),
                r.get("Type", "").rsplit("/", 1)[-1],
                # a target is relative to the part's folder, or from the package's root ("/xl/...")
                posixpath.normpath(posixpath.join(folder, r.get("Target", ""))).lstrip("/"),
            )
            for r in root
            if r.get("TargetMode") != "External"
        ]

    def texts(node: Any) -> str:
        return " ".join(" ".join(node.xpath(".//*[local-name()='t']/text()")).split())

    def charts(part: str, sheet: bool = True) -> list[str]:
        found = []
        for _, kind, target in rels(part):
            if kind == "drawing" and sheet:  # a sheet's drawing holds its charts (one level: no loops)
                found += charts(target, sheet=False) + text_boxes(target)
            elif kind == "chart":
                root = xml(target)
                titles = (
                    [] if root is None else root.xpath("/*/*[local-name()='chart']/*[local-name()='title']")
                )
                if titles and texts(titles[0]):
                    found.append(f"Chart: {texts(titles[0])}")
        return found

    def text_boxes(part: str) -> list[str]:
        """The paragraphs of the drawing's text boxes and shapes (a sheet's instructions, a note on
        its figures), each once: a shape written twice for older readers has its copy in a
        `Fallback`, and a group's shapes are inside it."""
        root = xml(part)
        if root is None:
            return []
        found: list[str] = []
        shapes = "//*[local-name()='sp'][not(ancestor::*[local-name()='Fallback'])]"
        for paragraph in root.xpath(shapes + "/*[local-name()='txBody']/*[local-name()='p']"):
            text = " ".join("".join(paragraph.xpath(".//*[local-name()='t']/text()")).split())
            if text and text not in found:
                found.append(text)
        return found

    def comments(part: str, people: dict[str, str]) -> list[str]:
        found: list[tuple[str, str]] = []  # (cell, line)
        threaded = False
        for _, kind, target in rels(part):
            root = xml(target) if kind == "threadedComment" else None
            for note in [] if root is None else root:
                threaded = True
                who = people.get(note.get("personId", ""), "")
                said = " ".join(" ".join(note.xpath(".//*[local-name()='text']/text()")).split())
                cell = note.get("ref", "")
                found.append((cell, f"[author: {who}, time: {note.get('dT', '')}, cell {cell}]: {said}"))
        for _, kind, target in rels(part):
            root = xml(target) if kind == "comments" else None
            if root is None:
                continue
            authors = [
                " ".join(a.xpath("string()").split()) for a in root.xpath("//*[local-name()='author']")
            ]
            for note in root.xpath("//*[local-name()='comment']"):
                index = int(note.get("authorId") or 0)
                who = authors[index] if index < len(authors) else ""
                if threaded and who.startswith("tc="):
                    continue  # the legacy copy of a threaded comment, read above
                cell = note.get("ref", "")
                found.append((cell, f"[author: {who}, cell {cell}]: {texts(note)}"))
        return [line for _, line in sorted(found, key=lambda f: _cell_order(f[0]))]  # stable: replies

    notes: dict[str, list[str]] = {}
    try:
        with archive:
            workbook = xml("xl/workbook.xml")
            if workbook is None:
                return {}
            targets = {rid: target for rid, _, target in rels("xl/workbook.xml")}
            people: dict[str, str] = {}  # the authors of threaded comments
            for _, kind, target in rels("xl/workbook.xml"):
                root = xml(target) if kind == "person" else None
                if root is not None:
                    people.update((p.get("id", ""), p.get("displayName", "")) for p in root)
            for sheet in workbook.xpath("//*[local-name()='sheet']"):
                part = targets.get(sheet.get(_REL, ""))
                if part:
                    notes[sheet.get("name", "")] = charts(part) + comments(part, people)
    except (etree.Error, KeyError, ValueError, zipfile.BadZipFile):
        return {}
    return {name: found for name, found in notes.items() if found}


_BOF, _EOF, _BOUNDSHEET, _OBJ, _TXO, _CONTINUE, _NOTE = 0x0809, 0x000A, 0x0085, 0x005D, 0x01B6, 0x003C, 0x001C
_OBJ_NOTE = 0x19  # the object a cell's comment is drawn in


def _xls_text(data: bytes, at: int, count: int, flags_first: bool = True) -> tuple[str, int]:
    """`count` characters of BIFF8 text at `at` (a flags byte, then 8-bit or UTF-16 characters)."""
    wide = bool(data[at] & 1) if flags_first else False
    at += 1 if flags_first else 0
    size = count * 2 if wide else count
    raw = data[at : at + size]
    return raw.decode("utf-16-le" if wide else "latin-1", "replace"), at + size


def _xls_notes(path: Path) -> dict[str, list[str]]:
    """Per sheet of an Excel 97-2003 workbook, what calamine does not read: its text boxes' text and
    its cells' comments (`[author: ..., cell B2]: ...`, as an XLSX's are written), from the
    workbook stream's TXO records and the CONTINUE records holding their text. {} for a BIFF5
    workbook or one this cannot read: these are extras, the cells are the sheet."""
    import struct

    from lore_docdb.parse.convert.word97 import Compound

    try:
        compound = Compound(path.read_bytes())
        stream = compound.stream("Workbook")
    except (ValueError, KeyError, IndexError, struct.error, OSError):
        return {}
    names: dict[int, str] = {}  # a sheet's BOF offset -> its name
    notes: dict[str, list[str]] = {}
    sheet, depth, kind, obj_id = "", 0, 0, 0
    boxes: dict[int, str] = {}  # a comment's object id -> its text
    comments: list[tuple[int, int, int, str]] = []  # row, column, object id, author
    at = 0
    try:
        while at + 4 <= len(stream):
            record, size = struct.unpack_from("<HH", stream, at)
            body = stream[at + 4 : at + 4 + size]
            if record == _BOF:
                depth += 1
                if depth == 1 and at in names:
                    sheet, boxes, comments = names[at], {}, []
                elif depth == 1 and struct.unpack_from("<H", body)[0] != 0x0600:
                    return {}  # BIFF5 and older: another layout
            elif record == _EOF:
                depth -= 1
                if depth == 0 and sheet:
                    for row, column, number, author in sorted(comments):
                        said = boxes.pop(number, "")  # Excel starts it with the author's name
                        said = said[len(author) + 1 :] if said.startswith(author + ":") else said
                        author, said = author.strip(), said.strip()
                        cell = f"{_column_name(column)}{row + 1}"
                        notes.setdefault(sheet, []).append(f"[author: {author}, cell {cell}]: {said}")
                    sheet = ""
            elif record == _BOUNDSHEET and len(body) > 8:
                name, _ = _xls_text(body, 7, body[6])
                names[struct.unpack_from("<I", body)[0]] = name
            elif record == _OBJ and len(body) >= 8 and body[:2] == b"\x15\x00":
                kind, obj_id = struct.unpack_from("<HH", body, 4)
            elif record == _TXO and sheet and len(body) >= 12:
                count, wanted = struct.unpack_from("<H", body, 10)[0], []
                follow = at + 4 + size
                while count > 0 and follow + 5 <= len(stream):
                    following, length = struct.unpack_from("<HH", stream, follow)
                    if following != _CONTINUE or not length:
                        break
                    piece = stream[follow + 4 : follow + 4 + length]
                    wide = bool(piece[0] & 1)
                    text, _ = _xls_text(piece, 0, min(count, (length - 1) // (2 if wide else 1)))
                    wanted.append(text)
                    count -= len(text)
                    follow += 4 + length
                text = " ".join("".join(wanted).split())
                if text and kind == _OBJ_NOTE:
                    boxes[obj_id] = text
                elif text and text not in notes.get(sheet, []):
                    notes.setdefault(sheet, []).append(text)
            elif record == _NOTE and sheet and len(body) >= 11:
                row, column, _, number, length = struct.unpack_from("<HHHHH", body)
                author, _ = _xls_text(body, 10, length)
                comments.append((row, column, number, author))
            at += 4 + size
    except (IndexError, struct.error):
        return {}
    return notes


_TIME_FORMATS = {18, 19, 20, 21, 22, 45, 46, 47}  # Excel's built-in number formats that show a time
_NOT_CODES = re.compile(r'"[^"]*"|\\.|\[[^\]]*\]')  # quoted text, escaped letters, [colours] and [locales]
_ELAPSED = re.compile(r"\[(?:h+|m+|s+)\]", re.IGNORECASE)  # [h]:mm, elapsed time


def _shows_time(code: str) -> bool:
    """Whether a number format shows a time: hours or seconds among its codes (an `m` alone is a
    month), or elapsed time."""
    bare = _NOT_CODES.sub("", code).lower()
    return "h" in bare or "s" in bare or bool(_ELAPSED.search(code))


def _with_time(value: object) -> str:
    """A date-time cell whose format shows its time: calamine reads one at midnight as a date, which
    the sheet shows as `2024-01-01 0:00:00`, and a search for the time found nothing."""
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        value = datetime.datetime.combine(value, datetime.time())
    return cell_text(value)


def _timed_cells(path: Path) -> dict[str, set[tuple[int, int]]]:
    """Per sheet of an XLSX/XLSM workbook, the places (row, column, from 0) of the cells whose number
    format shows a time; {} where no format does (most workbooks: the sheets are not read twice) or
    a part cannot be read."""
    import posixpath
    import zipfile

    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, recover=True)
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError):
        return {}
    found: dict[str, set[tuple[int, int]]] = {}
    try:
        with archive:

            def xml(name: str) -> Any:
                if archive.getinfo(name).file_size > MAX_XML_PART:
                    raise ValueError(name)
                return etree.fromstring(archive.read(name), parser)

            styles = xml("xl/styles.xml")
            codes = {
                int(f.get("numFmtId", "-1")): f.get("formatCode", "")
                for f in styles.xpath("//*[local-name()='numFmts']/*[local-name()='numFmt']")
            }
            formats = [
                int(x.get("numFmtId") or 0)
                for x in styles.xpath("//*[local-name()='cellXfs']/*[local-name()='xf']")
            ]
            timed = {
                str(i)
                for i, f in enumerate(formats)
                if f in _TIME_FORMATS or (f in codes and _shows_time(codes[f]))
            }
            if not timed:
                return {}
            workbook = xml("xl/workbook.xml")
            targets = {
                r.get("Id", ""): posixpath.normpath(posixpath.join("xl", r.get("Target", ""))).lstrip("/")
                for r in xml("xl/_rels/workbook.xml.rels")
            }
            for sheet in workbook.xpath("//*[local-name()='sheet']"):
                part = targets.get(sheet.get(_REL, ""), "")
                if not part.startswith("xl/worksheets/") or archive.getinfo(part).file_size > MAX_SHEET_PART:
                    continue
                places = set()
                with archive.open(part) as stream:
                    for _, cell in etree.iterparse(
                        stream, tag="{*}c", resolve_entities=False, no_network=True
                    ):
                        if cell.get("s") in timed:
                            row, _width, letters = _cell_order(cell.get("r", ""))
                            places.add((row - 1, _column_index(letters)))
                        cell.clear()
                if places:
                    found[sheet.get("name", "")] = places
    except (etree.Error, KeyError, ValueError, zipfile.BadZipFile):
        return {}
    return found


def _column_index(letters: str) -> int:
    """A column's index from its letters: A is 0, AA is 26."""
    index = 0
    for letter in letters.upper():
        index = index * 26 + ord(letter) - 64
    return index - 1


def _column_name(index: int) -> str:
    """A column's letters: 0 is A, 26 is AA."""
    name = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        name = chr(65 + rest) + name
    return name


def _cell_order(ref: str) -> tuple[int, int, str]:
    """An A1-style reference's place in reading order: its row, then its column."""
    letters = ref.rstrip("0123456789")
    digits = ref[len(letters) :]
    return (int(digits) if digits.isdigit() else 0, len(letters), letters)


def csv_markdown(path: Path) -> str:
    text = decode(path.read_bytes())
    try:
        # the delimiters files use: left free, the sniffer takes a letter common to every line for one
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel_tab if path.suffix.lower() == ".tsv" else csv.excel
    rows = [[cell_text(c) for c in row] for row in csv.reader(io.StringIO(text), dialect)]
    return table_text([row for row in rows if any(row)])  # a CSV file is one table


def _fill_merged(rows: list[list[str]], merged: Iterable[Any], start: tuple[int, int] | None) -> None:
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


Run = tuple[int, int, int]  # a row's filled cells side by side: (row, first column, last column)


def _runs(rows: list[list[str]]) -> list[Run]:
    runs: list[Run] = []
    for r, row in enumerate(rows):
        start = -1
        for c, value in enumerate(row):
            if value and start < 0:
                start = c
            elif not value and start >= 0:
                runs.append((r, start, c - 1))
                start = -1
        if start >= 0:
            runs.append((r, start, len(row) - 1))
    return runs


def _facing(upper: list[int], lower: list[int], runs: list[Run]) -> Iterator[tuple[int, int]]:
    """Pairs of runs, one from each list (each in column order), that share a column."""
    a = b = 0
    while a < len(upper) and b < len(lower):
        x, y = runs[upper[a]], runs[lower[b]]
        if x[1] <= y[2] and y[1] <= x[2]:
            yield upper[a], lower[b]
        if x[2] < y[2]:
            a += 1
        else:
            b += 1


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Two spans (first, last) share at least half of the longer one."""
    shared = min(a[1], b[1]) - max(a[0], b[0]) + 1
    return shared * 2 >= max(a[1] - a[0], b[1] - b[0]) + 1


def _tables(rows: list[list[str]]) -> list[list[Run]]:
    """The sheet's tables in reading order: blocks of touching cells, two of them one table when at
    most TABLE_GAP empty columns (rows) part them and they share half their rows (columns) or more, as
    the parts of a form around a spacer column do; a table beside another that shares only a row or
    two with it stays apart. Worked out on runs of filled cells, so a sheet of a million cells takes
    about a second."""
    runs = _runs(rows)
    by_row: dict[int, list[int]] = {}
    for index, (r, _, _) in enumerate(runs):
        by_row.setdefault(r, []).append(index)
    parent = list(range(len(runs)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for r, here in by_row.items():  # blocks: runs that touch the run under them
        for i, j in _facing(here, by_row.get(r + 1, []), runs):
            parent[root(j)] = root(i)
    block = [root(i) for i in range(len(runs))]
    rows_of: dict[int, tuple[int, int]] = {}
    cols_of: dict[int, tuple[int, int]] = {}
    for (r, first, last), b in zip(runs, block, strict=True):
        top, bottom = rows_of.get(b, (r, r))
        rows_of[b] = (min(top, r), max(bottom, r))
        left, right = cols_of.get(b, (first, last))
        cols_of[b] = (min(left, first), max(right, last))
    for r, here in by_row.items():  # tables: blocks a gap of TABLE_GAP cells or fewer parts
        pairs = [(i, j, True) for i, j in pairwise(here) if runs[j][1] - runs[i][2] - 1 <= TABLE_GAP]
        for step in range(2, TABLE_GAP + 2):
            pairs += [(i, j, False) for i, j in _facing(here, by_row.get(r + step, []), runs)]
        for i, j, across in pairs:
            a, b = block[i], block[j]
            if a == b or root(a) == root(b):
                continue
            if _overlap(*((rows_of[a], rows_of[b]) if across else (cols_of[a], cols_of[b]))):
                parent[root(b)] = root(a)
    tables: dict[int, list[Run]] = {}
    for index, run in enumerate(runs):
        tables.setdefault(root(index), []).append(run)
    return sorted(tables.values(), key=lambda t: (t[0][0], min(first for _, first, _ in t)))


def sheet_text(rows: list[list[str]]) -> str:
    """Each table of the sheet as a pipe table, a lone cell as a line of text."""
    parts = []
    for table in _tables(rows):
        if len(table) == 1 and table[0][1] == table[0][2]:
            r, c, _ = table[0]
            parts.append(rows[r][c])
            continue
        r0, c0 = table[0][0], min(first for _, first, _ in table)
        width = max(last for _, _, last in table) + 1 - c0
        block = [[""] * width for _ in range(table[-1][0] + 1 - r0)]
        for r, first, last in table:  # only the table's own cells: another may lie within its bounds
            block[r - r0][first - c0 : last + 1 - c0] = rows[r][first : last + 1]
        parts.append(table_text([row for row in block if any(row)]))
    return "\n\n".join(p for p in parts if p)


def table_text(rows: list[list[str]]) -> str:
    """A pipe table of the rows, the first its header; the title rows over it (one value each,
    merged across the table or not) kept as lines above it, the rows merged across all its width
    under it (notes) as lines below it, and a block of one-value rows alone (titles, notes merged
    across a sheet) as lines: not a table repeating each in every column."""
    if not rows:
        return ""
    wide = max(len(row) for row in rows) > 1  # a one-column table is a list: left whole
    varied = [len(set(filter(None, row))) > 1 for row in rows]  # rows of more than one value
    if wide and not any(varied) and (len(rows) == 1 or len({tuple(row) for row in rows}) > 1):
        return "\n\n".join(next(c for c in row if c) for row in rows)  # titles and notes only
    titles: list[str] = []
    while wide and any(varied) and not varied[0] and len(rows) > 2:
        titles.append(next(c for c in rows[0] if c))
        rows, varied = rows[1:], varied[1:]
    notes: list[str] = []  # rows merged across the whole table under it: its notes
    while any(varied) and len(rows) > 2 and _note(rows):
        notes.insert(0, next(c for c in rows[-1] if c))
        rows, varied = rows[:-1], varied[:-1]
    return "\n\n".join(p for p in [*titles, md_table(rows), *notes] if p)


def _note(rows: list[list[str]]) -> bool:
    """The last row is a note under the table: one value merged across it, or one value in a
    column the table leaves empty (a CSV's `Written in ...` under a table indented by a column)."""
    last = rows[-1]
    if last[0] and all(c == last[0] for c in last):
        return True
    filled = [j for j, c in enumerate(last) if c]
    return len(filled) == 1 and not any(len(row) > filled[0] and row[filled[0]] for row in rows[:-1])


SPREADSHEETML = "urn:schemas-microsoft-com:office:spreadsheet"


def is_spreadsheetml(head: bytes) -> bool:
    """The XML is an Excel 2003 XML workbook (`<Workbook xmlns="urn:...:spreadsheet">`)."""
    return SPREADSHEETML.encode() in head and b"Workbook" in head


def spreadsheetml_markdown(path: Path) -> str:
    """An Excel 2003 XML workbook like any other: each worksheet under its name, its tables as pipe
    tables (cells placed by `ss:Index`, a number as Excel shows it to 15 digits: `1.1`, not
    `1.1000000000000001`). Before, each cell and each document property was a line of its own."""
    from lxml import etree

    ss = "{" + SPREADSHEETML + "}"
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True)
    root = etree.fromstring(path.read_bytes(), parser)
    parts = []
    for sheet in root.iter(ss + "Worksheet"):
        rows: list[list[str]] = []
        for table in sheet.iter(ss + "Table"):
            for row in table.iter(ss + "Row"):
                index = int(row.get(ss + "Index") or len(rows) + 1)
                rows.extend([] for _ in range(index - 1 - len(rows)))
                cells: list[str] = []
                for cell in row.iter(ss + "Cell"):
                    at = int(cell.get(ss + "Index") or len(cells) + 1)
                    cells.extend("" for _ in range(at - 1 - len(cells)))
                    data = cell.find(ss + "Data")
                    text = "" if data is None else "".join(data.itertext())
                    kind = None if data is None else data.get(ss + "Type")
                    if kind == "Number":
                        text = _shown_number(text)
                    elif kind == "DateTime":
                        text = _shown_date(text)
                    cells.append(cell_text(text))
                    cells.extend(cells[-1:] * int(cell.get(ss + "MergeAcross") or 0))
                rows.append(cells)
                if len(rows) >= MAX_ROWS:
                    break
        width = max((len(r) for r in rows), default=0)
        text = sheet_text([r + [""] * (width - len(r)) for r in rows])
        if text:
            parts.append(f"# {sheet.get(ss + 'Name') or 'Sheet'}\n\n{text}")
    return "\n\n".join(parts)


def _shown_number(text: str) -> str:
    """A stored double as Excel shows it: 15 significant digits, a whole number whole."""
    try:
        value = float(text)
    except ValueError:
        return text
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:.15g}"


def _shown_date(text: str) -> str:
    """`2016-04-27T00:00:00.000` as `2016-04-27`, a time kept as `2016-04-27 18:51:58`."""
    day, _, time = text.partition("T")
    time = time.split(".")[0]
    return day if time in ("", "00:00:00") else f"{day} {time}"
