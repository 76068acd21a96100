"""Office files know their pages: a presentation's slides, a Word or OpenDocument text's pages as its
writer last laid them out (only where those add up to the pages it counted: no pages rather than wrong
ones), a multi-page TIFF's frames; a citation of a slide says `slide 3`, and only a PDF's link opens
at a page."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from lore_common.testing.flows import KB, parse, upload, wait_task
from lore_docdb.chat.retrieval import Hit
from lore_docdb.chat.service import ChatService, place
from lore_docdb.parse.convert.common import PAGE_BREAK
from lore_docdb.parse.extract import extract_text
from lore_docdb.parse.pipeline import ParsePipeline

DATA = Path(__file__).parent / "data"


def pages_of(path: Path) -> list[str]:
    return extract_text(path).split(PAGE_BREAK)


def test_a_presentations_slides_are_its_pages_with_their_notes() -> None:
    for name in ("sample.pptx", "sample.odp", "sample.ppt"):  # the .ppt's found by each slide's text
        slides = pages_of(DATA / name)
        assert len(slides) == 3, name
        assert "Test Table Slide" in slides[0] and "With footnote" in slides[0]
        assert "Second slide title" in slides[1] and "Some notes on the second slide." in slides[1]
        # the third slide starts with a list (docling's own page breaks left this one out)
        assert "List item4" in slides[2] and "Final notes on the third slide." in slides[2]


P = "http://schemas.openxmlformats.org/presentationml/2006/main"
COMMENTS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/comments"


def test_a_hidden_slide_still_counts_and_a_comment_stays_on_its_slide(tmp_path: Path) -> None:
    """sample.pptx with its second slide hidden (docling-rs reads only its notes) and a reviewer's
    comment on its first slide (docling-rs puts it after the slide's group, a page of none)."""
    path = tmp_path / "deck.pptx"
    comment = (
        f'<p:cmLst xmlns:p="{P}"><p:cm authorId="0" idx="1"><p:text>Check the R4 row</p:text></p:cm>'
        "</p:cmLst>"
    )
    authors = f'<p:cmAuthorLst xmlns:p="{P}"><p:cmAuthor id="0" name="Ann" initials="A"/></p:cmAuthorLst>'
    with zipfile.ZipFile(DATA / "sample.pptx") as source, zipfile.ZipFile(path, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "ppt/slides/slide2.xml":
                data = data.replace(b"<p:sld ", b'<p:sld show="0" ', 1)
            elif info.filename == "ppt/slides/_rels/slide1.xml.rels":
                relation = f'<Relationship Id="rId9" Type="{COMMENTS}" Target="../comments/comment1.xml"/>'
                data = data.replace(b"</Relationships>", relation.encode() + b"</Relationships>")
            target.writestr(info, data)
        target.writestr("ppt/comments/comment1.xml", comment)
        target.writestr("ppt/commentAuthors.xml", authors)
    slides = pages_of(path)
    assert len(slides) == 3
    assert "Test Table Slide" in slides[0] and "Check the R4 row" in slides[0]
    assert "Second slide title" not in slides[1] and "Some notes on the second slide." in slides[1]
    assert "List item4" in slides[2]


# ---- Word


def word_file(tmp_path: Path, build: Any, pages: int | None) -> Path:
    """A DOCX made by python-docx, `build` adding its body, with Word's page count where given."""
    import docx

    document = docx.Document()
    build(document)
    out = io.BytesIO()
    document.save(out)
    path = tmp_path / "memo.docx"
    with zipfile.ZipFile(io.BytesIO(out.getvalue())) as source, zipfile.ZipFile(path, "w") as target:
        for info in source.infolist():
            if info.filename != "docProps/app.xml":
                target.writestr(info, source.read(info))
        if pages is not None:
            target.writestr(
                "docProps/app.xml",
                '<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/'
                f'extended-properties"><Application>Microsoft Office Word</Application><Pages>{pages}'
                "</Pages></Properties>",
            )
    return path


def rendered_break(run: Any, at_start: bool = True) -> None:
    """Word's mark of where it began a page, in a run."""
    from docx.oxml import OxmlElement

    mark = OxmlElement("w:lastRenderedPageBreak")
    if at_start:
        run._r.insert(0, mark)
    else:
        run._r.append(mark)


def memo(document: Any) -> None:
    """Page 1: two paragraphs, page 2 from the second's middle; page 3 at a paragraph's start, then a
    table whose second row runs onto page 4 (a break in each of its cells)."""
    document.add_paragraph("Harbour lights are lit at dusk.")
    long = document.add_paragraph()
    long.add_run("The keepers trimmed the wicks ")
    rendered_break(long.add_run("until the dawn came over the water."))
    third = document.add_paragraph()
    rendered_break(third.add_run("Fog signals sounded every thirty seconds."))
    table = document.add_table(rows=3, cols=2)
    for row, (name, month) in enumerate([("Swallow", "April"), ("Stork", "March"), ("Crane", "May")]):
        table.cell(row, 0).text, table.cell(row, 1).text = name, month
    for cell in table.rows[1].cells:
        rendered_break(cell.paragraphs[0].runs[0])
    document.add_paragraph("Lamps are trimmed at midnight.")


def test_a_word_files_pages_are_where_word_last_broke_them(tmp_path: Path) -> None:
    pages = pages_of(word_file(tmp_path, memo, pages=4))
    assert len(pages) == 4
    # a break inside a paragraph comes after it: the paragraph is cited by the page it starts on,
    # and page 2 holds nothing that starts there
    assert "lit at dusk" in pages[0] and "the wicks until the dawn came over the water." in pages[0]
    assert not pages[1].strip()
    assert "Fog signals" in pages[2]  # a break at a paragraph's start comes before it
    # a table is on the page it starts on; the row that ran over is one page, not one per cell
    assert "| Stork | March |" in pages[2] and "| Crane | May |" in pages[2]
    assert pages[3].strip() == "Lamps are trimmed at midnight."


def test_a_word_file_whose_breaks_do_not_add_up_has_no_pages(tmp_path: Path) -> None:
    for stated in (3, 7, None):  # Word counted otherwise, or another writer said nothing
        text = extract_text(word_file(tmp_path, memo, pages=stated))
        assert PAGE_BREAK not in text and "LorePageBreak" not in text
        assert "Fog signals sounded every thirty seconds." in text


# ---- OpenDocument text

ODT_CONTENT = """<?xml version="1.0" encoding="UTF-8"?>
<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
 xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"
 xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" office:version="1.3">
<office:body><office:text text:use-soft-page-breaks="true">
<text:h text:outline-level="1">Keepers</text:h>
<text:p>Harbour lights are lit at dusk.</text:p>
<text:p>The keepers trimmed the wicks <text:soft-page-break/>until the dawn came.</text:p>
<text:soft-page-break/>
<text:p>Fog signals sounded every thirty seconds.</text:p>
<table:table><table:table-column/>
<table:table-row><table:table-cell><text:p>Swallow</text:p></table:table-cell></table:table-row>
<text:soft-page-break/>
<table:table-row><table:table-cell><text:p>Stork</text:p></table:table-cell></table:table-row>
</table:table>
<text:p>Lamps are trimmed at midnight.</text:p>
</office:text></office:body></office:document-content>"""


def odt_file(tmp_path: Path, pages: int) -> Path:
    path = tmp_path / "memo.odt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mimetype", "application/vnd.oasis.opendocument.text", zipfile.ZIP_STORED)
        archive.writestr("content.xml", ODT_CONTENT)
        archive.writestr(
            "meta.xml",
            '<office:document-meta xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
            'xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0"><office:meta>'
            f'<meta:document-statistic meta:page-count="{pages}"/></office:meta></office:document-meta>',
        )
    return path


def test_an_opendocument_texts_pages_are_where_libreoffice_last_broke_them(tmp_path: Path) -> None:
    pages = pages_of(odt_file(tmp_path, pages=4))
    assert len(pages) == 4
    assert "lit at dusk" in pages[0] and "The keepers trimmed the wicks until the dawn came." in pages[0]
    assert not pages[1].strip() and "Fog signals" in pages[2]
    assert "Swallow" in pages[2] and "Stork" in pages[2]  # the table on the page it starts on
    assert "Lamps are trimmed at midnight." in pages[3]
    assert PAGE_BREAK not in extract_text(odt_file(tmp_path, pages=2))


def test_a_multi_page_tiffs_frames_are_its_pages_a_blank_first_one_too(tmp_path: Path) -> None:
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=64)
    frames = []
    for text in ("", "HARBOUR LIGHTS", "LAMPS AT DUSK"):  # a blank cover first
        frame = Image.new("RGB", (1000, 400), "white")
        ImageDraw.Draw(frame).text((60, 150), text, fill="black", font=font)
        frames.append(frame)
    frames[0].save(tmp_path / "scan.tif", save_all=True, append_images=frames[1:])
    pages = pages_of(tmp_path / "scan.tif")
    assert [page.strip() for page in pages] == ["", "HARBOUR LIGHTS", "LAMPS AT DUSK"]


