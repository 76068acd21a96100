"""A PDF page whose text layer is there but unreadable (a scan's OCR layer of U+FFFD or private-use
characters, a font whose Unicode map points into the private use area) is read by OCR as a scan is;
a page that reads, and a font read in the Macintosh glyph order once read right, keep their text."""

from __future__ import annotations

import zlib
from pathlib import Path

import pypdfium2 as pdfium
import pytest
from PIL import Image, ImageFont

from lore_common.testing.pdf import pdf_bytes
from lore_docdb.parse.convert import pdf
from lore_docdb.parse.extract import extract_text
from lore_docdb.parse.sandbox import Sandbox

DATA = Path(__file__).parent / "data"
DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
SCAN_DPI = 150  # scan-en.png's (make_scans.py)
# the invisible layer a scanner's OCR wrote over scan-en.png, as its codes (read through the map below)
LAYER = [
    "Harbour Report",
    "The lighthouse keeper logged every vessel that passed the northern cape before dawn.",
    "Fog horns sounded eleven times in March, twice as often as in the year before.",
]
TIDES = [  # set in a vector font whose Unicode map points every glyph into the private use area
    "Tide Almanac",
    "Spring tides follow the new moon by about two days.",
    "Neap tides bring the smallest range of the tide.",
]


def to_unicode(ranges: list[str]) -> str:
    """A ToUnicode CMap object of these `bfrange` lines, over one- or two-byte codes."""
    width = len(ranges[0].split()[0]) - 2
    cmap = "\n".join(
        [
            "/CIDInit /ProcSet findresource begin 12 dict begin begincmap",
            "/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def",
            "/CMapName /Unreadable def /CMapType 2 def",
            f"1 begincodespacerange <{'0' * width}> <{'F' * width}> endcodespacerange",
            f"{len(ranges)} beginbfrange",
            *ranges,
            "endbfrange endcmap CMapName currentdict /CMap defineresource pop end end",
        ]
    )
    return f"<< /Length {len(cmap)} >>\nstream\n{cmap}\nendstream"


def scan_with_layer(path: Path, replacement: bool) -> Path:
    """scan-en.png as a PDF page with an invisible text layer (render mode 3) over it whose every
    printable code maps to U+FFFD (`replacement`) or to a private-use character."""
    with Image.open(DATA / "scan-en.png") as image:
        gray = image.convert("L")
    width, height = gray.width * 72 / SCAN_DPI, gray.height * 72 / SCAN_DPI
    pixels = zlib.compress(gray.tobytes()).decode("latin-1")
    layer = "".join(
        f"BT 3 Tr /F1 11 Tf 43 {height - 50 - 20 * number:.1f} Td ({line}) Tj ET\n"
        for number, line in enumerate(LAYER)
    )
    content = f"q {width:.2f} 0 0 {height:.2f} 0 0 cm /Im1 Do Q\n{layer}"
    target = "[" + " ".join(["<FFFD>"] * 94) + "]" if replacement else "<E021>"
    path.write_bytes(
        pdf_bytes(
            [
                "<< /Type /Catalog /Pages 2 0 R >>",
                "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {width:.2f} {height:.2f}] /Contents 4 0 R "
                "/Resources << /Font << /F1 5 0 R >> /XObject << /Im1 7 0 R >> >> >>",
                f"<< /Length {len(content)} >>\nstream\n{content}\nendstream",
                "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 6 0 R >>",
                to_unicode([f"<21> <7E> {target}"]),
                f"<< /Type /XObject /Subtype /Image /Width {gray.width} /Height {gray.height} "
                f"/ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode /Length {len(pixels)} >>"
                f"\nstream\n{pixels}\nendstream",
            ]
        )
    )
    return path


