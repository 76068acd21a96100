"""Text out of the file types a knowledge base accepts, with well-kept libraries; CPU-bound, so callers
run it in a thread. An unsupported or unreadable file raises `ExtractionError` naming the file."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path


class ExtractionError(ValueError):
    """The file could not be turned into text."""


def _decode(data: bytes) -> str:
    """UTF-8 (with or without BOM), UTF-16 when it has a BOM, else GB18030 (Chinese), else lossy UTF-8."""
    encodings = ["utf-8-sig"]
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        encodings.insert(0, "utf-16")
    encodings.append("gb18030")
    for encoding in encodings:
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("utf-8", errors="replace")


def _text(path: Path) -> str:
    return _decode(path.read_bytes())


def _html(path: Path) -> str:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(_decode(path.read_bytes()), "html.parser")
    for tag in soup(["script", "style", "noscript", "template"]):
        tag.decompose()
    lines = (line.strip() for line in soup.get_text("\n").splitlines())
    return "\n".join(line for line in lines if line)


def _pdf(path: Path) -> str:
    from pypdf import PdfReader

    reader = PdfReader(str(path))
    return "\n\n".join(page.extract_text() or "" for page in reader.pages)


def _docx(path: Path) -> str:
    import docx

    document = docx.Document(str(path))
    parts = [p.text for p in document.paragraphs if p.text.strip()]
    for table in document.tables:
        for row in table.rows:
            parts.append(" | ".join(cell.text.strip() for cell in row.cells))
    return "\n".join(parts)


def _rows_as_text(header: list[str], rows: list[list[str]]) -> str:
    """One line per row, `column: value` pairs, so every chunk carries its column names."""
    lines = []
    for row in rows:
        pairs = [f"{h}: {v}" for h, v in zip(header, row, strict=False) if str(v).strip()]
        if pairs:
            lines.append("; ".join(pairs))
    return "\n".join(lines)


def _csv(path: Path) -> str:
    text = _decode(path.read_bytes())
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(text[:4096])
    except csv.Error:
        dialect = csv.excel
    rows = list(csv.reader(io.StringIO(text), dialect))
    if not rows:
        return ""
    return _rows_as_text(rows[0], rows[1:])


def _xlsx(path: Path) -> str:
    from openpyxl import load_workbook

    book = load_workbook(str(path), read_only=True, data_only=True)
    parts = []
    for sheet in book.worksheets:
        rows = [["" if v is None else str(v) for v in row] for row in sheet.iter_rows(values_only=True)]
        rows = [r for r in rows if any(c.strip() for c in r)]
        if rows:
            parts.append(f"# {sheet.title}\n" + _rows_as_text(rows[0], rows[1:]))
    book.close()
    return "\n\n".join(parts)


def _json(path: Path) -> str:
    try:
        value = json.loads(_decode(path.read_bytes()))
    except json.JSONDecodeError as exc:
        raise ExtractionError(f"{path.name}: not valid JSON ({exc})") from exc
    lines: list[str] = []

    def walk(node: object, prefix: str) -> None:
        if isinstance(node, dict):
            for key, child in node.items():
                walk(child, f"{prefix}.{key}" if prefix else str(key))
        elif isinstance(node, list):
            for index, child in enumerate(node):
                walk(child, f"{prefix}[{index}]")
        elif node is not None:
            lines.append(f"{prefix}: {node}" if prefix else str(node))

    walk(value, "")
    return "\n".join(lines)


EXTRACTORS: dict[str, Callable[[Path], str]] = {
    ".txt": _text,
    ".md": _text,
    ".markdown": _text,
    ".text": _text,
    ".log": _text,
    ".html": _html,
    ".htm": _html,
    ".pdf": _pdf,
    ".docx": _docx,
    ".csv": _csv,
    ".tsv": _csv,
    ".xlsx": _xlsx,
    ".json": _json,
}


def supported(path: Path) -> bool:
    return path.suffix.lower() in EXTRACTORS


def extract_text(path: Path) -> str:
    extractor = EXTRACTORS.get(path.suffix.lower())
    if extractor is None:
        raise ExtractionError(
            f"{path.name}: unsupported file type {path.suffix or '(none)'}; "
            f"supported: {', '.join(sorted(EXTRACTORS))}"
        )
    try:
        return extractor(path)
    except ExtractionError:
        raise
    except Exception as exc:
        raise ExtractionError(
            f"{path.name}: could not be read as {path.suffix}: {type(exc).__name__}: {exc}"
        ) from exc


# Pictures inside documents, for the vision model (`docdb.vlm`): the larger ones (icons and rules are
# small), at most PICTURES_PER_FILE per file, in document order.
PICTURE_SUFFIXES = (".pdf", ".docx")
PICTURES_PER_FILE = 32
MIN_PICTURE_BYTES = 2048
_MAGIC = ((b"\x89PNG", "image/png"), (b"\xff\xd8", "image/jpeg"), (b"GIF8", "image/gif"))


def _mime(data: bytes) -> str | None:
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _as_sendable(data: bytes) -> tuple[str, bytes] | None:
    """The picture in a format vision models take (PNG, JPEG, GIF, WebP), converting others to PNG."""
    mime = _mime(data)
    if mime is not None:
        return mime, data
    try:
        from PIL import Image

        with Image.open(io.BytesIO(data)) as image:
            out = io.BytesIO()
            image.convert("RGB").save(out, "PNG")
    except Exception:
        return None  # a format Pillow cannot read either: no caption rather than a failed parse
    return "image/png", out.getvalue()


def _pdf_pictures(path: Path) -> list[bytes]:
    from pypdf import PdfReader

    found = []
    for page in PdfReader(str(path)).pages:
        for image in page.images:
            found.append(image.data)
    return found


def _docx_pictures(path: Path) -> list[bytes]:
    import docx

    document = docx.Document(str(path))
    return [
        rel.target_part.blob
        for rel in document.part.rels.values()
        if not rel.is_external and rel.reltype.endswith("/image")
    ]


def embedded_pictures(path: Path) -> list[tuple[str, bytes]]:
    """(mime, bytes) of the pictures inside a PDF or DOCX; [] for other types or an unreadable file."""
    suffix = path.suffix.lower()
    if suffix not in PICTURE_SUFFIXES:
        return []
    try:
        raw = _pdf_pictures(path) if suffix == ".pdf" else _docx_pictures(path)
    except Exception:
        return []  # the text extraction reports an unreadable file; pictures are a bonus
    pictures = []
    for data in raw:
        if len(data) < MIN_PICTURE_BYTES:
            continue
        sendable = _as_sendable(data)
        if sendable is not None:
            pictures.append(sendable)
        if len(pictures) == PICTURES_PER_FILE:
            break
    return pictures