# ---- chunks and citations


def chunk_pages(name: str, text: str) -> list[tuple[int | None, int | None]]:
    config = SimpleNamespace(chunk_size=1024, overlap=0)
    pipeline: Any = SimpleNamespace(settings=SimpleNamespace(parameter=SimpleNamespace(chunk_config=config)))
    chunks = ParsePipeline._chunk_all(pipeline, "t", [(name, text)])
    return [(c.page_start, c.page_end) for c in chunks]


def test_a_file_is_paged_where_its_converter_found_pages() -> None:
    two = f"First slide.\n\n{PAGE_BREAK}\n\n# Second\n\nSecond slide."
    assert chunk_pages("deck.pptx", two)[-1] == (2, 2)
    assert chunk_pages("memo.docx", "Plain text.") == [(None, None)]  # no breaks found: no pages
    assert chunk_pages("scan.tiff", "One frame.") == [(1, 1)]  # an image is a page


def test_a_slide_is_cited_as_a_slide_and_only_a_pdf_opens_at_a_page() -> None:
    assert place(Hit("c", 1.0, "t", "docs", "deck.pptx", ("Plan",), 3, 3)) == "deck.pptx, slide 3, Plan"
    assert place(Hit("c", 1.0, "t", "docs", "deck.odp", (), 2, 4)) == "deck.odp, slides 2-4"
    assert place(Hit("c", 1.0, "t", "docs", "memo.docx", (), 2, 2)) == "memo.docx, p. 2"


