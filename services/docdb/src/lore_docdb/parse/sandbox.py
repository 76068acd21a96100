"""Text extraction in a child process with limits, so one hostile or huge file fails alone.

A PDF, DOCX or XLSX bomb, a file that sends a parser into a loop, or a text file of gigabytes would
otherwise take the service's memory or a parse worker forever. Here each file is first checked by its
content (a `.pdf` must be a PDF, a `.docx` a zip, a text file must not be binary) and its size, then
extracted by a child (`python -m lore_docdb.parse.sandbox`) whose address space is capped; the
service gives it `timeout` seconds per file, then kills it and starts another for the next file. Every
failure is a reason in the task's `skipped_files`; the rest of the dataset parses.
"""

from __future__ import annotations

import asyncio
import resource
import sys
from pathlib import Path
from typing import Any

from lore_common.workers import Inbox, Reply, Worker, serve
from lore_docdb.parse.convert.common import ENCRYPTED, utf16_without_bom
from lore_docdb.parse.convert.pdf import NeedsOCR
from lore_docdb.parse.extract import (
    EXTRACTORS,
    LEGACY_OF,
    SAME_AS,
    ExtractionError,
    extract_text,
    file_type,
    needs_ocr,
    needs_office,
    preload_converters,
)

MIB = 1024 * 1024
ZIP_TYPES: tuple[str, ...] = (".docx", ".xlsx", ".xlsm", ".xlsb", ".pptx", ".odt", ".odp", ".ods", ".epub")
ZIP_TYPES += (".zip", ".pages", ".key", ".numbers")  # and Apple iWork's packages
OLE_TYPES = (".doc", ".ppt", ".xls", ".msg")  # legacy Office and Outlook: an OLE2 compound file
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
IMAGE_MAGIC = {
    ".png": (b"\x89PNG",),
    ".jpg": (b"\xff\xd8",),
    ".jpeg": (b"\xff\xd8",),
    ".tif": (b"II*\x00", b"MM\x00*"),
    ".tiff": (b"II*\x00", b"MM\x00*"),
    ".bmp": (b"BM",),
    ".webp": (b"RIFF",),
    ".gif": (b"GIF87a", b"GIF89a"),
}
# Tarballs and gzip files: their compression's magic (a plain tar says `ustar` at byte 257)
ARCHIVE_MAGIC = {".tgz": b"\x1f\x8b", ".gz": b"\x1f\x8b", ".tbz2": b"BZh", ".txz": b"\xfd7zXZ\x00"}
# HEIF photos: an ISO media file whose first box (`ftyp`, after its 4-byte size) names a HEIF brand
HEIF_SUFFIXES = (".heic", ".heif")
HEIF_BRANDS = (b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx", b"hevm", b"hevs", b"mif1", b"msf1")
TEXT_TYPES = {
    s
    for s in EXTRACTORS
    if SAME_AS.get(s, s)
    not in (".pdf", ".tar", *ZIP_TYPES, *OLE_TYPES, *IMAGE_MAGIC, *HEIF_SUFFIXES, *ARCHIVE_MAGIC)
}
# The first bytes of Excel 2, 3 and 4 worksheets and of Word 2 documents (before OLE2 containers).
PRE_OFFICE_97 = (b"\x09\x00", b"\x09\x02", b"\x09\x04", b"\xdb\xa5", b"\x31\xbe")
NEEDS_OCR = "\x00needs-ocr"  # the child's answer when a PDF page is a scan and it has no OCR engine


def sniff(path: Path, max_bytes: int) -> str | None:
    """Why the file cannot be what its name says, or is too big to parse; None when it may be."""
    size = path.stat().st_size
    if size > max_bytes:
        limit = f"files over {max_bytes / MIB:.0f} MiB are not parsed (docdb.extract_max_file_mb)"
        return f"is {size / MIB:.0f} MiB; {limit}"
    suffix = file_type(path)  # a template or macro-enabled file is checked as its format
    named = path.suffix.lower()
    with path.open("rb") as handle:
        head = handle.read(8192)
    if suffix == ".pdf" and b"%PDF-" not in head[:1024]:
        return "is not a PDF (no %PDF- header)"
    if suffix in ZIP_TYPES and not head.startswith(b"PK\x03\x04"):
        if head.startswith(OLE_MAGIC) and _encrypted_package(path):
            return ENCRYPTED
        if head.startswith(OLE_MAGIC) and suffix in LEGACY_OF:
            return None  # a Word, PowerPoint or Excel 97 file under its newer format's name: read as one
        return f"is not a {named} document (not a zip archive)"
    if suffix in OLE_TYPES and not head.startswith((OLE_MAGIC, b"PK\x03\x04")) and not _office_xml(head):
        if head.startswith(PRE_OFFICE_97):
            return f"is a {named} file older than Office 97; save it in a newer format to parse it"
        # A .docx saved under .doc (or .pptx under .ppt) is common: the converters read it by content.
        return f"is not an Office {named} file (neither an OLE2 file nor a zip archive)"
    if suffix in IMAGE_MAGIC and not head.startswith(IMAGE_MAGIC[suffix]):
        return f"is not a {named} image (its first bytes say otherwise)"
    if suffix in ARCHIVE_MAGIC and not head.startswith(ARCHIVE_MAGIC[suffix]):
        return f"is not a {named} archive (its first bytes say otherwise)"
    if suffix == ".tar" and head[257:262] != b"ustar" and not head.startswith((b"\x1f\x8b", b"BZh")):
        return "is not a tar archive (no `ustar` header)"
    if suffix in HEIF_SUFFIXES and not (head[4:8] == b"ftyp" and head[8:12] in HEIF_BRANDS):
        return f"is not a {named} photo (its first bytes say otherwise)"
    if suffix in TEXT_TYPES and b"\x00" in head.rstrip(b"\x00") and not _wide_text(head):
        return f"looks binary (NUL bytes), not {named} text"
    return None


def _encrypted_package(path: Path) -> bool:
    """Whether an OLE2 file is an Office document saved with a password: Office then wraps the zip in
    an OLE2 file whose directory names an `EncryptedPackage` stream."""
    with path.open("rb") as handle:
        return "EncryptedPackage".encode("utf-16-le") in handle.read(ENCRYPTED_SCAN)


def _office_xml(head: bytes) -> bool:
    """Word's and Excel's 2003 XML formats, which Office also saves under .doc and .xls."""
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return start.startswith(b"<?xml") and b"urn:schemas-microsoft-com:office" in head


def _wide_text(head: bytes) -> bool:
    """Text in UTF-16 or UTF-32 (a byte order mark, or UTF-16's zero bytes in every other place), whose
    NUL bytes are characters' high bytes, not a binary file's."""
    return head.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")) or bool(
        utf16_without_bom(head[: len(head) // 2 * 2])
    )


ENCRYPTED_SCAN = 4 * MIB  # how far into an OLE2 file its directory is looked for
STARTUP_TIMEOUT = 120.0  # seconds for a new child to load its converters


class Sandbox:
    """The service's end: one child for a parse's files, replaced after a time-out or a crash."""

    def __init__(self, timeout: float, memory_mb: int, max_file_mb: int) -> None:
        self.timeout = timeout
        self.memory_mb = memory_mb
        self.max_bytes = max_file_mb * MIB
        self._worker: Worker | None = None
        self._office = False  # whether the child has docling-rs loaded
        self._ocr = False  # whether it has the OCR engine loaded

    async def _child(self, path: Path, ocr: bool = False) -> Worker:
        """A child with what this file needs loaded: docling-rs for an Office file, the OCR engine for
        an image or a scanned PDF. The first such file of a parse replaces the child by one that has
        both what it had and what the file needs; a parse of text PDFs never loads either."""
        office = needs_office(path) or self._office
        ocr = ocr or needs_ocr(path) or self._ocr
        if self._worker is not None and (office, ocr) != (self._office, self._ocr):
            await self.close()
        if self._worker is None or not self._worker.usable():
            self._office, self._ocr = office, ocr
            args = [str(self.memory_mb), str(self.max_bytes), "office" if office else "plain"]
            args.append("ocr" if ocr else "no-ocr")
            self._worker = Worker("text extraction", "lore_docdb.parse.sandbox", args, ExtractionError)
        return self._worker

    async def extract(self, path: Path) -> str:
        text = await self._extract(path, ocr=False)
        if text == NEEDS_OCR:  # a scanned PDF: again, in a child with the OCR engine
            text = await self._extract(path, ocr=True)
        return text

    async def _extract(self, path: Path, ocr: bool) -> str:
        worker = await self._child(path, ocr)
        if worker.process is None:
            # A new child loads its converters first (seconds, more on a busy machine): that start is
            # not the file's fault, so the file's time limit counts from when the child is ready.
            try:
                async with asyncio.timeout(STARTUP_TIMEOUT):
                    await worker.call("ready")
            except TimeoutError:
                await self._kill(worker)
                raise ExtractionError(
                    f"the text extractor did not start within {STARTUP_TIMEOUT:g} s (an overloaded machine?)"
                ) from None
        try:
            async with asyncio.timeout(self.timeout):
                ok, payload = await worker.call("extract", str(path))
        except TimeoutError:
            await self._kill(worker)
            raise ExtractionError(
                f"{path.name}: extraction took longer than {self.timeout:g} s (docdb.extract_timeout)"
            ) from None
        except ExtractionError:  # the child died: the memory cap, or a crash in a parser
            raise ExtractionError(
                f"{path.name}: the extractor stopped while reading it (over its {self.memory_mb} MiB "
                "memory limit, docdb.extract_memory_mb, or a crash in the parser)"
            ) from None
        if not ok:
            raise ExtractionError(str(payload))
        return str(payload)

    async def _kill(self, worker: Worker) -> None:
        if worker.process is not None and worker.process.returncode is None:
            worker.process.kill()
        await worker.close()
        self._worker = None

    async def close(self) -> None:
        if self._worker is not None:
            await self._worker.close()
            self._worker = None


# ------------------------------------------------------------------ the child's side


def _handle(inbox: Inbox, max_bytes: int) -> list[Reply]:
    request = inbox.requests.popleft()  # one file at a time: a time-out then names the right one
    if request[1] == "ready":  # the converters are loaded (main() preloads them before serving)
        return [(int(request[0]), True, (True, ""))]
    path = Path(request[2])
    result: Any
    try:
        reason = sniff(path, max_bytes)
        if reason is not None:
            return [(int(request[0]), True, (False, f"{path.name}: {reason}"))]
        text = extract_text(path)
        if len(text) > max_bytes:
            result = (
                False,
                f"{path.name}: its text is over {max_bytes / MIB:.0f} MiB (docdb.extract_max_file_mb)",
            )
        else:
            result = (True, text)
    except NeedsOCR:
        result = (True, NEEDS_OCR)
    except MemoryError:
        result = (False, f"{path.name}: reading it needs more memory than the extractor may use")
    except RecursionError:
        result = (False, f"{path.name}: nested too deeply to read")
    except ExtractionError as exc:
        result = (False, str(exc))
    except FileNotFoundError:
        result = (False, f"{path.name}: the file was removed while the parse ran")
    except OSError as exc:  # its text names the server's path: the reason says what happened only
        result = (False, f"{path.name}: could not be read ({exc.strerror or type(exc).__name__})")
    except BaseException as exc:  # a native library's panic (pyo3's PanicException is no Exception)
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        result = (False, f"{path.name}: the parser gave up on it ({type(exc).__name__})")
    return [(int(request[0]), True, result)]


def _address_space() -> int:
    """This process's virtual memory size in bytes (VmSize)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def main() -> None:
    memory_mb, max_bytes = int(sys.argv[1]), int(sys.argv[2])
    office = len(sys.argv) > 3 and sys.argv[3] == "office"
    ocr = len(sys.argv) > 4 and sys.argv[4] == "ocr"
    # The converters' libraries are loaded first and the cap counts from there: docling-rs alone maps
    # about 700 MiB of address space (mostly reserved, not resident), which would eat a small cap.
    preload_converters(office, ocr)
    limit = _address_space() + memory_mb * MIB
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    serve(lambda inbox: _handle(inbox, max_bytes))


if __name__ == "__main__":
    main()
