"""Office's macro-enabled files, templates and slide shows, OpenDocument's templates and Excel's binary
workbooks are parsed: each is the package of the format it is saved from, and reads, pages and cites as
that format does. Before, `report.docm`, `deck.ppsx` or `budget.xltx` were skipped as unsupported."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import pytest

from lore_common.testing.flows import KB, parse, upload, wait_task
from lore_docdb.chat.retrieval import Hit
from lore_docdb.chat.service import place
from lore_docdb.knowledge_bases.models import KbFileRow
from lore_docdb.parse.convert.common import PAGE_BREAK
from lore_docdb.parse.extract import ExtractionError, extract_text
from lore_docdb.parse.pipeline import diff_files
from lore_docdb.parse.sandbox import sniff

DATA = Path(__file__).parent / "data"
OOXML = "application/vnd.openxmlformats-officedocument."
MS = "application/vnd.ms-"
ODF = "application/vnd.oasis.opendocument."
WORD, SLIDES, SHEET = (
    OOXML + "wordprocessingml.document.main+xml",
    OOXML + "presentationml.presentation.main+xml",
    OOXML + "spreadsheetml.sheet.main+xml",
)
# variant: (the sample it is made from, the main part's content type there, the variant's own)
PACKAGES = {
    ".docm": ("sample.docx", WORD, MS + "word.document.macroEnabled.main+xml"),
    ".dotx": ("sample.docx", WORD, OOXML + "wordprocessingml.template.main+xml"),
    ".dotm": ("sample.docx", WORD, MS + "word.template.macroEnabledTemplate.main+xml"),
    ".pptm": ("sample.pptx", SLIDES, MS + "powerpoint.presentation.macroEnabled.main+xml"),
    ".ppsx": ("sample.pptx", SLIDES, OOXML + "presentationml.slideshow.main+xml"),
    ".potx": ("sample.pptx", SLIDES, OOXML + "presentationml.template.main+xml"),
    ".xltx": ("sample.xlsx", SHEET, OOXML + "spreadsheetml.template.main+xml"),
    ".ott": ("sample.odt", "", ODF + "text-template"),
    ".otp": ("sample.odp", "", ODF + "presentation-template"),
    ".ots": ("sample.ods", "", ODF + "spreadsheet-template"),
}
# Legacy templates and shows are the same OLE2 files as documents and decks, a flag apart.
OLE2 = {".dot": "sample.doc", ".pps": "sample.ppt", ".pot": "sample.ppt", ".xlt": "sample.xls"}


def variant(tmp_path: Path, suffix: str) -> tuple[Path, Path]:
    """The variant file made from its sample as Office or LibreOffice saves it (the package's declared
    type changed), and that sample."""
    path = tmp_path / f"made{suffix}"
    if suffix in OLE2:
        sample = DATA / OLE2[suffix]
        path.write_bytes(sample.read_bytes())
        return path, sample
    name, old, new = PACKAGES[suffix]
    sample = DATA / name
    with zipfile.ZipFile(sample) as source, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "[Content_Types].xml":
                assert old.encode() in data
                data = data.replace(old.encode(), new.encode())
            elif info.filename == "mimetype":
                data = new.encode()
            target.writestr(info, data)
    return path, sample


@pytest.mark.parametrize("suffix", sorted(PACKAGES | OLE2))
def test_a_variant_reads_as_the_format_it_is_saved_from(tmp_path: Path, suffix: str) -> None:
    path, sample = variant(tmp_path, suffix)
    assert sniff(path, 1 << 20) is None
    text = extract_text(path)
    assert text == extract_text(sample)  # headings, tables, slides and pages as the original's
    marks = ("| Swallow |", "Test Table Slide", "| Tea |", "| 2019 |", "# Title", "Überschriften")
    assert any(mark in text for mark in marks)


def test_an_excel_binary_workbook_gives_its_rows() -> None:
    """sample.xlsb: calamine's `date.xlsb` (dates, numbers and a duration)."""
    text = extract_text(DATA / "sample.xlsb")
    assert "# Sheet1" in text
    assert "| 2021-01-01 | 15 |" in text and "| 2021-01-02 | 16 |" in text


