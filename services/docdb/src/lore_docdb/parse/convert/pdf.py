"""PDF text with pypdfium2: pdfium's reading order, lines in larger or bold type as `#` headings,
running headers, footers and page numbers dropped, words hyphenated at a line end joined again, pages
separated by a form feed. A page that draws a grid of straight rules goes through pdfplumber's
ruled-table finder, and each table it finds becomes a Markdown table where it stood on the page (plain
pages never load pdfplumber, so they stay fast). A page with no text layer but a picture on it (a
scan) is rendered at 200 dpi and read by OCR (`ocr.py`)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from lore_docdb.parse.convert.common import PAGE_BREAK, md_table


class NeedsOCR(Exception):
    """A page is a scan and this process may not load the OCR engine (the extraction child that has
    not loaded it asks the service for one that has)."""


OCR_DPI = 200  # 150 loses the spaces between words of a bilevel 150 dpi scan
MIN_TEXT_CHARS = 8  # a page with fewer characters in its text layer than this, and a picture, is a scan
ocr_allowed = True  # whether a scanned page may load the OCR engine in this process
MIN_RULES = 2  # objects on a page before its rules are counted
MAX_OBJECTS = 20_000  # a page drawn with more (a map, a chart) is not searched for tables
MAX_SEGMENTS = 400  # a path of more pieces is a drawing, not a table's rules

MAX_FURNITURE_WORDS = 12  # a running header or footer is short; a repeated paragraph is content
EDGE_LINES = 2  # lines at the top and at the bottom of a page that may be a running header or footer
_DIGITS = re.compile(r"\d+")
_SPACES = re.compile(r"\s+")
_CID = re.compile(r"\(cid:\d+\)")  # a glyph pdfminer could not map to a character (a bullet, mostly)
_PAGE_NUMBER = re.compile(r"(page\s*)?#(\s*(of|/)\s*#)?|[-–—]\s*#\s*[-–—]|[ivx]{1,5}", re.IGNORECASE)


def _shape(line: str) -> str:
    """A line with its digits as `#`: a running header is the same line on every page but its number."""
    return _DIGITS.sub("#", _SPACES.sub(" ", line.strip().lower()))


# Control characters a font without a Unicode map yields for its glyphs (form feeds among them, which
# would count as page breaks): they carry no text.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _page_lines(raw: str) -> list[str]:
    # pdfium ends lines with \r\n and marks a hyphen it saw at a line end as U+FFFE: join the word again
    text = raw.replace("\ufffe\r\n", "").replace("\ufffe\n", "").replace("\ufffe", "")
    text = _CONTROL.sub("", text)
    return [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]


def _edges(lines: list[str]) -> list[int]:
    """Indexes of the first and last non-empty lines of a page."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    return sorted(set(filled[:EDGE_LINES] + filled[-EDGE_LINES:]))


def _has_picture(page: object) -> bool:
    import pypdfium2.raw as pdfium_c

    return any(True for _ in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=2))  # type: ignore[attr-defined]


def _ocr_page(page: object) -> str:
    if not ocr_allowed:
        raise NeedsOCR
    from lore_docdb.parse.convert.ocr import ocr_image

    bitmap = page.render(scale=OCR_DPI / 72, grayscale=True)  # type: ignore[attr-defined]
    try:
        return ocr_image(bitmap.to_pil())
    finally:
        bitmap.close()


_Style = tuple[int, float, bool]  # a line of a page: its length, type size and whether it is bold
_NUMBERED = re.compile(r"^(\d+(?:\.\d+)*)\.?\s+\S")
_SENTENCE_END = (".", ",", ";", ":", "\ufffe")


