"""A zip archive is read as the folder of documents it holds: each member of a type docdb reads, under
`# File: its/path`, in the archive's order, so a passage is found and cited with the member it comes
from. Before, `.zip` was refused as an unsupported type."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import pytest

from lore_common.testing.flows import KB, parse, upload, wait_task
from lore_docdb.parse.extract import ExtractionError, extract_text, needs_office
from lore_docdb.parse.sandbox import sniff

DATA = Path(__file__).parent / "data"


def archive(members: dict[str, bytes], encrypted: tuple[str, ...] = ()) -> bytes:
    """A zip of the members; those named in `encrypted` marked as saved with a password (the flag an
    archiver sets, in the local and central headers; zipfile itself writes no encrypted member)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for name, data in members.items():
            target.writestr(name, data)
    raw = bytearray(out.getvalue())
    for signature, flags, name_length, name_at in ((b"PK\x03\x04", 6, 26, 30), (b"PK\x01\x02", 8, 28, 46)):
        at = raw.find(signature)
        while at >= 0:
            size = int.from_bytes(raw[at + name_length : at + name_length + 2], "little")
            if raw[at + name_at : at + name_at + size].decode() in encrypted:
                raw[at + flags] |= 1
            at = raw.find(signature, at + 4)
    return bytes(raw)


def folder() -> dict[str, bytes]:
    return {
        "guide/field-guide.docx": (DATA / "sample.docx").read_bytes(),
        "notes/readme.md": b"# Readme\n\nThe heron nests by the weir.\n",
        "report.pdf": (DATA / "sample.pdf").read_bytes(),
        "logo.png": (DATA / "scan-en.png").read_bytes(),
        "__MACOSX/guide/._field-guide.docx": b"\x00\x05\x16\x07 resource fork",
        ".DS_Store": b"\x00\x00\x00\x01Bud1",
        "inner.zip": archive({"deep/tides.txt": b"Spring tides follow the new moon."}),
        "model.step": b"ISO-10303-21;",
    }


def test_each_member_is_read_in_order_under_its_path(tmp_path: Path) -> None:
    path = tmp_path / "docs.zip"
    path.write_bytes(archive(folder()))
    assert sniff(path, 1 << 24) is None and needs_office(path)  # it holds a Word file
    text = extract_text(path)
    headings = [line for line in text.split("\n") if line.startswith("# File: ")]
    assert headings == [
        "# File: guide/field-guide.docx",
        "# File: notes/readme.md",
        "# File: report.pdf",
        "# File: inner.zip",
    ]
    docx, readme, pdf = (text.index(h) for h in headings[:3])
    assert "| Swallow | April | September |" in text[docx:readme] and "### Field Guide" in text
    assert "## Readme\n\nThe heron nests by the weir." in text[readme:pdf]
    first_pdf_line = next(line for line in extract_text(DATA / "sample.pdf").split("\n") if line.strip())
    assert first_pdf_line.lstrip("# ") in text[pdf:]
    assert "## File: deep/tides.txt\n\nSpring tides follow the new moon." in text
    assert "resource fork" not in text and "Bud1" not in text and "tide" not in text[:pdf].lower()


def test_a_bomb_or_an_encrypted_member_says_why_and_the_rest_is_read(tmp_path: Path) -> None:
    members = {
        "zeros.txt": b"0" * (3 * 2**20),
        "secret.txt": b"not to be read",
        "notes.txt": b"The lamp is lit at dusk.",
    }
    path = tmp_path / "mixed.zip"
    path.write_bytes(archive(members, encrypted=("secret.txt",)))
    text = extract_text(path)
    assert "# File: zeros.txt\n\n(not read: it inflates like a zip bomb)" in text
    assert "# File: secret.txt\n\n(not read: it is password-protected)" in text
    assert "# File: notes.txt\n\nThe lamp is lit at dusk." in text
    locked = tmp_path / "locked.zip"
    locked.write_bytes(archive({"a.txt": b"x", "b.txt": b"y"}, encrypted=("a.txt", "b.txt")))
    with pytest.raises(ExtractionError, match=r"locked\.zip: is password-protected"):
        extract_text(locked)


def test_a_corrupt_archive_is_refused_with_its_reason(tmp_path: Path) -> None:
    path = tmp_path / "broken.zip"
    path.write_bytes(b"PK\x03\x04 not an archive at all")
    with pytest.raises(ExtractionError, match=r"broken\.zip: could not be read as \.zip"):
        extract_text(path)
    path.write_bytes(b"plain text")
    assert sniff(path, 1 << 20) == "is not a .zip document (not a zip archive)"


async def test_a_passage_of_a_member_is_cited_with_its_path(docdb_factory: Any) -> None:
    async with docdb_factory() as client:
        await upload(client, "bundle", {"docs.zip": archive(folder()), "other.txt": b"Lamps need oil."})
        await client.post(KB, json={"name": "bundle"})
        [task_id] = await parse(client, "bundle", ["bundle"], mode=1)
        task = await wait_task(client, task_id)
        assert task["status"] == "completed" and not task["metadata"].get("skipped_files"), task
        reply = await client.post(
            "/api/v1/docdb/retrieve", json={"kb_id": "bundle", "query": "When does the swallow leave?"}
        )
        [top, *_] = reply.json()["data"]
        assert top["kb_name"] == "docs.zip" and "September" in top["content"]
        assert top["heading_path"][0] == "File: guide/field-guide.docx", top
