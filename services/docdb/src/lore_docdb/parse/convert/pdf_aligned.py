"""Tables drawn without ruling lines, found in the geometry of a PDF page's text: lines of the page
(letters whose centres share a height) cut into cells where a gap wider than a space parts them or a
dot leader runs, and a run of such lines whose cells keep to the same columns (gutters of white that
run down all of them) read as a table, each line a row. pdfium's own order reads such a table by
runs of text, so a row's cells may come apart (a first column read whole before the figures beside
it); a row rebuilt from the geometry keeps them together.

What is not a table stays text: prose (long cells), a page set in two columns (long cells in two
columns), lists (a column of bullets or numbers beside text), contents pages (titles and page
numbers parted by leaders), numbered equations (a column of `(1)`) and a chart's labels (an axis's
evenly stepped figures beside its legend).

A text cell wrapped over several lines beside a row's one line of figures (a description, a long
name) goes on its row, so the row's cells stay on one line of the Markdown: its lines sit under the
row's text, leave some of its columns empty, hold no figures, and are set closer than rows are set
apart, or wrap (the line above was too full for their first word)."""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Callable, Iterable
from itertools import pairwise
from typing import Any, NamedTuple

Box = tuple[float, float, float, float]  # left, top, right, bottom; top is -y, as in pdf.py

WORD_GAP = 0.12  # of a line's height: letters further apart than this are two words
CELL_GAP = 0.75  # of a line's height: words further apart than this are two cells (a space is ~0.25)
ROW_GAP = 1.3  # of a line's height: a line further under the one above than this starts a new block
MAX_LONE = 2  # lines of one cell in a row (a group's label, a wrapped cell) that a table may hold
ONE_ROW = 0.75  # of a line's height: lines whose tops are closer than this are parts of one row
MIN_ROWS = 3  # rows of two filled cells or more that a table has at least
MIN_GUTTER = 0.4  # of the type's height: the narrowest white between two columns
SPANNING = 0.15  # share of a table's rows whose cells may cross a gutter (titles over several columns)
MAX_CELL_WORDS = 5.0  # a table's filled cells hold this many words on average at most: more is prose
LONG_CELL = 9  # words: a cell this long is a sentence
MAX_LONG_SHARE = 0.25  # of a table's filled cells that may be that long
WORD_SPACE = 0.25  # of a line's height: a space's width, as words are set
WRAP_SLACK = 0.1  # of a line's height: room left at a column's right that a wrapped line may leave
ROW_PAD = 0.25  # of a line's height: white that rows are set apart by beyond a wrapped cell's lines
AXIS_SLACK = 0.1  # share of an axis's step in value that its labels may stray by
AXIS_SPACING = 0.3  # share of an axis's step down the page that its lines may stray by (a line's box
# takes in the legend's text beside a label)
WRAP = "\n"  # joins a cell's wrapped lines in its text, so that its words a line can be told (a table's
# Markdown puts the cell on one line)
MAX_HEADER_LINES = 6  # lines of a header set over several lines, merged into one row
STRADDLED = 0.75  # of the gutters under a line's cell that run through its words: a sentence, no header
SPANNING_PROSE = 5  # words: a line at a table's top or foot with a cell this long across a gutter is text
SENTENCE_WORDS = 3  # words of a cell at a table's top that ends a sentence or goes on one: a paragraph's
TITLE_SIZE = 1.15  # times the type of a table's rows: a line at its top in larger type is a title over it
EDGE_LOOK = 3  # lines at a table's top and foot looked at for a title or a paragraph's last line
MIN_FILL = 0.6  # of a table's places that hold text at least: sparser, it is labels in a figure
MIN_KEYED_FILL = 0.4  # the same for a table whose first column labels most rows and last one has figures
KEYED = 0.75  # of a table's rows with a label and a figure in the last column: a ledger (label, …, amount)
MAX_LETTERS = 0.3  # of a table's filled cells that may be a lone letter (a figure's text set on end)
MAX_BULLETED = 0.5  # of a table's filled cells that may open with a bullet: more, lists set side by side
MAX_FLOWING = 0.4  # of a table's cells under another that may open in lower case, as a sentence goes on
SUPERSCRIPT = 0.8  # times the type of a table's rows: a line this small is footnote marks over text
MAX_SUPERSCRIPT = 0.25  # of a table's lines that may be such marks (an author block's affiliations)
GOES_ON = 3.0  # line heights over or under a table in which a page's column of text goes on
FULL_LINE = 0.85  # of the widest line of a column of text: a line this wide is set to the column's width
FULL_SHARE = 0.6  # of a side's lines set to that width: a column of text (a paragraph's last line is short)
MIN_SIDE_CHARS = 4  # characters a line has on a side at least to count there (not a footnote's mark)
PROSE_CHARS = 20  # a column at a table's side whose cells hold this many characters on average is text
PROSE_FILL = 0.7  # of the rows, filled by such a column: a page's other column of text beside a table

