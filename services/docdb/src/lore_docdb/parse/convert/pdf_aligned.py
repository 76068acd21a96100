"""Tables drawn without ruling lines, found in the geometry of a PDF page's text: lines of the page
(letters whose centres share a height) cut into cells where a gap wider than a space parts them or a
dot leader runs, and a run of such lines whose cells keep to the same columns (gutters of white that
run down all of them) read as a table, each line a row. pdfium's own order reads such a table by
runs of text, so a row's cells may come apart (a first column read whole before the figures beside
it); a row rebuilt from the geometry keeps them together.

What is not a table stays text: prose (long cells), a page set in two columns (long cells in two
columns), lists (a column of bullets or numbers beside text), contents pages (titles and page
numbers parted by leaders) and numbered equations (a column of `(1)`)."""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from typing import Any, NamedTuple

Box = tuple[float, float, float, float]  # left, top, right, bottom; top is -y, as in pdf.py

WORD_GAP = 0.12  # of a line's height: letters further apart than this are two words
CELL_GAP = 0.75  # of a line's height: words further apart than this are two cells (a space is ~0.25)
ROW_GAP = 1.3  # of a line's height: a line further under the one above than this starts a new block
MAX_LONE = 2  # lines of one cell in a row (a group's label, a wrapped cell) that a table may hold
MIN_ROWS = 3  # rows of two filled cells or more that a table has at least
MIN_GUTTER = 0.4  # of the type's height: the narrowest white between two columns
SPANNING = 0.15  # share of a table's rows whose cells may cross a gutter (titles over several columns)
MAX_CELL_WORDS = 5.0  # a table's filled cells hold this many words on average at most: more is prose
LONG_CELL = 9  # words: a cell this long is a sentence
MAX_LONG_SHARE = 0.25  # of a table's filled cells that may be that long
MAX_HEADER_LINES = 4  # lines of a header set over several lines, merged into one row
SPANNING_PROSE = 5  # words: a line at a table's top or foot with a cell this long across a gutter is text
PROSE_CHARS = 20  # a column at a table's side whose cells hold this many characters on average is text
PROSE_FILL = 0.7  # of the rows, filled by such a column: a page's other column of text beside a table

