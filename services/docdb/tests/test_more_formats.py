"""Files a real folder holds beside documents, refused as unsupported types before: SubRip subtitles,
SVG drawings, mailboxes, GIF and HEIC pictures (an iPhone's photos) through OCR, and tarballs and
gzip files read as a zip archive is."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path
from typing import Any

import pytest

from lore_common.testing.flows import KB, parse, upload, wait_task
from lore_docdb.parse.extract import ExtractionError, extract_text, needs_office
from lore_docdb.parse.sandbox import sniff

DATA = Path(__file__).parent / "data"


def test_subrip_cues_are_paragraphs_without_numbers_timings_or_tags(tmp_path: Path) -> None:
    path = tmp_path / "talk.srt"
    path.write_bytes(
        b"\xef\xbb\xbf1\r\n00:00:01,000 --> 00:00:03,500\r\n<i>Welcome back</i> to the harbour.\r\n\r\n"
        b"2\r\n00:00:04,000 --> 00:00:06,000\r\n{\\an8}The tide turns\r\nat noon.\r\n\r\n"
        b"3\r\n00:00:07,000 --> 00:00:09,000\r\n- Who keeps the lamp?\r\n- I do.\r\n"
    )
    assert extract_text(path) == (
        "Welcome back to the harbour.\n\nThe tide turns at noon.\n\n- Who keeps the lamp? - I do."
    )
    path.write_text("just a line of text\n")
    with pytest.raises(ExtractionError, match=r"talk\.srt: no subtitle cues"):
        extract_text(path)


def test_an_svg_gives_its_title_and_labels_in_drawing_order_and_nothing_hidden(tmp_path: Path) -> None:
    path = tmp_path / "flow.svg"
    path.write_text(
        '<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        '<svg xmlns="http://www.w3.org/2000/svg"><title>Order flow</title>'
        "<desc>How an order moves between services</desc><style>.a { fill: red }</style>"
        '<defs><text id="t">Template label</text></defs><text x="20" y="35">Checkout</text>'
        '<text x="200"><tspan x="200">Payment</tspan><tspan x="200" dy="1.2em">service</tspan></text>'
        "<text>&x;</text></svg>"
    )
    assert extract_text(path).split("\n\n") == [
        "# Order flow",
        "How an order moves between services",
        "Checkout",
        "Payment service",  # two lines of one label, not `Paymentservice`
    ]
    icon = tmp_path / "logo.svg"
    icon.write_text('<svg xmlns="http://www.w3.org/2000/svg"><title>logo</title><path d="M0 0h9v9z"/></svg>')
    assert extract_text(icon) == ""  # skipped as `no text`, not a passage saying `logo`


MBOX = b"""From ana@example.com Mon Mar  2 09:00:00 2026
From: Ana Lima <ana@example.com>
Subject: Harbour schedule
Date: Mon, 2 Mar 2026 09:00:00 +0000

The ferry leaves at seven.
>From now on, check the board.

From ben@example.com Tue Mar  3 10:00:00 2026
From: Ben <ben@example.com>
Subject: Re: Harbour schedule
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="b1"

--b1
Content-Type: text/plain

Noted. The tide table is attached.

--b1
Content-Type: text/csv
Content-Disposition: attachment; filename="tides.csv"

Port,High water
Brest,06:15
--b1--
"""


def test_a_mailbox_gives_each_message_under_its_subject_with_its_attachments(tmp_path: Path) -> None:
    path = tmp_path / "inbox.mbox"
    path.write_bytes(MBOX)
    text = extract_text(path)
    first, second = text.split("# Message: Re: Harbour schedule")
    assert first.startswith("# Message: Harbour schedule\n\nSubject: Harbour schedule\nFrom: Ana Lima")
    assert "The ferry leaves at seven.\nFrom now on, check the board." in first  # `>From` unquoted
    assert "Noted. The tide table is attached." in second
    assert "## Attachment: tides.csv\n\n| Port | High water |\n|---|---|\n| Brest | 06:15 |" in second
    path.write_text("no messages here\n")
    with pytest.raises(ExtractionError, match=r"inbox\.mbox: no messages in it"):
        extract_text(path)


@pytest.mark.parametrize("suffix", [".gif", ".heic"])
def test_a_gif_or_heic_picture_is_read_by_ocr(tmp_path: Path, suffix: str) -> None:
    import pillow_heif
    from PIL import Image

    pillow_heif.register_heif_opener()
    with Image.open(DATA / "scan-en.png") as scan:
        top = scan.crop((0, 0, scan.width, scan.height // 2)).convert("RGB")
        path = tmp_path / f"photo{suffix}"
        top.save(path)
    assert sniff(path, 1 << 24) is None
    text = extract_text(path)
    assert text.startswith("# Harbour Report\n\nThe lighthouse keeper logged every vessel"), text
    fake = tmp_path / f"fake{suffix}"
    fake.write_bytes(b"plain text pretending")
    assert sniff(fake, 1 << 20) is not None


def tarball(compression: str) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode=f"w:{compression}") as archive:  # type: ignore[call-overload]

        def add(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))

        add("./guide/field-guide.docx", (DATA / "sample.docx").read_bytes())
        add("./notes/tides.txt", b"Spring tides follow the new moon.")
        add("./.hidden/secret.txt", b"not to be read")
        link = tarfile.TarInfo("passwd")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        archive.addfile(link)
    return out.getvalue()


@pytest.mark.parametrize(
    ("name", "compression"), [("docs.tar.gz", "gz"), ("docs.tar", ""), ("docs.tgz", "gz")]
)
def test_a_tarball_is_read_as_a_folder_and_links_are_not_followed(
    tmp_path: Path, name: str, compression: str
) -> None:
    path = tmp_path / name
    path.write_bytes(tarball(compression))
    assert sniff(path, 1 << 24) is None and needs_office(path)  # it holds a Word file
    text = extract_text(path)
    assert [line for line in text.split("\n") if line.startswith("# File: ")] == [
        "# File: guide/field-guide.docx",
        "# File: notes/tides.txt",
    ]
    assert "| Swallow | April | September |" in text and "Spring tides follow the new moon." in text
    assert "root:" not in text and "not to be read" not in text


def test_a_gzip_of_one_file_is_that_file(tmp_path: Path) -> None:
    path = tmp_path / "heron.txt.gz"
    path.write_bytes(gzip.compress(b"The heron nests by the weir."))
    assert sniff(path, 1 << 20) is None
    assert extract_text(path) == "# File: heron.txt\n\nThe heron nests by the weir."
    broken = tmp_path / "broken.gz"
    broken.write_bytes(b"not gzip")
    assert sniff(broken, 1 << 20) == "is not a .gz archive (its first bytes say otherwise)"


async def test_the_new_types_parse_into_a_kb(docdb_factory: Any, tmp_path: Path) -> None:
    files = {"inbox.mbox": MBOX, "docs.tar.gz": tarball("gz")}
    async with docdb_factory() as client:
        await upload(client, "more", files)
        await client.post(KB, json={"name": "more"})
        [task_id] = await parse(client, "more", ["more"], mode=1)
        task = await wait_task(client, task_id)
        assert task["status"] == "completed" and not task["metadata"].get("skipped_files"), task
        reply = await client.post(
            "/api/v1/docdb/retrieve", json={"kb_id": "more", "query": "When does the ferry leave?"}
        )
        [top, *_] = reply.json()["data"]
        assert top["kb_name"] == "inbox.mbox" and "ferry leaves at seven" in top["content"]
        assert top["heading_path"][0] == "Message: Harbour schedule", top