def _styles(textpage: Any, raw: str) -> list[_Style]:
    """Each line's size (the height of its first characters' font boxes) and boldness (its first and
    last characters' weight), one pdfium call a character for a few characters a line."""
    import pypdfium2.raw as pdfium_c

    if len(raw) != textpage.count_chars():
        return []  # characters pdfium counts apart from the text: no styles rather than wrong ones
    box = pdfium_c.FS_RECTF()
    styles: list[_Style] = []
    start = 0
    for line in raw.split("\r\n"):
        first = start + len(line) - len(line.lstrip())
        last = start + len(line.rstrip()) - 1
        sizes = []
        for at in range(first, min(first + 4, last + 1)):
            if pdfium_c.FPDFText_GetLooseCharBox(textpage.raw, at, box):
                sizes.append(box.top - box.bottom)
        size = sorted(sizes)[len(sizes) // 2] if sizes else 0.0
        bold = last >= first and all(
            pdfium_c.FPDFText_GetFontWeight(textpage.raw, at) >= 600 for at in (first, last)
        )
        styles.append((len(line.strip()), round(size * 2) / 2, bold))
        start += len(line) + 2
    return styles


def _heading_marks(pages: list[list[_Style]]) -> list[dict[int, int]]:
    """Per page, the lines that are headings and their level: a line in type 1.15 times the body's or
    larger (levels by size, largest first), or a bold line in body type; short, not ending a sentence."""
    weights: Counter[float] = Counter()
    for styles in pages:
        for length, size, _bold in styles:
            weights[size] += length
    if not weights:
        return [{} for _ in pages]
    body = weights.most_common(1)[0][0]
    larger = sorted({size for styles in pages for _, size, _ in styles if size >= 1.15 * body}, reverse=True)
    levels = {size: min(level, 3) for level, size in enumerate(larger, start=1)}
    return [
        {
            i: levels.get(size, len(levels) + 1)
            for i, (length, size, bold) in enumerate(styles)
            if length and (size in levels or (bold and size >= 0.95 * body))
        }
        for styles in pages
    ]


def _marked(raw: str, marks: dict[int, int]) -> str:
    """The page's text with its heading lines as `#` lines in blocks of their own."""
    if not marks:
        return raw
    lines = raw.split("\r\n")
    out: list[str] = []
    merged: set[int] = set()  # lines joined to the heading line before them (two lines at most)
    for index, line in enumerate(lines):
        level = marks.get(index)
        text = line.strip()
        if (
            level is None
            or len(text.split()) > 20
            or text.endswith(_SENTENCE_END)
            or not any(c.isalpha() for c in text)
        ):
            out.append(line)
            continue
        numbered = _NUMBERED.match(text)
        if numbered:
            level = min(6, max(level, numbered.group(1).count(".") + 1))
        joined = len(out) > 1 and out[-2].startswith("#") and marks.get(index - 1) == marks.get(index)
        if (
            joined
            and out[-1] == ""
            and index - 1 not in merged
            and len(out[-2].split()) + len(text.split()) <= 12
        ):
            merged.add(index)
            out[-2] += " " + text  # a heading set on two lines
            continue
        out.extend(["", "#" * min(level, 6) + " " + text, ""])
    return "\r\n".join(out)


def _headings_again(text: str, marked: str) -> str:
    """The headings found in the page's whole text, marked again in its text rebuilt around tables."""
    headings: dict[str, str] = {}
    for line in marked.split("\r\n"):
        if line.startswith("#"):
            title = line.lstrip("#").strip()
            headings[title] = line
    if not headings:
        return text
    out = []
    for line in text.replace("\r\n", "\n").split("\n"):
        heading = headings.get(line.strip())
        out.extend(["", heading, ""] if heading else [line])
    return "\n".join(out)


def _ruled(page: Any) -> bool:
    """Whether the page draws a grid: straight horizontal rules at 3 heights and vertical ones at 3
    places at least (cell borders, as `re` rectangles or single lines). Curves (charts, logos), a rule
    under a heading or a box around a note do not count, so pdfplumber (about 0.2 CPU-s a page) runs
    only where a ruled table may be. Positions are the path's own (before its matrix): enough to tell
    one place from another."""
    import ctypes

    import pypdfium2.raw as pdfium_c

    count = pdfium_c.FPDFPage_CountObjects(page.raw)
    if count < MIN_RULES or count > MAX_OBJECTS:
        return False
    x, y = ctypes.c_float(), ctypes.c_float()
    heights: set[int] = set()
    places: set[int] = set()
    for index in range(count):
        obj = pdfium_c.FPDFPage_GetObject(page.raw, index)
        if pdfium_c.FPDFPageObj_GetType(obj) != pdfium_c.FPDF_PAGEOBJ_PATH:
            continue
        segments = pdfium_c.FPDFPath_CountSegments(obj)
        if segments > MAX_SEGMENTS:
            continue
        start = previous = None
        for number in range(segments):
            segment = pdfium_c.FPDFPath_GetPathSegment(obj, number)
            kind = pdfium_c.FPDFPathSegment_GetType(segment)
            if kind == pdfium_c.FPDF_SEGMENT_BEZIERTO:
                break
            pdfium_c.FPDFPathSegment_GetPoint(segment, x, y)
            point = (x.value, y.value)
            ends = [(previous, point)] if kind == pdfium_c.FPDF_SEGMENT_LINETO and previous else []
            if kind == pdfium_c.FPDF_SEGMENT_MOVETO:
                start = point
            if pdfium_c.FPDFPathSegment_GetClose(segment) and start is not None:
                ends.append((point, start))
            for a, b in ends:
                dx, dy = abs(a[0] - b[0]), abs(a[1] - b[1])
                if dy < 1 < dx:
                    heights.add(round(a[1]))
                elif dx < 1 < dy:
                    places.add(round(a[0]))
            previous = point
        if len(heights) >= 3 and len(places) >= 3:
            return True
    return False


Box = tuple[float, float, float, float]  # left, top, right, bottom; from the page's top, in points


def _tables(path: Path, indexes: list[int]) -> dict[int, list[tuple[Box, str]]]:
    """The ruled tables (two rows and two columns at least) of these pages, with where they stand."""
    import pdfplumber

    found: dict[int, list[tuple[Box, str]]] = {}
    with pdfplumber.open(str(path), pages=[i + 1 for i in indexes]) as document:
        for index, page in zip(indexes, document.pages, strict=True):
            tables: list[tuple[Box, str]] = []
            for table in page.find_tables():
                rows: list[list[object]] = [
                    [_CID.sub("", cell) if cell else cell for cell in row] for row in table.extract()
                ]
                if len(rows) >= 2 and max(len(row) for row in rows) >= 2:
                    markdown = md_table(rows)
                    if markdown.count("\n") >= 2:
                        left, top, right, bottom = (float(v) for v in table.bbox)
                        tables.append(((left, top, right, bottom), markdown))
            page.close()
            if tables:
                found[index] = sorted(tables, key=lambda t: (t[0][1], t[0][0]))
    return found


def _with_tables(page: Any, textpage: Any, tables: list[tuple[Box, str]]) -> str:
    """The page's text with each table in place: the text above it, beside it and below it, bounded by
    its box, and the table itself as Markdown instead of its cells' loose words."""
    width, height = page.get_size()

    def text(left: float, top: float, right: float, bottom: float) -> str:
        if right - left < 1 or bottom - top < 1:
            return ""
        # pdfium counts from the page's bottom, pdfplumber from its top
        return str(textpage.get_text_bounded(left, height - bottom, right, height - top)).strip("\r\n")

    parts, above = [], 0.0
    for (left, top, right, bottom), markdown in tables:
        parts.append(text(0, above, width, top))
        parts.append(text(0, top, left, bottom))
        parts.append("\n" + markdown + "\n")  # a blank line before and after: a block of its own
        parts.append(text(right, top, width, bottom))
        above = max(above, bottom)
    parts.append(text(0, above, width, height))
    return "\n".join(p for p in parts if p.strip())


def pdf_pages(path: Path) -> list[str]:
    """Each page's body text, in pdfium's order, tables in place, without the page furniture."""
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(str(path))
    try:
        pages: list[list[str]] = []
        ruled: list[int] = []
        styles: list[list[_Style]] = []
        raws: dict[int, str] = {}
        for index, page in enumerate(document):
            textpage = page.get_textpage()
            try:
                if textpage.count_chars() < MIN_TEXT_CHARS and _has_picture(page):
                    pages.append(_page_lines(_ocr_page(page)))
                    styles.append([])
                else:
                    raw = textpage.get_text_range()
                    styles.append(_styles(textpage, raw))
                    pages.append([])
                    raws[index] = raw
                    if _ruled(page):
                        ruled.append(index)
            finally:
                textpage.close()
                page.close()
        marks = _heading_marks(styles)
        for index, raw in raws.items():
            pages[index] = _page_lines(_marked(raw, marks[index]))
        for index, tables in (_tables(path, ruled) if ruled else {}).items():
            page = document[index]
            textpage = page.get_textpage()
            try:
                text = _with_tables(page, textpage, tables)
                pages[index] = _page_lines(_headings_again(text, _marked(raws[index], marks[index])))
            finally:
                textpage.close()
                page.close()
    finally:
        document.close()
    # a line at a page's edge that comes back (digits aside) on several pages is a header or footer
    repeats: Counter[str] = Counter()
    for lines in pages:
        repeats.update({_shape(lines[i]) for i in _edges(lines)})
    threshold = max(2, min(3, round(0.3 * len(pages))))
    result = []
    for lines in pages:
        drop = {
            i
            for i in _edges(lines)
            if (
                len(pages) > 1
                and repeats[_shape(lines[i])] >= threshold
                and len(lines[i].split()) <= MAX_FURNITURE_WORDS
            )
            or _PAGE_NUMBER.fullmatch(_shape(lines[i]))
        }
        kept = [line for i, line in enumerate(lines) if i not in drop]
        if not any(line.strip() for line in kept):
            kept = lines  # pages that are all alike (a form, a repeated notice): not furniture
        result.append(re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip())
    return result


def pdf_text(path: Path) -> str:
    """The pages' text joined by form feeds, so the page of any passage is the count of breaks before it."""
    return f"\n{PAGE_BREAK}\n".join(pdf_pages(path))
