"""Hostile and huge files: each fails alone, with its reason in the task's `skipped_files`, and the rest
of the dataset parses. The bombs are built here, small on disk and huge once opened."""

from __future__ import annotations

import io
import zipfile
import zlib
from pathlib import Path
from typing import Any

from lore_common.testing.flows import CURIE, DS, KB, parse, upload, wait_task
from lore_docdb.parse.extract import ExtractionError
from lore_docdb.parse.sandbox import Sandbox

Client = Any
MIB = 1024 * 1024
# Lower than the defaults (2 GiB, 120 s) so the bombs hit them soon: the docx its memory, the xlsx its time.
LIMITS = {"LORE__DOCDB__EXTRACT_MEMORY_MB": "600", "LORE__DOCDB__EXTRACT_TIMEOUT": "10"}


def deflated(size: int, piece: bytes) -> bytes:
    """`piece` repeated to `size` bytes, zlib-compressed as it goes (never held whole)."""
    out, compressor = io.BytesIO(), zlib.compressobj(9)
    block = piece * (MIB // len(piece))
    for _ in range(size // len(block)):
        out.write(compressor.compress(block))
    out.write(compressor.flush())
    return out.getvalue()


def pdf_bomb(size: int) -> bytes:
    """A one-page PDF whose content stream inflates to `size` bytes of text operators."""
    stream = deflated(size, b"BT /F1 12 Tf 72 712 Td (bomb) Tj ET\n")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
    ]
    body, offsets = b"%PDF-1.4\n", []
    for number, content in enumerate(objects, 1):
        offsets.append(len(body))
        body += b"%d 0 obj\n" % number + content + b"\nendobj\n"
    xref = len(body)
    body += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    body += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    body += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return body


def zip_bomb(
    path: Path, member: str, head: bytes, repeated: bytes, size: int, tail: bytes, extra: dict[str, bytes]
) -> None:
    """An Office document whose main part inflates to about `size` bytes."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in extra.items():
            archive.writestr(name, content)
        with archive.open(member, "w", force_zip64=True) as part:
            part.write(head)
            block = repeated * (MIB // len(repeated))
            for _ in range(size // len(block)):
                part.write(block)
            part.write(tail)


CONTENT_TYPES = (
    b'<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    b'<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    b'<Default Extension="xml" ContentType="application/xml"/>'
    b'<Override PartName="/word/document.xml" '
    b'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
    b"</Types>"
)
RELS = (
    b'<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    b'<Relationship Id="rId1" '
    b'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
    b'Target="word/document.xml"/></Relationships>'
)
W = b'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def docx_bomb(path: Path) -> None:
    zip_bomb(
        path,
        "word/document.xml",
        b'<?xml version="1.0"?><w:document ' + W + b"><w:body>",
        b"<w:p><w:r><w:t>x</w:t></w:r></w:p>",
        400 * MIB,
        b"</w:body></w:document>",
        {"[Content_Types].xml": CONTENT_TYPES, "_rels/.rels": RELS},
    )


def xlsx_bomb(path: Path) -> None:
    from openpyxl import Workbook

    book = Workbook()
    book.active.append(["a", "b"])
    seed = io.BytesIO()
    book.save(seed)
    with zipfile.ZipFile(seed) as source:
        parts = {name: source.read(name) for name in source.namelist() if name != "xl/worksheets/sheet1.xml"}
    sheet = b'<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
    zip_bomb(
        path,
        "xl/worksheets/sheet1.xml",
        sheet,
        b'<row><c t="inlineStr"><is><t>bomb</t></is></c><c t="inlineStr"><is><t>bomb</t></is></c></row>',
        400 * MIB,
        b"</sheetData></worksheet>",
        parts,
    )


async def test_bombs_and_impostors_fail_alone_and_the_rest_parses(docdb_factory: Any, tmp_path: Path) -> None:
    async with docdb_factory(**LIMITS) as client:
        await upload(client, "mixed", {"curie.txt": CURIE.encode()})
        folder = tmp_path / "docdb" / "raw" / "mixed"
        (folder / "bomb.pdf").write_bytes(pdf_bomb(256 * MIB))
        docx_bomb(folder / "bomb.docx")
        xlsx_bomb(folder / "bomb.xlsx")
        (folder / "nested.json").write_text("[" * 200_000 + "]" * 200_000)
        (folder / "huge.txt").write_bytes(b"")
        with (folder / "huge.txt").open("r+b") as huge:  # 2 GB, sparse: instant to make, huge to read
            huge.truncate(2 * 1024 * MIB)
        (folder / "fake.pdf").write_text("this is plain text, not a PDF")
        (folder / "picture.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(200))
        assert all(p.stat().st_size < 3 * MIB for p in folder.iterdir() if p.name != "huge.txt")

        await client.post(KB, json={"name": "mixed"})
        [task_id] = await parse(client, "mixed", ["mixed"], mode=1)
        # each bomb may take the child its whole time limit, and a new child to start: on a loaded
        # 2-core machine the parse took 80 s (25 s quiet)
        task = await wait_task(client, task_id, seconds=240)
        assert task["status"] == "completed", task
        reasons = {s["file"]: s["reason"] for s in task["metadata"]["skipped_files"]}
        assert set(reasons) == {
            "bomb.pdf",
            "bomb.docx",
            "bomb.xlsx",
            "nested.json",
            "huge.txt",
            "fake.pdf",
            "picture.txt",
        }, reasons
        assert "files over 256 MiB are not parsed" in reasons["huge.txt"]
        assert reasons["fake.pdf"] == "is not a PDF (no %PDF- header)"
        assert "looks binary" in reasons["picture.txt"]
        assert "RecursionError" in reasons["nested.json"]
        # pdfium inflates the stream until the child's memory cap or its time limit stops it
        assert "memory limit" in reasons["bomb.pdf"] or "took longer than 10 s" in reasons["bomb.pdf"]
        # docling-rs inflates the document until the memory cap or (on a loaded machine) the time limit
        stopped_by = ("MemoryError", "memory limit", "took longer than 10 s")
        assert any(limit in reasons["bomb.docx"] for limit in stopped_by), reasons["bomb.docx"]
        # calamine inflates the sheet until the time limit or, in a child without docling-rs's
        # reserve, the memory cap stops it
        assert reasons["bomb.xlsx"] in (
            "extraction took longer than 10 s (docdb.extract_timeout)",
            "the extractor stopped while reading it (over its 600 MiB memory limit, "
            "docdb.extract_memory_mb, or a crash in the parser)",
        ), reasons["bomb.xlsx"]
        answer = await client.post(
            "/api/v1/docdb/retrieve", json={"query": "Who discovered polonium?", "kb_id": "mixed"}
        )
        assert answer.json()["data"][0]["kb_name"] == "curie.txt"


async def test_a_file_over_the_time_limit_is_skipped_and_the_next_one_still_reads(tmp_path: Path) -> None:
    slow, good = tmp_path / "slow.txt", tmp_path / "good.txt"
    slow.write_text("a" * 1000)
    good.write_text("Marie Curie discovered polonium.")
    sandbox = Sandbox(timeout=0.0001, memory_mb=1024, max_file_mb=10)  # the child cannot even start in time
    try:
        try:
            await sandbox.extract(slow)
            raise AssertionError("the time limit did not apply")
        except ExtractionError as exc:
            assert str(exc) == "slow.txt: extraction took longer than 0.0001 s (docdb.extract_timeout)"
        sandbox.timeout = 30
        assert await sandbox.extract(good) == "Marie Curie discovered polonium."
    finally:
        await sandbox.close()


async def test_a_dataset_of_only_hostile_files_fails_the_task_with_their_reasons(
    docdb: Client, tmp_path: Path
) -> None:
    await upload(docdb, "bad", {"fake.pdf": b"not a pdf at all"})
    await docdb.post(KB, json={"name": "bad"})
    [task_id] = await parse(docdb, "bad", ["bad"], mode=1)
    task = await wait_task(docdb, task_id)
    assert task["status"] == "failed" and "fake.pdf: is not a PDF" in task["error"]
    assert (await docdb.get(f"{DS}/bad/files")).json()["files"][0]["name"] == "fake.pdf"  # nothing deleted
