"""EPUB books read as a reader shows them, from a trial on 276 real books (IDPF's samples, the W3C's
EPUB tests): a picture page or a foreign document in the spine is read through its fallback, not
decoded as text (3.6 MB of JPEG bytes came out of one book); a part missing from the zip is passed
over, not the whole book refused; the navigation document's hidden page and landmark lists are not
body text; notes marked `linear="no"` come after the chapters; an `epub:switch` reads once; ruby's
readings, placeholder alt text and a formula's placeholder alt text do not stand in the text."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from lore_docdb.parse.extract import ExtractionError, extract_text

XHTML = (
    '<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml" '
    'xmlns:epub="http://www.idpf.org/2007/ops"><head><title>t</title></head><body>{}</body></html>'
)


def book(
    manifest: list[tuple[str, str, str, str]], spine: list[tuple[str, str]], files: dict[str, bytes]
) -> bytes:
    """An EPUB: manifest items (id, href, media type, extra attributes), spine (idref, linear) and
    the files under OEBPS/."""
    items = "".join(f'<item id="{i}" href="{h}" media-type="{m}" {extra}/>' for i, h, m, extra in manifest)
    refs = "".join(
        f'<itemref idref="{i}" linear="{lin}"/>' if lin else f'<itemref idref="{i}"/>' for i, lin in spine
    )
    opf = (
        '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
        '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Harbour Tales</dc:title>'
        f"<dc:description>Tales of the\n      harbour,\n   told again.</dc:description></metadata>"
        f"<manifest>{items}</manifest><spine>{refs}</spine></package>"
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")
        archive.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
            'version="1.0"><rootfiles><rootfile full-path="OEBPS/book.opf" '
            'media-type="application/oebps-package+xml"/></rootfiles></container>',
        )
        archive.writestr("OEBPS/book.opf", opf)
        for name, data in files.items():
            archive.writestr(f"OEBPS/{name}", data)
    return out.getvalue()


def page(body: str) -> bytes:
    return XHTML.format(body).encode()


def test_a_book_is_read_in_reading_order_without_its_pictures_bytes_or_hidden_navigation(
    tmp_path: Path,
) -> None:
    jpeg = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(range(256)) * 40
    files = {
        "nav.xhtml": page(
            '<nav epub:type="toc"><h1>Contents</h1><ol><li><a href="ch%201.xhtml">One</a></li></ol></nav>'
            '<nav epub:type="page-list" hidden=""><h2>Pages</h2><ol><li><a href="#p1">1</a></li></ol></nav>'
        ),
        "ch 1.xhtml": page(
            "<h1>The Lamp</h1><p>The keeper lit the <ruby>灯<rt>ひ</rt></ruby> at dusk"
            '<a epub:type="noteref" href="notes.xhtml#n1">1</a>.'
            ' <img src="a.png" alt="image"/><img src="b.png" alt="cover1.jpg"/>'
            '<img src="c.png" alt="a gull on the rail"/></p>'
        ),
        "plate.jpg": jpeg,
        "plate.xhtml": page("<p>Plate 1: the harbour at low tide.</p>"),
        "notes.xhtml": page("<h2>Notes</h2><p>The lamp burned whale oil until 1860.</p>"),
        "switch.xhtml": page(
            "<p>Water is <epub:switch><epub:case required-namespace='http://www.xml-cml.org/schema'>"
            "<cml>H2O</cml></epub:case><epub:default>H<sub>2</sub>O in plain text</epub:default>"
            "</epub:switch>.</p>"
        ),
        "tally.json": b'{"novel": [{"para": "raw json"}]}',
        "tally.xhtml": page("<p>The tally of boats, as a page.</p>"),
    }
    manifest = [
        ("nav", "nav.xhtml", "application/xhtml+xml", 'properties="nav"'),
        ("notes", "notes.xhtml", "application/xhtml+xml", ""),
        ("ch1", "ch%201.xhtml", "application/xhtml+xml", ""),  # a URL-encoded name
        ("plate", "plate.jpg", "image/jpeg", 'fallback="plate-text"'),
        ("plate-text", "plate.xhtml", "application/xhtml+xml", ""),
        ("switch", "switch.xhtml", "application/xhtml+xml", ""),
        ("tally", "tally.json", "application/json", 'fallback="tally-page"'),
        ("tally-page", "tally.xhtml", "application/xhtml+xml", ""),
        ("gone", "missing.xhtml", "application/xhtml+xml", ""),
    ]
    spine = [
        ("nav", ""),
        ("notes", "no"),
        ("ch1", ""),
        ("plate", ""),
        ("switch", ""),
        ("tally", ""),
        ("gone", ""),
    ]
    path = tmp_path / "tales.epub"
    path.write_bytes(book(manifest, spine, files))
    text = extract_text(path)
    assert text.startswith(
        "Title: Harbour Tales\n\nTales of the harbour, told again."
    )  # the blurb on one line
    assert "JFIF" not in text and "raw json" not in text and "Pages" not in text and "Contents" not in text
    assert (
        "The keeper lit the 灯 at dusk 1 ." in text and "a gull on the rail" in text
    )  # the note's mark apart
    assert "image" not in text and "cover1" not in text
    order = [
        text.index(s)
        for s in ("# The Lamp", "Plate 1: the harbour", "H 2 O in plain text", "The tally of boats")
    ]
    assert order == sorted(order)
    assert text.index("## Notes") > order[-1]  # `linear="no"`: after the book's flow
    assert text.count("H2O") == 0 and text.count("in plain text") == 1
    assert text.rstrip().endswith("(not in the book's file, so not read: OEBPS/missing.xhtml)")


def test_a_formulas_placeholder_alt_text_gives_way_to_its_mathml() -> None:
    from lore_docdb.parse.convert.markup import html_markdown

    html = (
        '<p>So <math alttext="Alternative text not available"><mi>x</mi><mo>+</mo><mn>1</mn></math> and'
        ' <math alttext="y^2"><mi>y</mi><msup><mn>2</mn></msup></math>.</p>'
    )
    assert html_markdown(html) == "So x+1 and y^2 ."  # the formula's own symbols, not the placeholder


def test_a_file_that_is_no_epub_says_so(tmp_path: Path) -> None:
    path = tmp_path / "broken.epub"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip")
    with pytest.raises(
        ExtractionError, match=r"broken\.epub: not an EPUB \(it has no META-INF/container\.xml\)"
    ):
        extract_text(path)