def private_use_font_pdf(path: Path) -> Path:
    """TIDES drawn in DejaVu Sans (embedded, its glyphs by their ids) whose ToUnicode map sends every
    glyph but the space into the private use area, as a symbol font's map does."""
    font = DEJAVU.read_bytes()
    sizes = ImageFont.truetype(str(DEJAVU), 1000)
    # DejaVu Sans keeps ASCII's glyphs in the Macintosh order: a space is glyph 3, `a` glyph 68
    widths = " ".join(f"{sizes.getlength(chr(gid + 29)):.0f}" for gid in range(3, 98))
    content = "".join(
        f"BT /F1 14 Tf 72 {700 - 28 * number} Td <{''.join(f'{ord(c) - 29:04X}' for c in line)}> Tj ET\n"
        for number, line in enumerate(TIDES)
    )
    packed = zlib.compress(font).decode("latin-1")
    path.write_bytes(
        pdf_bytes(
            [
                "<< /Type /Catalog /Pages 2 0 R >>",
                "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
                "/Resources << /Font << /F1 5 0 R >> >> >>",
                f"<< /Length {len(content)} >>\nstream\n{content}\nendstream",
                "<< /Type /Font /Subtype /Type0 /BaseFont /DejaVuSans /Encoding /Identity-H "
                "/DescendantFonts [6 0 R] /ToUnicode 9 0 R >>",
                "<< /Type /Font /Subtype /CIDFontType2 /BaseFont /DejaVuSans /CIDSystemInfo << /Registry "
                "(Adobe) /Ordering (Identity) /Supplement 0 >> /FontDescriptor 7 0 R /CIDToGIDMap /Identity "
                f"/DW 600 /W [3 [{widths}]] >>",
                "<< /Type /FontDescriptor /FontName /DejaVuSans /Flags 4 /FontBBox [-1021 -463 1793 1232] "
                "/ItalicAngle 0 /Ascent 928 /Descent -236 /CapHeight 729 /StemV 80 /FontFile2 8 0 R >>",
                f"<< /Length {len(packed)} /Length1 {len(font)} /Filter /FlateDecode >>\nstream\n{packed}"
                "\nendstream",
                to_unicode(["<0003> <0003> <0020>", "<0004> <0061> <E021>"]),
            ]
        )
    )
    return path


def page_texts(path: Path) -> list[str]:
    """The text layer of each page as pdfium reads it."""
    document = pdfium.PdfDocument(str(path))
    try:
        return [page.get_textpage().get_text_range() for page in document]  # closed with the document
    finally:
        document.close()


def words(text: str) -> str:
    return " ".join(text.replace("#", " ").split())


@pytest.mark.parametrize("replacement", [True, False], ids=["replacement-characters", "private-use"])
def test_a_scan_whose_ocr_layer_is_unreadable_is_read_by_ocr(tmp_path: Path, replacement: bool) -> None:
    path = scan_with_layer(tmp_path / "scan.pdf", replacement)
    [layer] = page_texts(path)
    assert not any(c.isalpha() for c in layer)  # the layer has no letter of the words on the page
    text = words(extract_text(path))
    assert "Harbour Report" in text
    assert "The lighthouse keeper logged every vessel that passed the northern cape before dawn." in text
    assert "The lamp room was repainted in April" in text  # under no layer at all: OCR read the page
    assert "\ufffd" not in text and not any("\ue000" <= c <= "\uf8ff" for c in text)


@pytest.mark.skipif(not DEJAVU.exists(), reason="needs DejaVu Sans (Debian: fonts-dejavu-core)")
def test_a_font_whose_unicode_map_is_private_use_is_read_by_ocr(tmp_path: Path) -> None:
    path = private_use_font_pdf(tmp_path / "symbols.pdf")
    [layer] = page_texts(path)
    assert not any(c.isalpha() for c in layer) and sum("\ue000" <= c <= "\uf8ff" for c in layer) > 80
    text = words(extract_text(path))
    assert all(line in text for line in TIDES), text


def test_an_unreadable_page_raises_needs_ocr_where_ocr_may_not_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pdf, "ocr_allowed", False)
    with pytest.raises(pdf.NeedsOCR):
        extract_text(scan_with_layer(tmp_path / "scan.pdf", replacement=False))


def test_an_unreadable_page_that_ocr_finds_nothing_on_keeps_its_text_layer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = scan_with_layer(tmp_path / "scan.pdf", replacement=False)
    monkeypatch.setattr(pdf, "_ocr_page", lambda page: "")
    kept = pdf.pdf_text(path)
    monkeypatch.setattr(pdf, "_unreadable", lambda raw: False)
    assert kept == pdf.pdf_text(path) and len(kept) > 100