_LEADER = re.compile(r"\s*(?:\.\s*){4,}|\s*(?:…\s*){2,}|\s*_{4,}\s*")
_MARKER = re.compile(r"[•▪◦●○■□◆◇►▶✓✔\-–—*·]|\(?[0-9]{1,2}[.)]|\(?[a-zA-Z][.)]|\(?[ivxIVX]{1,4}[.)]")
_EQUATION_NUMBER = re.compile(r"\(\d{1,3}[a-z]?\)")
_PAGE_NUMBER = re.compile(r"\d{1,4}|[ivxlc]{1,6}", re.IGNORECASE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_NUMERIC = re.compile(r"[-+–−(]?[$€£]?\s?[\d.,]+\s?%?\)?\*?|[-–—]|\(?[xX]\)?|n/?a|\*+")


class _Glyph(NamedTuple):
    char: str
    x0: float
    x1: float
    top: float
    bottom: float


class _Cell(NamedTuple):
    x0: float
    x1: float
    text: str


class _Line(NamedTuple):
    top: float
    bottom: float
    height: float
    cells: list[_Cell]
    leaders: bool  # a dot leader parted two of its cells


def _glyphs(
    textpage: Any, raw: str, view: Callable[[float, float], tuple[float, float]] | None
) -> list[_Glyph]:
    """The page's letters with their loose boxes (the font's height, so a line's letters line up),
    top down; spaces left out (a gap is measured, not read)."""
    import pypdfium2.raw as pdfium_c

    box = pdfium_c.FS_RECTF()
    glyphs: list[_Glyph] = []
    count = textpage.count_chars()
    if len(raw) != count:
        return glyphs
    for index, char in enumerate(raw):
        if char.isspace() or not pdfium_c.FPDFText_GetLooseCharBox(textpage.raw, index, box):
            continue
        x0, x1, y0, y1 = box.left, box.right, box.bottom, box.top
        if view is not None:
            (ax, ay), (bx, by) = view(x0, y0), view(x1, y1)
            x0, x1, y0, y1 = min(ax, bx), max(ax, bx), min(ay, by), max(ay, by)
        if x1 - x0 <= 0 or y1 - y0 <= 0:
            continue
        glyphs.append(_Glyph("-" if char == "\ufffe" else char, x0, x1, -y1, -y0))
    return glyphs


def _lines(glyphs: list[_Glyph]) -> list[_Line]:
    """The page's lines top down: letters whose centres fall within the first letter's height, left to
    right, cut into cells at wide gaps and at dot leaders."""
    order = sorted(glyphs, key=lambda g: (g.top + g.bottom) / 2)
    groups: list[list[_Glyph]] = []
    top = bottom = 0.0
    for glyph in order:
        middle = (glyph.top + glyph.bottom) / 2
        if groups and top <= middle <= bottom:
            groups[-1].append(glyph)
        else:
            groups.append([glyph])
            top, bottom = glyph.top, glyph.bottom
    lines: list[_Line] = []
    for group in groups:
        group.sort(key=lambda g: g.x0)
        height = statistics.median(g.bottom - g.top for g in group)
        cells: list[_Cell] = []
        text, start, end = "", group[0].x0, group[0].x1
        for glyph in group:
            gap = glyph.x0 - end
            if text and gap > CELL_GAP * height:
                cells.append(_Cell(start, end, text))
                text, start = "", glyph.x0
            elif text and gap > WORD_GAP * height:
                text += " "
            text += glyph.char
            end = max(end, glyph.x1)
        cells.append(_Cell(start, end, text))
        parted: list[_Cell] = []
        leaders = False
        for cell in cells:  # a dot leader parts a label from its figure: two cells
            pieces = [p.strip() for p in _LEADER.split(cell.text)]
            leaders = leaders or len(pieces) > 1
            filled = [p for p in pieces if p]
            if len(filled) > 1:  # where the second starts is not known: split the box by characters
                width = (cell.x1 - cell.x0) / max(1, len(cell.text))
                at = cell.x0
                for piece in filled:
                    where = cell.text.find(piece, int((at - cell.x0) / width) if width else 0)
                    x0 = cell.x0 + max(0, where) * width
                    parted.append(_Cell(x0, x0 + len(piece) * width, piece))
                    at = x0 + len(piece) * width
            elif filled:
                parted.append(_Cell(cell.x0, cell.x1, filled[0]))
        if parted:
            lines.append(
                _Line(min(g.top for g in group), max(g.bottom for g in group), height, parted, leaders)
            )
    return lines


def _blocks(lines: list[_Line]) -> list[list[_Line]]:
    """Runs of lines close under each other, most of two cells or more: where a table may stand."""
    blocks: list[list[_Line]] = []
    current: list[_Line] = []
    lone = 0
    for line in lines:
        near = current and line.top - current[-1].bottom <= ROW_GAP * max(line.height, current[-1].height)
        multi = len(line.cells) >= 2
        if current and near and (multi or lone < MAX_LONE):
            current.append(line)
            lone = 0 if multi else lone + 1
        else:
            blocks.append(current)
            current, lone = ([line], 0) if multi else ([], 0)
    blocks.append(current)
    found = []
    for block in blocks:
        while block and len(block[-1].cells) < 2:
            block = block[:-1]
        if sum(len(line.cells) >= 2 for line in block) >= MIN_ROWS:
            found.append(block)
    return found


def _gutters(block: list[_Line]) -> list[float]:
    """The x of each column boundary: the middle of white that runs down the block's lines of two cells
    or more, which a few lines (a title over several columns) may cross."""
    multi = [line for line in block if len(line.cells) >= 2]
    allowed = int(SPANNING * len(multi))
    events: list[tuple[float, int]] = []
    for line in multi:
        for cell in line.cells:
            events += [(cell.x0, 1), (cell.x1, -1)]
    events.sort()
    height = statistics.median(line.height for line in multi)
    left, right = events[0][0], events[-1][0]
    cuts: list[float] = []
    depth = 0
    open_at: float | None = None
    for x, step in events:
        before = depth
        depth += step
        if before > allowed >= depth:
            open_at = x
        elif before <= allowed < depth and open_at is not None:
            if x - open_at >= MIN_GUTTER * height and left < open_at and x < right:
                cuts.append((open_at + x) / 2)
            open_at = None
    return cuts


def _rows(block: list[_Line], cuts: list[float]) -> list[list[str]]:
    rows: list[list[str]] = []
    for line in block:
        row = [""] * (len(cuts) + 1)
        for cell in line.cells:
            column = sum(cell.x0 >= cut for cut in cuts)
            row[column] = f"{row[column]} {cell.text}".strip()
        rows.append(row)
    return rows


def _size(text: str) -> int:
    """A cell's length in words, two letters of Chinese, Japanese or Korean counted as one."""
    return max(len(text.split()), len(_CJK.findall(text)) // 2)


def _trimmed(block: list[_Line], cuts: list[float]) -> tuple[list[_Line], list[float]]:
    """The block without what reads as text beside or over the table: lines at its top or foot with a
    sentence across a gutter (the last line of a paragraph over it), and a column at either side of
    long cells in most rows (the other column of a page set in two)."""

    def spans_prose(line: _Line) -> bool:
        return any(
            _size(cell.text) >= SPANNING_PROSE and any(cell.x0 < cut < cell.x1 for cut in cuts)
            for cell in line.cells
        )

    while block and spans_prose(block[0]):
        block = block[1:]
    while block and spans_prose(block[-1]):
        block = block[:-1]
    changed = True
    while changed and cuts and block:
        changed = False
        for side, cut in ((1, cuts[-1]), (-1, cuts[0])):
            texts = [c.text for line in block for c in line.cells if (c.x0 - cut) * side > 0]
            if len(texts) >= PROSE_FILL * len(block) and statistics.fmean(map(len, texts)) >= PROSE_CHARS:
                kept = [
                    _Line(line.top, line.bottom, line.height, cells, line.leaders)
                    for line in block
                    if (cells := [c for c in line.cells if (c.x0 - cut) * side < 0])
                ]
                block = kept
                cuts = cuts[:-1] if side == 1 else cuts[1:]
                changed = True
                break
    return block, cuts


def _numeric(text: str) -> bool:
    return bool(_NUMERIC.fullmatch(text.strip()))


def _merged(rows: list[list[str]]) -> list[list[str]]:
    """The rows with a header set over several lines as one row (the lines above the first row of
    figures, in a table of figures), and a label wrapped over two lines joined to its figures."""

    def figures(row: list[str]) -> bool:
        filled = [c for c in row[1:] if c]
        return bool(filled) and sum(_numeric(c) for c in filled) * 2 >= len(filled)

    first = next((i for i, row in enumerate(rows) if figures(row)), None)
    if first is not None and 1 < first <= MAX_HEADER_LINES and sum(figures(r) for r in rows) >= MIN_ROWS:
        header = [" ".join(r[j] for r in rows[:first] if r[j]) for j in range(len(rows[0]))]
        rows = [header, *rows[first:]]
    out: list[list[str]] = []
    for row in rows:
        previous = out[-1] if out else None
        continues = bool(row[0]) and row[0][0].islower()
        if previous is not None and continues and not any(previous[1:]):  # label over two lines, figures last
            out[-1] = [f"{previous[0]} {row[0]}", *row[1:]]
        elif previous is not None and continues and not any(row[1:]):  # figures on the label's first line
            out[-1] = [f"{previous[0]} {row[0]}", *previous[1:]]
        else:
            out.append(row)
    return out


def _is_table(rows: list[list[str]], block: list[_Line]) -> bool:
    """Whether rows read from aligned text are a table, not prose, a list, contents or equations."""
    columns = len(rows[0])
    filled = [cell for row in rows for cell in row if cell]
    if columns < 2 or sum(sum(bool(c) for c in row) >= 2 for row in rows) < MIN_ROWS:
        return False
    sizes = [_size(cell) for cell in filled]
    if statistics.fmean(sizes) > MAX_CELL_WORDS or sum(s >= LONG_CELL for s in sizes) > MAX_LONG_SHARE * len(
        sizes
    ):
        return False
    by_column = [[row[j] for row in rows if row[j]] for j in range(columns)]
    if all(_MARKER.fullmatch(c) for c in by_column[0]):  # bullets or numbers beside text: a list
        return False
    last = by_column[-1]
    if last and all(_EQUATION_NUMBER.fullmatch(c) for c in last):
        return False
    filled_columns = [c for c in by_column if c]
    if len(filled_columns) == 2 and all(_PAGE_NUMBER.fullmatch(c) for c in filled_columns[-1]):
        leaders = sum(line.leaders for line in block)
        if 2 * leaders >= len(block) or not any(_numeric(c) for c in filled_columns[0]):
            return False  # a contents page: titles and their page numbers
    return True


def aligned_tables(
    textpage: Any, raw: str, view: Callable[[float, float], tuple[float, float]] | None
) -> list[tuple[Box, str, int]]:
    """The page's tables of aligned text, top first: each one's box, Markdown and count of rows."""
    from lore_docdb.parse.convert.common import md_table

    tables: list[tuple[Box, str, int]] = []
    for block in _blocks(_lines(_glyphs(textpage, raw, view))):
        block, cuts = _trimmed(block, _gutters(block))
        if not cuts or len(block) < MIN_ROWS:
            continue
        rows = _merged(_rows(block, cuts))
        if not _is_table(rows, block):
            continue
        box = (
            min(cell.x0 for line in block for cell in line.cells),
            min(line.top for line in block),
            max(cell.x1 for line in block for cell in line.cells),
            max(line.bottom for line in block),
        )
        tables.append((box, md_table(rows), len(rows)))
    return tables