_LEADER = re.compile(r"\s*(?:\.\s*){4,}|\s*(?:…\s*){2,}|\s*_{4,}\s*")
_MARKER = re.compile(  # a list's bullet or number, or a reference's number
    r"\[\d{1,3}\]|[•▪◦●○■□◆◇►▶✓✔\-–—*·]|\(?[0-9]{1,2}[.)]|\(?[a-zA-Z][.)]|\(?[ivxIVX]{1,4}[.)]"
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # a glyph without a Unicode map (a box to tick)
_CAPTION = re.compile(r"(?:Table|TABLE|Tab\.)\s*[\dIVXA-Z]")
_BULLETED = re.compile(r"(?:[•▪◦●○■□◆◇►▶✓✔*·]|\d{1,2}[.)]|[a-z][.)])\s")
_EQUATION_NUMBER = re.compile(r"\(\d{1,3}[a-z]?\)")
_PAGE_NUMBER = re.compile(r"\d{1,4}|[ivxlc]{1,6}", re.IGNORECASE)
_RTL = re.compile(r"[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")  # Hebrew and Arabic letters
_NUMBER_RUN = re.compile(r"\d(?:[\d.,:/]*\d)?")
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
    gaps: tuple[tuple[float, float, int], ...] = ()  # spaces between its words: from, to, next word's index


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
        if (
            char.isspace()
            or _CONTROL.match(char)
            or not pdfium_c.FPDFText_GetLooseCharBox(textpage.raw, index, box)
        ):
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
        gaps: list[tuple[float, float, int]] = []
        for glyph in group:
            gap = glyph.x0 - end
            if text and gap > CELL_GAP * height:
                cells.append(_Cell(start, end, text, tuple(gaps)))
                text, start, gaps = "", glyph.x0, []
            elif text and gap > WORD_GAP * height:
                text += " "
                gaps.append((end, glyph.x0, len(text)))
            text += glyph.char
            end = max(end, glyph.x1)
        cells.append(_Cell(start, end, text, tuple(gaps)))
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
                parted.append(cell if filled[0] == cell.text else _Cell(cell.x0, cell.x1, filled[0]))
        if parted:
            lines.append(
                _Line(min(g.top for g in group), max(g.bottom for g in group), height, parted, leaders)
            )
    return lines


def _close(upper: _Line, lower: _Line) -> bool:
    """Whether two lines are set closer than lines of text are: parts of one row (a label over two
    lines beside figures set between them)."""
    return lower.top - upper.top < ONE_ROW * max(upper.height, lower.height)


def _wraps(line: _Line, above: list[_Line], foot: bool = False) -> bool:
    """Whether a line, and each line between it and the last line above of two cells or more, has
    its cells start under a cell of that line, not its first, and end before the next one: a text
    cell's words wrapped onto the lines under its row. Within a run of lines the last of two cells
    is no such cell (that is the other column of a page set in two); at its foot it is."""
    at = next((k for k in range(len(above) - 1, -1, -1) if len(above[k].cells) >= 2), None)
    if at is None:
        return False
    row = above[at].cells
    ends = [c.x0 for c in row[2:]] + ([float("inf")] if len(row) > 2 or foot else [])
    return all(
        any(
            abs(cell.x0 - a.x0) <= max(under.height, above[at].height) and cell.x1 < end
            for a, end in zip(row[1:], ends, strict=False)
        )
        for under in [*above[at + 1 :], line]
        for cell in under.cells
    )


def _blocks(lines: list[_Line]) -> list[list[_Line]]:
    """Runs of lines close under each other, most of two cells or more: where a table may stand. The
    lines of a text cell wrapped under a row's later column stay in the run, however many, once it
    has two rows (a title's lines wrapped under its text do not lead into a table under it)."""
    blocks: list[list[_Line]] = []
    current: list[_Line] = []
    lone = 0
    previous: _Line | None = None
    for line in lines:
        near = current and line.top - current[-1].bottom <= ROW_GAP * max(line.height, current[-1].height)
        multi = len(line.cells) >= 2
        wrapped = (
            not multi and near and sum(len(a.cells) >= 2 for a in current) >= 2 and _wraps(line, current)
        )
        if current and near and (multi or wrapped or lone < MAX_LONE or _close(current[-1], line)):
            current.append(line)
            lone = 0 if multi or wrapped else lone + 1
        else:
            blocks.append(current)
            current, lone = ([line], 0) if multi else ([], 0)
            if multi and previous is not None and len(previous.cells) < 2 and _close(previous, line):
                current.insert(0, previous)  # the first line of a label that a row's figures are beside
        previous = line
    blocks.append(current)
    found = []
    for block in blocks:
        block = _without_foot(block)
        if sum(len(line.cells) >= 2 for line in block) >= MIN_ROWS:
            found.append(block)
    return found


def _spanning_head(block: list[_Line], lines: list[_Line], taken: set[tuple[float, float]]) -> list[_Line]:
    """The lines of one cell right over a table that head a group of its columns (`Race` centred over
    the columns of each race, their names under it): short, in the table's type, within its width
    but not at its left edge, where a caption, a title or a paragraph's last line starts; none that
    another table holds (`taken`: their lines' places)."""
    left = min(cell.x0 for line in block for cell in line.cells)
    right = max(cell.x1 for line in block for cell in line.cells)
    at = [(line.top, line.bottom) for line in lines].index((block[0].top, block[0].bottom))
    head: list[_Line] = []
    for line in reversed(lines[max(0, at - MAX_HEADER_LINES + 1) : at]):
        under = head[0] if head else block[0]
        if len(line.cells) != 1 or (line.top, line.bottom) in taken:
            break
        cell = line.cells[0]
        if not (
            under.top - line.bottom <= ROW_GAP * line.height
            and abs(line.height - under.height) <= WRAP_SLACK * under.height
            and left + line.height < cell.x0
            and cell.x1 <= right + line.height
            and _size(cell.text) < SPANNING_PROSE
            and not cell.text.endswith(".")
            and not (cell.text[0] in "([" and cell.text[-1] in ")]")  # a note of units, `[In thousands]`
        ):
            break
        head.insert(0, line)
    return head


def _without_foot(block: list[_Line]) -> list[_Line]:
    """The block without the lines of one cell at its foot (text under the table, its caption), but
    for a label's line set close under its row, the wrapped lines of a row's text cell, and the last
    line of the last row's label (`_label_goes_on`)."""
    whites = [b.top - a.bottom for a, b in pairwise(block) if len(a.cells) >= 2 and len(b.cells) >= 2]
    leading = statistics.median(whites) if len(whites) >= MIN_ROWS - 1 else None
    while (
        len(block) > 1
        and len(block[-1].cells) < 2
        and not (len(block[-2].cells) >= 2 and _close(block[-2], block[-1]))
        and not _wraps(block[-1], block[:-1], foot=True)
        and not (len(block[-2].cells) >= 2 and _label_goes_on(block[-2], block[-1], leading))
    ):
        block = block[:-1]
    return block


def _label_goes_on(upper: _Line, lower: _Line, leading: float | None) -> bool:
    """Whether a line of one cell is the rest of the label of the row over it (`American Indian/` over
    `Alaska Native`, beside the row's figures): set under the label, in its type, within its column,
    and closer under that line than the table's rows are set apart (the white over a line that opens
    a row, `leading`). A group's label under a row stands as far from it as rows do."""
    if leading is None or len(lower.cells) != 1:
        return False
    cell, label = lower.cells[0], upper.cells[0]
    return (
        lower.top - upper.bottom < leading - ROW_PAD * lower.height
        and abs(cell.x0 - label.x0) <= lower.height
        and abs(lower.height - upper.height) <= WRAP_SLACK * upper.height
        and (len(upper.cells) < 2 or cell.x1 < upper.cells[1].x0)
        and not _numeric(cell.text)
    )


def _gutters(block: list[_Line]) -> list[float]:
    """The x of each column boundary: the middle of white that runs down the block's lines of two cells
    or more, which a few lines (a title over several columns) may cross."""
    multi = [line for line in block if len(line.cells) >= 2]
    if len(multi) < 2:
        return []
    typical = statistics.median(len(line.cells) for line in multi)
    heads = [line for line in block[:EDGE_LOOK] if len(line.cells) < typical]  # a header over columns
    if len(multi) - len(heads) >= MIN_ROWS:
        multi = [line for line in multi if line not in heads]
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
    """The block's rows of cells, one per line, or per run of lines set closer than lines of text,
    or per line and the lines under it that go on its text cells (`_goes_under`). A table whose
    lines of text in a row's later columns more often start the row under them than end the row
    over them sets its cells centred on their row: there, where a row's text ends and the next one's
    starts is not told by its wrapping, and its lines stay rows of their own."""
    placed = [
        [
            (sum((x0 + x1) / 2 >= cut for cut in cuts), x0, x1, text)
            for cell in line.cells
            for x0, x1, text in _pieces(cell, cuts)
        ]
        for line in block
    ]
    right: dict[int, float] = {}  # per column, where its widest line ends: the width its text wraps at
    for column, _x0, x1, _text in (piece for pieces in placed for piece in pieces):
        right[column] = max(right.get(column, x1), x1)
    starts = [  # the white over each line that opens a row (a first column's cell)
        line.top - above.bottom
        for above, line, pieces in zip(block, block[1:], placed[1:], strict=False)
        if any(column == 0 for column, *_ in pieces)
    ]
    leading = statistics.median(starts) if len(starts) >= MIN_ROWS - 1 else None
    ways = [_wraps_on(k, placed, right, line.height) for k, line in enumerate(block)]
    loose = [way for way, pieces in zip(ways, placed, strict=True) if pieces and all(c for c, *_ in pieces)]
    centred = sum(down and not up for up, down in loose) > sum(up and not down for up, down in loose)
    rows: list[list[str]] = []
    full: list[bool] = []  # per row, whether a line of it has cells beyond the first column
    for k, (line, pieces) in enumerate(zip(block, placed, strict=True)):
        beyond = any(cell.x0 >= cuts[0] for cell in line.cells)
        # lines closer than lines of text are one row, but two rows of figures stay two
        close = k > 0 and _close(block[k - 1], line) and not (beyond and full[-1])
        white = line.top - block[k - 1].bottom
        wrapped = (
            k > 0
            and not close
            and _goes_under(pieces, rows[-1], ways[k][0] and not centred, line.height, white, leading)
        )
        label = (  # the rest of the label of the row over it, beside the row's figures
            k > 0
            and not (close or wrapped)
            and full[-1]
            and bool(rows[-1][0])
            and all(column == 0 for column, *_ in pieces)
            and _label_goes_on(block[k - 1], line, leading)
        )
        if close or wrapped or label:
            full[-1] = full[-1] or beyond
            row = rows[-1]
        else:
            row = [""] * (len(cuts) + 1)
            rows.append(row)
            full.append(beyond)
        for column, _x0, _x1, text in pieces:
            row[column] = f"{row[column]}{WRAP if wrapped else ' '}{_logical(text)}".strip()
    return rows


def _flipped(word: str) -> str:
    """A word of Hebrew or Arabic read in logical order from its letters left to right, its figures
    kept as they read (`12.5` stays)."""
    return _NUMBER_RUN.sub(lambda m: m.group(0)[::-1], word[::-1])


def _logical(text: str) -> str:
    """A cell's text in the order it is read, from its letters set left to right: Hebrew and Arabic
    words (read right to left) turned back, and in a cell mostly of them, their order too, runs of
    Latin words and figures among them kept as they stand. The page's text (pdfium's) has them in
    order; a cell built from the geometry would have each word backwards."""
    if not _RTL.search(text):
        return text
    words = text.split(" ")
    rtl = [bool(_RTL.search(w)) for w in words]
    ltr = [  # Latin words and figures: they read left to right among the others
        not r and (any(c.isalpha() for c in w) or _numeric(w)) for w, r in zip(words, rtl, strict=True)
    ]
    latin = sum(c.isalpha() and not _RTL.match(c) for c in text)
    if len(_RTL.findall(text)) > latin:  # read right to left: the words backwards, Latin runs kept
        out: list[str] = []
        run: list[str] = []
        for word, forward in reversed(list(zip(words, ltr, strict=True))):
            if forward:
                run.insert(0, word)
                continue
            out += run
            run = []
            out.append(_flipped(word))
        return " ".join(out + run)
    out = []
    k = 0
    while k < len(words):  # read left to right: each run of Hebrew or Arabic words turned back
        if not rtl[k]:
            out.append(words[k])
            k += 1
            continue
        end = k
        while end + 1 < len(words) and not ltr[end + 1] and (rtl[end + 1] or end + 2 < len(words)):
            end += 1
        while not rtl[end]:
            end -= 1
        out += [_flipped(w) for w in reversed(words[k : end + 1])]
        k = end + 1
    return " ".join(out)


def _full(
    above: tuple[float, float, str] | None, piece: tuple[float, float, str], right: float, height: float
) -> bool:
    """Whether a piece of a column's text (x0, x1, text) starts under the piece above, of two words
    or more, that its first word would not have fitted after: as full as the column's widest line
    (which ends at `right`) allows, so its text wrapped there."""
    if above is None or len(above[2].split()) < 2 or abs(piece[0] - above[0]) > height:
        return False
    word = (piece[1] - piece[0]) * len(piece[2].split()[0]) / len(piece[2])
    return above[1] + WORD_SPACE * height + word > right - WRAP_SLACK * height


def _wraps_on(
    k: int, placed: list[list[tuple[int, float, float, str]]], right: dict[int, float], height: float
) -> tuple[bool, bool]:
    """Whether each piece of line k wraps on the nearest piece over it in its column (`_full`), and
    whether the line under it, if it opens a row (a first column's cell), wraps on line k in each."""

    def over(column: int) -> tuple[float, float, str] | None:
        return next(
            ((x0, x1, t) for line in reversed(placed[:k]) for c, x0, x1, t in line if c == column), None
        )

    pieces = placed[k]
    up = (
        k > 0
        and bool(pieces)
        and all(_full(over(c), (x0, x1, t), right[c], height) for c, x0, x1, t in pieces)
    )
    under = placed[k + 1] if k + 1 < len(placed) else []
    heads = {c: (x0, x1, t) for c, x0, x1, t in under} if any(c == 0 for c, *_ in under) else {}
    down = bool(heads) and all(
        c in heads and _full((x0, x1, t), heads[c], right[c], height) for c, x0, x1, t in pieces
    )
    return up, down


def _goes_under(
    pieces: list[tuple[int, float, float, str]],
    row: list[str],
    wraps: bool,
    height: float,
    white: float,
    leading: float | None,
) -> bool:
    """Whether a line's text goes on the text cells of the row above (a description wrapped over
    several lines beside one line of figures): no figures, text only under the row's text, in some
    of its columns but not all, not in the first alone (a label's line, `joined_labels`); and the
    line set closer under the row than rows are set apart, or its text wrapped from the row's
    (`wraps`) within the white that parts rows."""
    if not pieces or any(_numeric(text) for *_, text in pieces):
        return False
    if any(not row[column] or all(map(_numeric, row[column].split())) for column, *_ in pieces):
        return False
    filled = {column for column, *_ in pieces}
    empty = {j for j, cell in enumerate(row) if cell and j not in filled}  # the row's columns left out
    if filled == {0} or not empty:
        return False
    if leading is not None and white < leading - ROW_PAD * height and empty - {0}:
        return True
    return wraps and (leading is None or white <= leading + ROW_PAD * height)


def _straddles(cell: _Cell, cuts: list[float], least: int = 1) -> bool:
    """Whether gutters run through a cell's words, not through spaces between them (`least` of them
    at least, and most of those under it): a sentence or a title set across the table's columns;
    a header's words over several columns leave the gutters between them."""
    under = [cut for cut in cuts if cell.x0 < cut < cell.x1]
    through = [cut for cut in under if not any(a <= cut <= b for a, b, _ in cell.gaps)]
    return len(through) >= least and len(through) >= STRADDLED * len(under)


def _pieces(cell: _Cell, cuts: list[float]) -> list[tuple[float, float, str]]:
    """A cell's text parted where a gutter runs through a space between its words (a header's words
    over two columns set close), with where each part stands; a title over several columns whose
    words straddle the gutters stays whole."""
    splits = [
        (at_x0, at_x1, index)
        for at_x0, at_x1, index in cell.gaps
        if any(at_x0 <= cut <= at_x1 for cut in cuts)
    ]
    if not splits:
        return [(cell.x0, cell.x1, cell.text)]
    pieces = []
    x0, start = cell.x0, 0
    for at_x0, at_x1, index in splits:
        pieces.append((x0, at_x0, cell.text[start:index].strip()))
        x0, start = at_x1, index
    pieces.append((x0, cell.x1, cell.text[start:].strip()))
    return pieces


def _size(text: str) -> int:
    """A cell's length in words, two letters of Chinese, Japanese or Korean counted as one."""
    return max(len(text.split()), len(_CJK.findall(text)) // 2)


def _trimmed(block: list[_Line], cuts: list[float], page: list[_Line]) -> tuple[list[_Line], list[float]]:
    """The block without what reads as text beside or over the table: lines at its top or foot in
    larger type (a title) or with a sentence across a gutter (the last line of a paragraph over it),
    and a column at either side of long cells in most rows whose text goes on over or under the
    block (the other column of a page set in two; a table's column of descriptions ends with it)."""

    body = statistics.median(line.height for line in block)

    def text_line(line: _Line) -> bool:  # a row's figures beside a long label make it no text line
        figures = sum(_numeric(cell.text) for cell in line.cells[1:])
        return (figures < 2 or figures * 2 < len(line.cells) - 1) and (
            line.height > TITLE_SIZE * body
            or bool(_CAPTION.match(line.cells[0].text))
            or any(_size(cell.text) >= SPANNING_PROSE and _straddles(cell, cuts) for cell in line.cells)
        )

    def sentence_end(line: _Line) -> bool:  # the last line of a paragraph over the table
        return any(
            _size(cell.text) >= SENTENCE_WORDS
            and (cell.text[-1] in ".?!" or (cell.text[0].islower() and _straddles(cell, cuts)))
            for cell in line.cells
        )

    def goes_on(side: int, cut: float, width: float) -> bool:  # a line beside figures is a table's row
        top, bottom, reach = block[0].top, block[-1].bottom, GOES_ON * body
        return any(
            (cell.x0 - cut) * side > 0
            and (cell.x1 - cut) * side > 0  # all on that side: a title over the whole table is no column
            and cell.x1 - cell.x0 >= FULL_LINE * width
            for line in page
            if (top - reach <= line.bottom <= top or bottom <= line.top <= bottom + reach)
            and not figures_beside(line, side, cut)
            for cell in line.cells
        )

    def figures_beside(line: _Line, side: int, cut: float) -> bool:
        there = [c.text for c in line.cells if (c.x0 - cut) * side < 0]
        return bool(there) and 2 * sum(map(_numeric, there)) >= len(there)

    changed = True
    sides = 0  # columns of text beside the table taken off
    while changed and cuts and block:
        changed = False
        for side, cut in ((1, cuts[-1]), (-1, cuts[0])):
            side_cells = [c for line in block for c in line.cells if (c.x0 - cut) * side > 0]
            if len(side_cells) < PROSE_FILL * len(block):
                continue
            spans = []  # per line with text on that side, where the text there starts and ends
            for line in block:
                there = [c for c in line.cells if (c.x0 - cut) * side > 0]
                if sum(len(c.text) for c in there) >= MIN_SIDE_CHARS:
                    spans.append((min(c.x0 for c in there), max(c.x1 for c in there)))
            width = max((x1 - x0 for x0, x1 in spans), default=0.0)
            full = sum(x1 - x0 >= FULL_LINE * width for x0, x1 in spans)
            if (
                statistics.fmean(len(c.text) for c in side_cells) >= PROSE_CHARS
                and full >= FULL_SHARE * len(spans)  # lines set to a column's width, not labels
                and goes_on(side, cut, width)
            ):
                kept = [
                    _Line(line.top, line.bottom, line.height, cells, line.leaders)
                    for line in block
                    if (cells := [c for c in line.cells if (c.x0 - cut) * side < 0])
                ]
                block = kept
                cuts = cuts[:-1] if side == 1 else cuts[1:]
                changed = True
                sides += 1
                break
    block = _without_foot(block)  # text under the table (its caption), now that the text beside it is gone
    if len(block) < MIN_ROWS:
        return block, []
    if sides:
        cuts = _gutters(block)  # the table's own columns, without the text beside it
    top = [i for i, line in enumerate(block[:EDGE_LOOK]) if text_line(line) or sentence_end(line)]
    block = block[top[-1] + 1 :] if top else block
    foot = [i for i, line in enumerate(block[-EDGE_LOOK:]) if text_line(line)]
    block = block[: len(block) - EDGE_LOOK + foot[0]] if foot and len(block) >= EDGE_LOOK else block
    return block, cuts


def _numeric(text: str) -> bool:
    return bool(_NUMERIC.fullmatch(text.strip()))


def _merged(rows: list[list[str]]) -> list[list[str]]:
    """The rows with a header set over several lines as one row (the lines above the first row of
    figures, in a table of figures), a label wrapped over two lines joined to its figures, and the
    lines of cells wrapped over several joined to their row."""

    def figures(row: list[str]) -> bool:  # a row of figures after its label
        filled = [c for c in row[1:] if c]
        return bool(filled) and sum(_numeric(c) for c in filled) * 2 >= len(filled)

    first = next((i for i, row in enumerate(rows) if figures(row)), None)
    while first and rows[first - 1][0] and not any(rows[first - 1][1:]):
        first -= 1  # the labels of the first group of rows, under the header
    if (
        first is not None
        and 1 < first <= MAX_HEADER_LINES
        and sum(figures(r) for r in rows) >= MIN_ROWS
        and not any(_numeric(c) for r in rows[:first] for c in r if c)
    ):
        header = [" ".join(r[j] for r in rows[:first] if r[j]) for j in range(len(rows[0]))]
        rows = [header, *rows[first:]]
    out: list[list[str]] = []
    for row in joined_labels(rows):
        if out and _goes_on(out[-1], row):
            out[-1] = [f"{above} {cell}".strip() for above, cell in zip(out[-1], row, strict=True)]
        else:
            out.append(row)
    return out


def joined_labels(rows: list[list[str]]) -> list[list[str]]:
    """The rows with a first column's label wrapped over two lines, or two rows, read as one: the
    second part opens in lower case (or with a bracket, `(as HCl)`) and is joined to the row that
    holds the label's figures; where the second part sits beside a row of its own (a group's label
    over its rows), it moves up to the first. A label that several rows have is no such part."""
    keep = [j for j in range(max(map(len, rows), default=0)) if any(j < len(r) and r[j] for r in rows)]
    rows = [[row[j] if j < len(row) else "" for j in keep] for row in rows]  # the first column with text
    labels = Counter(row[0] for row in rows if row)
    out: list[list[str]] = []
    for row in rows:
        previous = out[-1] if out else None
        part = row[0] if row else ""
        goes_on = (
            bool(part)
            and (part[0].islower() or (part[0] == "(" and not _numeric(part)))
            and labels[part] == 1  # a label in several rows ("total" under each group) is one of its own
        )
        if previous is None or not goes_on or not previous[0]:
            out.append(row)
        elif not any(previous[1:]):  # label over two lines, figures on the last
            out[-1] = [f"{previous[0]} {part}", *row[1:]]
        elif not any(row[1:]):  # figures on the label's first line
            out[-1] = [f"{previous[0]} {part}", *previous[1:]]
        elif part[0].islower() and 3 * sum(not r[0] for r in rows) >= len(rows):
            # the label's end beside the group's next row, in a table whose labels head groups of rows
            out[-1] = [f"{previous[0]} {part}", *previous[1:]]
            out.append(["", *row[1:]])
        else:
            out.append(row)
    return out


def _goes_on(above: list[str], row: list[str]) -> bool:
    """Whether a line goes on the text of the row above (cells wrapped over several lines): its first
    column empty, and each of its cells words in lower case under words of the row above."""
    cells = [(j, cell) for j, cell in enumerate(row) if cell]
    return (
        not row[0]
        and bool(cells)
        and all(not cell[0].isupper() and not _numeric(cell) for _j, cell in cells)
        and all(above[j] and not _numeric(above[j]) for j, _cell in cells)
    )


def _is_table(rows: list[list[str]], block: list[_Line]) -> bool:
    """Whether rows read from aligned text are a table, not prose, a list, contents or equations.
    A cell wrapped over several lines counts its words a line: a description's lines beside a row's
    figures are no sentences across a page."""
    columns = len(rows[0])
    filled = [cell for row in rows for cell in row if cell]
    if columns < 2 or sum(sum(bool(c) for c in row) >= 2 for row in rows) < MIN_ROWS:
        return False
    sizes = [_size(cell) / (cell.count(WRAP) + 1) for cell in filled]
    if statistics.fmean(sizes) > MAX_CELL_WORDS or sum(s >= LONG_CELL for s in sizes) > MAX_LONG_SHARE * len(
        sizes
    ):
        return False
    if len(filled) < (MIN_KEYED_FILL if _keyed(rows) else MIN_FILL) * columns * len(rows):
        return False
    if sum(len(c) == 1 and c.isalpha() for c in filled) > MAX_LETTERS * len(filled):
        return False
    if sum(bool(_BULLETED.match(c)) for c in filled) > MAX_BULLETED * len(filled):
        return False
    by_column = [[row[j] for row in rows if row[j]] for j in range(columns)]
    if all(_MARKER.fullmatch(c) for c in by_column[0]):  # bullets or numbers beside text: a list
        return False
    last = by_column[-1]
    if last and all(_EQUATION_NUMBER.fullmatch(c) for c in last):
        return False
    if _contents(by_column) or _flowing(rows) > MAX_FLOWING:
        return False
    body = statistics.median(line.height for line in block)
    return sum(line.height < SUPERSCRIPT * body for line in block) <= MAX_SUPERSCRIPT * len(block)


def _keyed(rows: list[list[str]]) -> bool:
    """Whether the rows read as a ledger (an estimate, an invoice, accounts): under the header, most
    rows a figure in the last column beside a label (or a group's label alone in the first), the
    columns between sparse (hours, rates, sub-labels filled in some rows only). A figure's scattered
    labels have no such column of figures, each with its label."""
    body = rows[1:]
    priced = sum(_numeric(row[-1]) and any(row[:-1]) for row in body if row[-1])
    groups = sum(bool(row[0]) and not any(row[1:]) for row in body)
    return len(body) >= MIN_ROWS and priced >= 0.5 * len(body) and priced + groups >= KEYED * len(body)


def _contents(by_column: list[list[str]]) -> bool:
    """Whether the columns are a contents page's: a column of page numbers that only grow, right of a
    column of titles (a column of years or counts first in a table has no titles left of it)."""
    for j in range(1, len(by_column)):
        numbers = by_column[j]
        if (
            len(numbers) >= MIN_ROWS
            and all(_PAGE_NUMBER.fullmatch(c) and c.isdigit() for c in numbers)
            and all(int(a) <= int(b) for a, b in pairwise(numbers))
            and sum(not _numeric(c) for c in by_column[j - 1]) * 2 > len(by_column[j - 1])
        ):
            return True
    return False


def _flowing(rows: list[list[str]]) -> float:
    """The share of cells under the first row that go on a sentence from the cell above (they open in
    lower case): columns of prose set side by side, not a table's cells. Each text counts once: a
    sentence goes on in words of its own, where a table repeats its labels (`total` under each group
    of a table set in lower case)."""
    below = {
        cell
        for above, row in pairwise(rows)
        for j, cell in enumerate(row)
        if cell and above[j] and cell[0].isalpha()
    }
    return sum(c[0].islower() for c in below) / len(below) if below else 0.0


def _tick(line: _Line, left: float, right: float) -> tuple[float, float] | None:
    """Where down the page a line's one cell between left and right stands and the figure it reads."""
    there = [c for c in line.cells if c.x0 < right and left < c.x1]
    if len(there) != 1:
        return None
    text = there[0].text.strip().rstrip("%").lstrip("$€£").replace(",", "").replace("−", "-")
    try:
        return (line.top + line.bottom) / 2, float(text)
    except ValueError:
        return None


def _lone_ticks(lines: Iterable[_Line], left: float, right: float) -> list[tuple[float, float]]:
    """The figures of the run of lines, each of one cell between left and right, that these start with."""
    found = []
    for line in lines:
        tick = _tick(line, left, right) if len(line.cells) == 1 else None
        if tick is None:
            break
        found.append(tick)
    return found


def _axis(block: list[_Line], cuts: list[float], page: list[_Line]) -> bool:
    """Whether a column of the block is a chart's axis: figures evenly stepped and evenly spaced down
    the page, going on over or under the block in lines of their own (the labels of a chart's y axis
    with its legend beside the top ones); a table's column of years or counts ends with the table."""
    places = [(line.top, line.bottom) for line in page]  # the block's lines, maybe less text beside them
    start = places.index((block[0].top, block[0].bottom))
    end = places.index((block[-1].top, block[-1].bottom))
    bounds = [-float("inf"), *cuts, float("inf")]
    for low, high in pairwise(bounds):
        spans = [(c.x0, c.x1) for line in block for c in line.cells if low <= (c.x0 + c.x1) / 2 < high]
        if not spans:
            continue
        left, right = min(a for a, _ in spans), max(b for _, b in spans)
        ticks = [t for line in block if (t := _tick(line, left, right))]
        over = _lone_ticks(reversed(page[:start]), left, right)
        under = _lone_ticks(page[end + 1 :], left, right)
        ticks = [*reversed(over), *ticks, *under]
        steps = [b[1] - a[1] for a, b in pairwise(ticks)]
        pitches = [b[0] - a[0] for a, b in pairwise(ticks)]
        if (
            (over or under)
            and len(ticks) >= MIN_ROWS
            and steps[0] != 0
            and all(abs(step - steps[0]) <= AXIS_SLACK * abs(steps[0]) for step in steps)
            and all(
                abs(p - statistics.fmean(pitches)) <= AXIS_SPACING * statistics.fmean(pitches)
                for p in pitches
            )
        ):
            return True
    return False


def aligned_tables(
    textpage: Any, raw: str, view: Callable[[float, float], tuple[float, float]] | None
) -> list[tuple[Box, str, int]]:
    """The page's tables of aligned text, top first: each one's box, Markdown and count of rows."""
    from lore_docdb.parse.convert.common import md_table

    tables: list[tuple[Box, str, int]] = []
    lines = _lines(_glyphs(textpage, raw, view))
    blocks = _blocks(lines)
    taken = {(line.top, line.bottom) for block in blocks for line in block}
    for block in blocks:
        block, cuts = _trimmed(block, _gutters(block), lines)
        if not cuts or len(block) < MIN_ROWS:
            continue
        rows = _merged(_rows(block, cuts))
        head = _spanning_head(block, lines, taken)
        for k in range(len(head)):  # a group's heading over columns joins the header read as one row
            headed = _merged(_rows(head[k:] + block, cuts))
            if len(headed) == len(rows):
                block, rows = head[k:] + block, headed
                break
        if not _is_table(rows, block) or _axis(block, cuts, lines):
            continue
        box = (
            min(cell.x0 for line in block for cell in line.cells),
            min(line.top for line in block),
            max(cell.x1 for line in block for cell in line.cells),
            max(line.bottom for line in block),
        )
        tables.append((box, md_table(rows), len(rows)))
    return tables