class Objects:
    async def presigned_get(self, key: str) -> str:
        return f"https://objects.test/{key}"


async def test_only_a_pdf_link_names_a_page() -> None:
    chat: Any = ChatService.__new__(ChatService)
    chat.objects = Objects()
    assert await chat._file_url(Hit("c", 1.0, "t", "docs", "deck.pptx", (), 3, 3)) == (
        "https://objects.test/docs/deck.pptx"
    )


async def test_a_passage_from_a_slide_comes_back_with_its_slide(docdb_factory: Any) -> None:
    files = {"deck.pptx": (DATA / "sample.pptx").read_bytes()}
    async with docdb_factory(
        LORE__PARAMETER__CHUNK_CONFIG__CHUNK_SIZE="30", LORE__PARAMETER__CHUNK_CONFIG__OVERLAP="5"
    ) as client:
        await upload(client, "decks", files)
        await client.post(KB, json={"name": "decks"})
        [task_id] = await parse(client, "decks", ["decks"], mode=1)
        assert (await wait_task(client, task_id))["status"] == "completed"
        reply = await client.post(
            "/api/v1/docdb/retrieve",
            json={"kb_id": "decks", "query": "final notes on the third slide", "mode": "rerank"},
        )
        [top, *_] = reply.json()["data"]
        assert "Final notes on the third slide" in top["content"]
        assert (top["kb_name"], top["page"], top["page_end"]) == ("deck.pptx", 3, 3)
