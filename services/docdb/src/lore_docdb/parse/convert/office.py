"""Word processing, presentation and article formats through docling-rs (MIT, Rust, pinned): DOCX,
DOC, PPTX, PPT, ODT, ODP, JATS XML and AsciiDoc to Markdown with headings, lists and tables in place,
slides in order with their notes. These formats need none of docling's models; OCR and pictures are
turned off so nothing is fetched."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from lore_docdb.parse.convert.common import tidy_markdown


@cache
def _converter() -> Any:
    from docling_rs import DocumentConverter

    return DocumentConverter(
        do_ocr=False,
        do_table_structure=False,
        keep_picture_images=False,
        fetch_images=False,
        use_web_browser=False,
    )


def docling_markdown(path: Path, as_suffix: str | None = None) -> str:
    """The document as Markdown, tables compacted to one line per row; a presentation's speaker notes
    and the reviewers' comments (docling's notes layer) after the slide or paragraph they belong to.
    `as_suffix`: read the file as that type (an XML article saved as .txt)."""
    from docling_core.types.doc.common.content_layer import ContentLayer

    source: Any = str(path)
    if as_suffix is not None:
        from io import BytesIO

        from docling_rs import DocumentStream

        source = DocumentStream(name=path.stem + as_suffix, stream=BytesIO(path.read_bytes()))
    result = _converter().convert(source)
    layers = {ContentLayer.BODY, ContentLayer.NOTES}
    markdown = str(result.document.export_to_markdown(included_content_layers=layers))
    return tidy_markdown(plain_markdown(markdown))


PICTURE = "<!-- image -->"


def plain_markdown(markdown: str) -> str:
    """docling's Markdown as the text says it: `&lt;`, `&gt;`, `&amp;` and `\\_` back to `<`, `>`, `&`
    and `_` outside tables and code (docling escapes them in paragraphs, headings and list items
    only, so `R&D` read `R&amp;D` and `x --> y` read `x --&gt; y`), its placeholder for a picture
    left out, and a blank line before a table that follows a line of text."""
    lines: list[str] = []
    fence = False
    for line in markdown.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            fence = not fence
        elif not fence:
            if stripped == PICTURE:
                continue
            if stripped.startswith("|"):
                if lines and lines[-1].strip() and not lines[-1].lstrip().startswith("|"):
                    lines.append("")
            else:
                line = line.replace("\\_", "_").replace("&lt;", "<").replace("&gt;", ">")
                line = line.replace("&amp;", "&")
        lines.append(line)
    return "\n".join(lines)