@pytest.mark.parametrize("suffix", [".docm", ".ppsx", ".xltx", ".xlsb", ".ott", ".dot", ".pps"])
def test_a_corrupt_variant_is_refused_under_its_own_name(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"broken{suffix}"
    path.write_bytes(b"not an office file at all")
    reason = sniff(path, 1 << 20)
    assert reason is not None and suffix in reason, reason
    # a zip archive that is no package reaches the converter, whose reason names the file as it is
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("notes.txt", "nothing of Office here")
    if suffix in OLE2:
        return  # a zip under a legacy name is read by content, as a .docx saved under .doc is
    with pytest.raises(ExtractionError) as refused:
        extract_text(path)
    assert str(refused.value).startswith(f"broken{suffix}: "), refused.value
    assert ".docx:" not in str(refused.value) and ".pptx:" not in str(refused.value)


def test_a_slide_show_or_template_is_cited_by_its_slides() -> None:
    for name in ("deck.ppsx", "deck.pptm", "deck.potx", "deck.pps", "deck.otp"):
        assert place(Hit("c", 1.0, "t", "docs", name, (), 2, 3)) == f"{name}, slides 2-3"
    assert place(Hit("c", 1.0, "t", "docs", "memo.docm", (), 2, 2)) == "memo.docm, p. 2"


async def test_a_slide_show_parses_into_passages_on_their_slides(docdb_factory: Any, tmp_path: Path) -> None:
    show, _ = variant(tmp_path, ".ppsx")
    workbook = (DATA / "sample.xlsb").read_bytes()
    async with docdb_factory(
        LORE__PARAMETER__CHUNK_CONFIG__CHUNK_SIZE="30", LORE__PARAMETER__CHUNK_CONFIG__OVERLAP="5"
    ) as client:
        await upload(client, "decks", {"talk.ppsx": show.read_bytes(), "dates.xlsb": workbook})
        await client.post(KB, json={"name": "decks"})
        [task_id] = await parse(client, "decks", ["decks"], mode=1)
        task = await wait_task(client, task_id)
        assert task["status"] == "completed" and not task["metadata"].get("skipped_files"), task
        reply = await client.post(
            "/api/v1/docdb/retrieve",
            json={"kb_id": "decks", "query": "final notes on the third slide", "mode": "rerank"},
        )
        [top, *_] = reply.json()["data"]
        assert "Final notes on the third slide" in top["content"]
        assert (top["kb_name"], top["page"], top["page_end"]) == ("talk.ppsx", 3, 3)
        assert PAGE_BREAK not in top["content"]


def test_a_file_skipped_as_unsupported_is_read_once_its_type_is() -> None:
    """A KB parsed before these types were read recorded `deck.ppsx` as skipped; the next parse reads
    it, and only it, not every file of the dataset again."""

    def record(name: str, skipped: str | None) -> KbFileRow:
        return KbFileRow(
            kb_name="k", dataset="d", file=name, sha256="s", version="v", task_id="t", skipped=skipped
        )

    names = ["deck.ppsx", "memo.docx", "scan.pdf", "model.step"]
    records = {
        "deck.ppsx": record("deck.ppsx", "unsupported type .ppsx"),
        "memo.docx": record("memo.docx", None),
        "scan.pdf": record("scan.pdf", "no text"),
        "model.step": record("model.step", "unsupported type .step"),
    }
    diff = diff_files(dict.fromkeys(names, "s"), records, "v")
    assert diff.changed == ["deck.ppsx"]
    assert diff.unchanged == ["memo.docx", "model.step", "scan.pdf"]


def test_a_97_file_under_its_newer_format_s_name_reads_as_the_97_file(tmp_path: Path) -> None:
    """Some programs export Word, PowerPoint or Excel 97 files as `.docx`, `.pptx` or `.xlsx`; they
    were refused as "not a zip archive" (Apache POI's `hello_world.docm` is one)."""
    for sample, name in [
        ("sample.doc", "letter.docx"),
        ("sample.doc", "letter.docm"),
        ("sample.ppt", "deck.pptx"),
        ("sample.ppt", "deck.ppsx"),
        ("sample.xls", "ducks.xlsx"),
        ("sample.xls", "ducks.xlsb"),
    ]:
        path = tmp_path / name
        path.write_bytes((DATA / sample).read_bytes())
        assert sniff(path, 1 << 20) is None, name
        assert extract_text(path) == extract_text(DATA / sample), name
    # an encrypted package (also an OLE2 file) is still refused as such
    assert sniff(DATA / "encrypted.xlsx", 1 << 20) == (
        "is password-protected (encrypted); save it without a password to parse it"
    )
