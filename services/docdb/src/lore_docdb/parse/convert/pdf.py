"""PDF text with pypdfium2: pdfium's reading order, running headers, footers and page numbers dropped,
words hyphenated at a line end joined again, pages separated by a form feed. A page with no text layer
but a picture on it (a scan) is rendered at 200 dpi and read by OCR (`ocr.py`)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from lore_docdb.parse.convert.common import PAGE_BREAK


class NeedsOCR(Exception):
    """A page is a scan and this process may not load the OCR engine (the extraction child that has
    not loaded it asks the service for one that has)."""


OCR_DPI = 200  # 150 loses the spaces between words of a bilevel 150 dpi scan
MIN_TEXT_CHARS = 8  # a page with fewer characters in its text layer than this, and a picture, is a scan
ocr_allowed = True  # whether a scanned page may load the OCR engine in this process

EDGE_LINES = 2  # lines at the top and at the bottom of a page that may be a running header or footer
_DIGITS = re.compile(r"\d+")
_SPACES = re.compile(r"\s+")
_PAGE_NUMBER = re.compile(r"(page\s*)?#(\s*(of|/)\s*#)?|[-–—]\s*#\s*[-–—]|[ivx]{1,5}", re.IGNORECASE)


def _shape(line: str) -> str:
    """A line with its digits as `#`: a running header is the same line on every page but its number."""
    return _DIGITS.sub("#", _SPACES.sub(" ", line.strip().lower()))


def _page_lines(raw: str) -> list[str]:
    # pdfium ends lines with \r\n and marks a hyphen it saw at a line end as U+FFFE: join the word again
    text = raw.replace("\ufffe\r\n", "").replace("\ufffe\n", "").replace("\ufffe", "")
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


def pdf_pages(path: Path) -> list[str]:
    """Each page's body text, in pdfium's order, without the page furniture."""
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(str(path))
    try:
        pages = []
        for page in document:
            textpage = page.get_textpage()
            try:
                if textpage.count_chars() < MIN_TEXT_CHARS and _has_picture(page):
                    pages.append(_page_lines(_ocr_page(page)))
                else:
                    pages.append(_page_lines(textpage.get_text_range()))
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
            if (len(pages) > 1 and repeats[_shape(lines[i])] >= threshold)
            or _PAGE_NUMBER.fullmatch(_shape(lines[i]))
        }
        kept = [line for i, line in enumerate(lines) if i not in drop]
        result.append(re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip())
    return result


def pdf_text(path: Path) -> str:
    """The pages' text joined by form feeds, so the page of any passage is the count of breaks before it."""
    return f"\n{PAGE_BREAK}\n".join(pdf_pages(path))