@pytest.mark.parametrize("name", ["sample.pdf", "table.pdf", "headings.pdf"])
def test_a_readable_text_layer_is_kept_exactly_and_never_ocred(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pdf, "ocr_allowed", False)  # a page sent to OCR would raise NeedsOCR
    text = extract_text(DATA / name)
    monkeypatch.setattr(pdf, "_unreadable", lambda raw: False)  # the converter as it was before the rule
    assert text == extract_text(DATA / name)
    assert not any(pdf._unreadable(raw) for raw in page_texts(DATA / name))


def test_a_page_of_odd_bullets_and_icons_among_words_keeps_its_text() -> None:
    line = "\uf0b7 The keepers cleared the lamp room \uf0a7 and \ufffd polished the brass.\r\n"
    assert not pdf._unreadable(line * 20)  # 60 odd characters, but far fewer than the letters
    assert not pdf._unreadable("\ue000" * (pdf.MIN_UNREADABLE_CHARS - 1))  # a few icons alone
    assert pdf._unreadable("\ue000\ue001\ufffd\x01 \x85\x9f\r\n" * 10 + "Page 1")
    assert not pdf._unreadable("Line one\ufffe\r\nends \x00" * 20)  # pdfium's hyphen mark, `_unshifted`'s NUL


def macintosh_order_pdf(path: Path, lines: list[str]) -> Path:
    """Lines in a TrueType font without a Unicode map whose codes are its glyphs' places in the
    Macintosh order (a space 3, a digit 19 to 28, `a` 68), as some producers write a subset."""
    octal = ["".join(f"\\{ord(c) - 29:03o}" for c in line) for line in lines]
    content = "".join(f"BT /F1 11 Tf 72 {700 - 14 * n} Td ({codes}) Tj ET\n" for n, codes in enumerate(octal))
    widths = " ".join(["500"] * 256)
    path.write_bytes(
        pdf_bytes(
            [
                "<< /Type /Catalog /Pages 2 0 R >>",
                "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
                "/Resources << /Font << /F1 6 0 R >> >> >>",
                f"<< /Length {len(content)} >>\nstream\n{content}\nendstream",
                "<< /Type /FontDescriptor /FontName /ABCDEF+Arial /Flags 4 /FontBBox [0 -200 1000 900] "
                "/ItalicAngle 0 /Ascent 900 /Descent -200 /CapHeight 700 /StemV 80 >>",
                "<< /Type /Font /Subtype /TrueType /BaseFont /ABCDEF+Arial /FirstChar 0 /LastChar 255 "
                f"/Widths [{widths}] /FontDescriptor 5 0 R >>",
            ]
        )
    )
    return path


def test_a_font_in_the_macintosh_order_is_read_right_and_not_sent_to_ocr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a timetable: its spaces, digits and stops are all control codes as pdfium reads them, so the
    # page would be unreadable but for the repair, which comes first
    lines = ["Harbour tides at the north pier", "07.30 08.15 09.45 10.20 11.05 12.40 13.55 14.10 15.25"]
    path = macintosh_order_pdf(tmp_path / "tides.pdf", lines)
    [layer] = page_texts(path)
    assert pdf._unreadable(layer)
    monkeypatch.setattr(pdf, "ocr_allowed", False)  # a page sent to OCR would raise NeedsOCR
    text = pdf.pdf_text(path)
    assert [" ".join(line.lstrip("# ").split()) for line in text.splitlines() if line.strip()] == lines


async def test_the_sandbox_reads_an_unreadable_page_again_in_a_child_with_ocr(tmp_path: Path) -> None:
    path = scan_with_layer(tmp_path / "scan.pdf", replacement=True)
    sandbox = Sandbox(timeout=120, memory_mb=2048, max_file_mb=10)
    try:
        text = words(await sandbox.extract(path))
    finally:
        await sandbox.close()
    assert "The lighthouse keeper logged every vessel" in text
