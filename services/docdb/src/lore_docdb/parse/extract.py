"""Text out of the file types a knowledge base accepts, through the converters in `parse/convert/`
(Markdown-like: headings, lists, tables one row per line, PDF pages split by form feeds, images and
scanned pages through OCR); CPU-bound and run in the extraction child. An unsupported or unreadable
file raises `ExtractionError` naming it."""

from __future__ import annotations

import io
import json
import re
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePath
from typing import Any

from lore_docdb.parse.convert.common import ENCRYPTED, PAGE_BREAK, decode, drop_leaders, md_table, refused
from lore_docdb.parse.convert.common import ExtractionError as ExtractionError  # named here by callers
from lore_docdb.parse.convert.docformats import (
    docbook_markdown,
    fb2_markdown,
    notebook_markdown,
    opml_markdown,
    org_markdown,
    rst_markdown,
    srt_markdown,
    svg_markdown,
    typst_markdown,
)
from lore_docdb.parse.convert.iwork import keynote_markdown, numbers_markdown, pages_markdown
from lore_docdb.parse.convert.latex import latex_markdown
from lore_docdb.parse.convert.mail import eml_markdown, mbox_markdown, mht_markdown, rtf_text
from lore_docdb.parse.convert.markup import epub_markdown, html_file, html_markdown, markdown_file
from lore_docdb.parse.convert.ocr import IMAGE_SUFFIXES, image_text, open_image
from lore_docdb.parse.convert.office import docling_markdown, is_wordml, wordml_markdown
from lore_docdb.parse.convert.outlook import msg_markdown
from lore_docdb.parse.convert.pdf import NeedsOCR, pdf_text
from lore_docdb.parse.convert.prosemirror import document_of, prosemirror_markdown
from lore_docdb.parse.convert.sheets import (
    csv_markdown,
    is_spreadsheetml,
    sheets_markdown,
    spreadsheetml_markdown,
)
from lore_docdb.parse.convert.word97 import OLE_MAGIC

MARKUP_HEAD = 2048  # the characters a text file's markup kind is told by


_HEADER = re.compile(r"^([A-Za-z][A-Za-z0-9-]*):[ \t]")


def _is_email(start: str) -> bool:
    """The text opens with an e-mail's header block (a message saved as .txt): header lines up to
    the first blank line, among them From and one of Subject, Date, MIME-Version or Message-ID."""
    names = set()
    for line in start.replace("\r\n", "\n").split("\n\n", 1)[0].split("\n"):
        found = _HEADER.match(line)
        if found:
            names.add(found.group(1).lower())
        elif not line[:1].isspace():  # a folded header goes on indented; anything else is text
            return False
    return "from" in names and bool(names & {"subject", "date", "mime-version", "message-id"})


def markup_kind(head: str) -> str | None:
    """`html` or `xml` for a text file that is really a markup document (an article saved as .txt),
    `patent` for a USPTO full-text (APS) patent, whose tagged lines start `PATN`, `email` for a
    message with its headers; told by how the file starts; None for text."""
    if _is_email(head.lstrip("\ufeff \t\r\n")):
        return "email"
    start = head.lstrip("\ufeff \t\r\n").lower()
    if start.startswith(("<!doctype html", "<html")):
        return "html"
    if start.startswith(("<?xml", "<!doctype")):
        return "xml"
    if start.startswith(("patn\n", "patn\r\n")):
        return "patent"
    return None


def _text(path: Path) -> str:
    """Text in any encoding; a text file holding an HTML page or an XML article is read as one."""
    text = decode(path.read_bytes())
    kind = markup_kind(text[:MARKUP_HEAD])
    if kind == "html":
        return html_markdown(text)
    if kind == "xml":
        return _xml(path, as_xml=True)
    if kind == "patent":  # docling-rs reads APS text by its content: title, abstract, sections, claims
        return docling_markdown(path)
    if kind == "email":
        return _eml(path)
    return text


def _xml(path: Path, as_xml: bool = False) -> str:
    """docling-rs for the XML it has a reader for (JATS articles, USPTO patents, XBRL reports), else
    the text of the elements (docling-rs hands other XML back whole, as a code block of markup).
    `as_xml`: the file's name says otherwise (.txt). Word's and Excel's 2003 XML formats are read as
    a Word document and a workbook."""
    with path.open("rb") as handle:
        head = handle.read(MARKUP_HEAD * 2)
    if is_wordml(head):
        return wordml_markdown(path)
    if is_spreadsheetml(head):
        return spreadsheetml_markdown(path)
    dialect = _xml_dialect(head)
    if dialect is not None:
        return dialect(path)
    try:
        markdown = docling_markdown(path, ".xml" if as_xml else None)
    except ExtractionError:
        raise
    except Exception:  # an XML docling-rs takes for one of its dialects but cannot read (a repeated
        return _xml_text(path)  # attribute in a JATS file): its elements' text, read leniently
    if not (markdown.startswith("```") and markdown.rstrip().endswith("```")):
        return markdown
    return _xml_text(path)


_DOCBOOK_HEAD = re.compile(
    rb"<!DOCTYPE\s+\w+\s+PUBLIC\s+\"-//OASIS//DTD DocBook|xmlns=\"http://docbook\.org/ns/docbook\""
)


def _xml_dialect(head: bytes) -> Callable[[Path], str] | None:
    """The reader of an XML file that is a FictionBook, an OPML outline or a DocBook document under
    `.xml`, told by its root or its DOCTYPE in the first bytes."""
    start = re.sub(rb"<\?.*?\?>|<!--.*?-->|\s", b"", head[:512], flags=re.DOTALL)
    if start.startswith(b"<FictionBook"):
        return fb2_markdown
    if start.startswith(b"<opml"):
        return opml_markdown
    if _DOCBOOK_HEAD.search(head):
        return docbook_markdown
    return None


def _eml(path: Path) -> str:
    return eml_markdown(path, enclosed_markdown)  # with its attachments' text


def _mbox(path: Path) -> str:
    return mbox_markdown(path, enclosed_markdown)


def _msg(path: Path) -> str:
    return msg_markdown(path, enclosed_markdown)


def _word97(path: Path) -> str:
    """A .doc: Word 97 through docling-rs, or Word 2003 XML, which Word also saves under .doc."""
    with path.open("rb") as handle:
        head = handle.read(MARKUP_HEAD * 2)
    return wordml_markdown(path) if is_wordml(head) else docling_markdown(path)


def _excel97(path: Path) -> str:
    """A .xls: Excel 97 through calamine, or Excel 2003 XML, which Excel also saves under .xls."""
    with path.open("rb") as handle:
        head = handle.read(MARKUP_HEAD * 2)
    return spreadsheetml_markdown(path) if is_spreadsheetml(head) else sheets_markdown(path)


_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]{200,}")


def _xml_text(path: Path) -> str:
    """Any XML as text: each element that holds text of its own is one paragraph with everything
    inside it (so `A keeper <b>writes</b>` stays one); elements that only hold others are walked."""
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, recover=True, huge_tree=False)
    root = etree.fromstring(path.read_bytes(), parser)
    paragraphs: list[str] = []
    stack = [] if root is None else [root]
    while stack:
        element = stack.pop()
        if not isinstance(element.tag, str):
            continue  # a comment or a processing instruction
        table = _records_table(element)
        if table:
            paragraphs.append(table)
        elif element.text and _BASE64.fullmatch(element.text.strip()):
            pass  # an embedded file or picture as base64: no text
        elif element.text and element.text.strip():
            paragraphs.append(" ".join("".join(element.itertext()).split()))
        else:
            stack.extend(reversed(element))
        if element is not root and element.tail and element.tail.strip():
            paragraphs.append(" ".join(element.tail.split()))
    if not paragraphs:
        raise ExtractionError(f"{path.name}: no text in this XML (not well-formed, or only markup)")
    return "\n\n".join(paragraphs)


def _records_table(element: Any) -> str:
    """A pipe table of an element that holds records (`<CATALOG><CD><TITLE>…</TITLE><ARTIST>…`): two
    or more children of one name, each holding only fields (elements with text and nothing inside),
    the fields' names the header; '' for any other element. Read one paragraph per field, a
    catalogue lost which value was which."""
    if element.text and element.text.strip():
        return ""
    records = [child for child in element if isinstance(child.tag, str)]
    if len(records) < 2 or len({r.tag for r in records}) != 1:
        return ""
    names: dict[str, None] = {}
    rows: list[dict[str, str]] = []
    for record in records:
        fields = [f for f in record if isinstance(f.tag, str)]
        if (record.text and record.text.strip()) or len(fields) < 2:
            return ""
        row: dict[str, str] = {}
        for field in fields:
            if any(isinstance(inner.tag, str) for inner in field) or field.tag in row:
                return ""  # a field with elements inside, or a repeated one: not a flat record
            name = etree_name(field)
            names.setdefault(name, None)
            row[name] = " ".join((field.text or "").split())
        rows.append(row)
    return md_table([list(names), *[[row.get(name, "") for name in names] for row in rows]])


def etree_name(element: Any) -> str:
    """An element's name without its namespace."""
    return str(element.tag).rsplit("}", 1)[-1]


def _vtt(path: Path) -> str:
    """WebVTT's cues in order. The words after `WEBVTT` on its first line are a comment on the file
    (`WEBVTT FILE`, `WEBVTT - Translation of that film`), which docling-rs made the title (`# FILE`)."""
    markdown = docling_markdown(path)
    with path.open("rb") as handle:
        first = decode(handle.readline(1024)).strip()
    comment = first[len("WEBVTT") :].strip() if first.startswith("WEBVTT") else ""
    title = f"# {comment}"
    if comment and (markdown == title or markdown.startswith(title + "\n")):
        markdown = markdown[len(title) :].lstrip("\n")
    return markdown


def _json_values(text: str) -> list[object]:
    """The JSON values of the text one after another: one document, or JSON Lines (a log, an export)
    and objects written back to back, which `json.loads` refuses as `Extra data`."""
    decoder = json.JSONDecoder()
    values: list[object] = []
    at = 0
    text = text.lstrip("\ufeff")
    while True:
        while at < len(text) and text[at] in " \t\r\n":
            at += 1
        if at == len(text):
            return values
        value, at = decoder.raw_decode(text, at)
        values.append(value)


def _json(path: Path) -> str:
    """Each value as `path.to.key: value` lines; the records of JSON Lines apart, each its own block
    (`[3].id: ...`); a rich-text document (ProseMirror's tree: a Box Note, an editor's or Atlassian's
    export) as the Markdown of its headings, lists and tables."""
    try:
        values = _json_values(decode(path.read_bytes()))
    except json.JSONDecodeError as exc:
        raise ExtractionError(f"{path.name}: not valid JSON ({exc})") from exc
    if len(values) == 1 and (document := document_of(values[0])) is not None:
        return prosemirror_markdown(document)
    if len(values) > 1:
        return "\n\n".join(_json_lines(value, f"[{n}]") for n, value in enumerate(values))
    return _json_lines(values[0] if values else None, "")


def _json_lines(value: object, root: str) -> str:
    lines: list[str] = []

    def walk(node: object, prefix: str) -> None:
        if isinstance(node, dict):
            for key, child in node.items():
                walk(child, f"{prefix}.{key}" if prefix else str(key))
        elif isinstance(node, list):
            for index, child in enumerate(node):
                walk(child, f"{prefix}[{index}]")
        elif node is not None:
            value = ("true" if node else "false") if isinstance(node, bool) else str(node)
            lines.append(f"{prefix}: {value}" if prefix else value)

    walk(value, root)
    return "\n".join(lines)


EXTRACTORS: dict[str, Callable[[Path], str]] = {
    ".txt": _text,
    ".md": markdown_file,
    ".markdown": markdown_file,
    ".mdx": markdown_file,  # Markdown with JSX (Docusaurus, Nextra): its imports and components' tags dropped
    ".qmd": markdown_file,  # Quarto and R Markdown: Markdown with a front matter and code chunks
    ".rmd": markdown_file,
    ".text": _text,
    ".log": _text,
    ".yaml": _text,  # configuration and API descriptions (OpenAPI): readable as they are written
    ".yml": _text,
    ".html": html_file,
    ".htm": html_file,
    ".xhtml": html_file,
    ".pdf": pdf_text,
    ".docx": docling_markdown,
    ".doc": _word97,
    ".pptx": docling_markdown,
    ".ppt": docling_markdown,
    ".odt": docling_markdown,
    ".odp": docling_markdown,
    ".nxml": docling_markdown,  # JATS articles
    ".xml": _xml,  # JATS, USPTO, XBRL through docling-rs; other XML as the text of its elements
    ".adoc": docling_markdown,
    ".asciidoc": docling_markdown,
    ".tex": latex_markdown,  # LaTeX: sections, lists, tables; the macros themselves dropped
    ".latex": latex_markdown,
    ".vtt": _vtt,  # WebVTT subtitles and transcripts: the cues' text in order
    ".srt": srt_markdown,  # SubRip subtitles: the same
    ".svg": svg_markdown,  # drawings: their title and text elements
    ".epub": epub_markdown,
    ".eml": _eml,
    ".msg": _msg,  # Outlook's messages (an OLE2 file): read as an .eml is
    ".mbox": _mbox,  # a mailbox: each message under its subject
    ".mht": mht_markdown,  # a web page saved as one file (MIME): its HTML part
    ".mhtml": mht_markdown,
    ".rtf": rtf_text,
    ".csv": csv_markdown,
    ".tsv": csv_markdown,
    ".xlsx": sheets_markdown,
    ".xlsm": sheets_markdown,
    ".xlsb": sheets_markdown,  # Excel's binary workbook: calamine reads it as it reads an .xlsx
    ".xls": _excel97,
    ".ods": sheets_markdown,
    ".pages": pages_markdown,  # Apple iWork: the body, headings, lists and tables in place
    ".key": keynote_markdown,  # each slide a page: its title, text boxes, tables and notes
    ".numbers": numbers_markdown,  # each sheet's tables under their names
    ".ipynb": notebook_markdown,  # Jupyter: Markdown cells, code cells as code, outputs' text
    ".rst": rst_markdown,  # reStructuredText through docutils; Sphinx's roles read as text
    ".rest": rst_markdown,
    ".org": org_markdown,
    ".opml": opml_markdown,
    ".typ": typst_markdown,  # Typst: headings, lists, tables, code; nothing included from elsewhere
    ".fb2": fb2_markdown,  # FictionBook
    ".dbk": docbook_markdown,
    ".docbook": docbook_markdown,
    ".json": _json,
    ".boxnote": _json,  # Box Notes: a ProseMirror document
    ".geojson": _json,
    ".jsonl": _json,
    ".ndjson": _json,
    **{suffix: image_text for suffix in IMAGE_SUFFIXES},
}

# Office's macro-enabled files, templates and slide shows, and OpenDocument's templates: each is the
# package of the format it is saved from (its macros are never run nor read), so that format's
# converter reads it, under that format's suffix (`read_as`), and it is paged, pictured and cited as
# that format is.
SAME_AS = {
    ".docm": ".docx",
    ".dotx": ".docx",
    ".dotm": ".docx",
    ".dot": ".doc",
    ".pptm": ".pptx",
    ".ppsx": ".pptx",
    ".ppsm": ".pptx",
    ".potx": ".pptx",
    ".potm": ".pptx",
    ".pps": ".ppt",
    ".pot": ".ppt",
    ".xltx": ".xlsx",
    ".xltm": ".xlsx",
    ".xlt": ".xls",
    ".ott": ".odt",
    ".otp": ".odp",
    ".ots": ".ods",
}
EXTRACTORS.update({alias: EXTRACTORS[kind] for alias, kind in SAME_AS.items()})


def file_type(name: str | PurePath) -> str:
    """The suffix of the format a file's name says it is in, lower case; a template, macro-enabled
    file or slide show as the format it is saved from (`deck.ppsx` → `.pptx`)."""
    suffix = PurePath(name).suffix.lower()
    return SAME_AS.get(suffix, suffix)


# A Word, PowerPoint or Excel 97 file (OLE2) saved under its newer format's name, as some programs
# export them: read as the 97 format it is.
LEGACY_OF = {".docx": ".doc", ".pptx": ".ppt", ".xlsx": ".xls", ".xlsm": ".xls", ".xlsb": ".xls"}


@contextmanager
def read_as(path: Path) -> Iterator[Path]:
    """The file under a name with its format's own suffix (a link in a scratch folder), for converters
    that tell a format by its suffix; the file itself when it has that suffix already."""
    kind = file_type(path)
    if kind in LEGACY_OF:
        with path.open("rb") as handle:
            if handle.read(len(OLE_MAGIC)) == OLE_MAGIC:
                kind = LEGACY_OF[kind]
    if kind == path.suffix.lower():
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="lore-as-") as folder:
        alias = Path(folder) / (path.stem + kind)
        alias.symlink_to(path.resolve())
        yield alias


# The formats docling-rs reads. Loading it costs about 2 s of CPU and maps about 700 MiB of address
# space, so only an extraction child that meets one of these loads it.
OFFICE_SUFFIXES = frozenset(
    suffix
    for suffix, convert in EXTRACTORS.items()
    if convert in (docling_markdown, _xml, _vtt, latex_markdown)
)
TEXT_SUFFIXES = frozenset(suffix for suffix, convert in EXTRACTORS.items() if convert is _text)


def needs_office(path: Path) -> bool:
    """docling-rs is needed: an Office or article format, or a text file holding an XML article or
    an APS patent."""
    suffix = file_type(path)
    if suffix in OFFICE_SUFFIXES:
        return True
    if suffix == ".zip":  # an archive holding Office files
        import zipfile

        try:
            with zipfile.ZipFile(path) as archive:
                return any(file_type(name) in OFFICE_SUFFIXES for name in archive.namelist()[:MAX_MEMBERS])
        except (zipfile.BadZipFile, OSError):
            return False
    if suffix in (".tar", ".tgz", ".gz", ".tbz2", ".txz"):
        import tarfile

        try:
            names = _tar_names(path) if tarfile.is_tarfile(path) else [path.stem]
        except (tarfile.TarError, OSError, EOFError):
            return False
        return any(file_type(name) in OFFICE_SUFFIXES for name in names)
    if suffix not in TEXT_SUFFIXES:
        return False
    try:
        with path.open("rb") as handle:
            head = handle.read(MARKUP_HEAD)
    except OSError:
        return False
    return markup_kind(head.decode("utf-8", "ignore")) in ("xml", "patent")


def needs_ocr(path: Path) -> bool:
    """An image: read by OCR. (A scanned PDF is found out only while reading it.)"""
    return path.suffix.lower() in IMAGE_SUFFIXES


def preload_converters(office: bool, ocr: bool = False) -> None:
    """Load the converters' native libraries now (the extraction child does, before its memory cap);
    docling-rs only when `office`, the OCR engine (onnxruntime, 0.7 CPU-s and about 110 MB) only when
    `ocr`. Without it, a scanned PDF page raises `NeedsOCR` instead of loading the engine."""
    import cramjam
    import lxml.html
    import pypdfium2
    import python_calamine
    from google.protobuf import empty_pb2

    from lore_docdb.parse.convert import pdf

    del cramjam, empty_pb2, lxml, pypdfium2, python_calamine
    if office:
        from lore_docdb.parse.convert.office import _converter

        _converter()
    pdf.ocr_allowed = ocr
    if ocr:
        import pillow_heif

        from lore_docdb.parse.convert.ocr import engine

        del pillow_heif
        engine()


def supported(path: Path) -> bool:
    return path.suffix.lower() in EXTRACTORS


_SURROGATE = re.compile("[\ud800-\udfff]")


def whole_characters(text: str) -> str:
    """The text with UTF-16 surrogates a converter let through (`\\u-10240` in RTF, `&#55357;` in
    markup) paired into their characters and a lone one replaced: a lone surrogate cannot be
    encoded, and the extraction child died sending the text back."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def extract_text(path: Path) -> str:
    extractor = EXTRACTORS.get(path.suffix.lower())
    if extractor is None:
        raise ExtractionError(
            f"{path.name}: unsupported file type {path.suffix or '(none)'}; "
            f"supported: {', '.join(sorted(EXTRACTORS))}"
        )
    with read_as(path) as source:
        try:
            return drop_leaders(whole_characters(extractor(source)))
        except NeedsOCR:
            raise
        except ExtractionError as exc:
            if source is path:
                raise
            raise ExtractionError(str(exc).replace(source.name, path.name)) from None
        except Exception as exc:
            # a library's message names the server's path, or the link `read_as` made
            why = str(exc).replace(str(source), path.name).replace(str(path), path.name)
            raise ExtractionError(
                f"{path.name}: could not be read as {path.suffix}: {type(exc).__name__}: {why}"
            ) from exc


# Files inside a file, read as files of their own (`enclosed_markdown`): an e-mail's attachments (at
# most MAX_ATTACHMENTS per message) and a zip archive's members (`zip_markdown`); a file inside a file
# inside a file once, no deeper.
MAX_ENCLOSED_DEPTH = 2
_enclosed_depth = 0
_UNSAFE_NAME = re.compile(r"[^\w.\- ]+")
_HEADING_LINE = re.compile(r"^(#{1,5}) ", re.MULTILINE)


def enclosed_markdown(label: str, name: str, data: bytes) -> str | None:
    """A file found inside another (`label`: Attachment, File) with its text under a heading naming
    it, read by its type's converter as an uploaded file would be (a copy in a scratch folder under
    its name made safe), its headings one level deeper; None for a type docdb does not read, a
    picture (logos and signatures, whose OCR is noise) or past the depth limit; a line saying why
    for one it could not read. A scan inside raises `NeedsOCR`, so the outer file is read again
    where OCR is loaded."""
    global _enclosed_depth
    base = _UNSAFE_NAME.sub("_", PurePath(name.replace("\\", "/")).name).strip(" .") or "file"
    suffix = PurePath(base).suffix.lower()
    if suffix not in EXTRACTORS or suffix in IMAGE_SUFFIXES or _enclosed_depth >= MAX_ENCLOSED_DEPTH:
        return None
    heading = f"# {label}: {name}"
    _enclosed_depth += 1
    try:
        with tempfile.TemporaryDirectory(prefix="lore-enclosed-") as folder:
            path = Path(folder) / base
            path.write_bytes(data)
            try:
                text = extract_text(path)
            except NeedsOCR:
                raise
            except ExtractionError as exc:
                return f"{heading}\n\n(not read: {str(exc).removeprefix(f'{base}: ')})"
            except MemoryError:  # the outer file's own text is kept; this one alone is left out
                return f"{heading}\n\n(not read: it needs more memory than the extractor may use)"
            except BaseException as exc:  # a native library's panic (pyo3's PanicException)
                if isinstance(exc, KeyboardInterrupt | SystemExit):
                    raise
                return f"{heading}\n\n(not read: the parser gave up on it)"
    finally:
        _enclosed_depth -= 1
    text = _HEADING_LINE.sub(r"#\1 ", text.replace(PAGE_BREAK, "\n\n")).strip()
    return f"{heading}\n\n{text}" if text else None


# A zip archive's members: at most this many read, none larger than MAX_MEMBER_BYTES once inflated
# nor inflated over MAX_INFLATION times its stored size (a bomb), and MAX_ARCHIVE_BYTES in all.
MAX_MEMBERS = 200
MAX_MEMBER_BYTES = 64 * 1024 * 1024
MAX_ARCHIVE_BYTES = 512 * 1024 * 1024
MAX_INFLATION = 200


def zip_markdown(path: Path) -> str:
    """Each member of a type docdb reads, in the archive's order, under `# File: its/path`: a folder
    of documents sent as one file. Folders, hidden files and macOS's `__MACOSX` copies are passed
    over; a member too large, inflated like a bomb or encrypted says why under its heading."""
    import zipfile

    parts: list[str] = []
    read = inflated = 0
    encrypted = members = 0
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            name = info.filename
            if (
                info.is_dir()
                or name.startswith("__MACOSX/")
                or any(part.startswith(".") for part in name.split("/"))
            ):
                continue
            members += 1
            if read >= MAX_MEMBERS:
                parts.append(f"(the archive's other files are not read: at most {MAX_MEMBERS} are)")
                break
            why = None
            if info.flag_bits & 1:
                encrypted += 1
                why = "it is password-protected"
            elif info.file_size > MAX_MEMBER_BYTES or inflated + info.file_size > MAX_ARCHIVE_BYTES:
                why = f"it is {info.file_size / 2**20:.0f} MiB once inflated, over the archive's limits"
            elif info.file_size > MAX_INFLATION * max(info.compress_size, 1) and info.file_size > 2**20:
                why = "it inflates like a zip bomb"
            if why is not None:
                parts.append(f"# File: {name}\n\n(not read: {why})")
                continue
            inflated += info.file_size
            text = enclosed_markdown("File", name, archive.read(info))
            if text is not None:
                read += 1
                parts.append(text)
    if members and encrypted == members:
        raise refused(path, ENCRYPTED)
    return "\n\n".join(parts)


EXTRACTORS[".zip"] = zip_markdown  # a folder of documents sent as one file: each member read as a file


def _tar_names(path: Path) -> list[str]:
    """The names of a tarball's files (gzip, bzip2 or xz compressed, or not), in order."""
    import tarfile

    with tarfile.open(path, "r|*") as archive:
        return [m.name for _, m in zip(range(MAX_MEMBERS * 4), archive, strict=False) if m.isfile()]


def tar_markdown(path: Path) -> str:
    """A tarball (`.tar`, `.tar.gz`, `.tgz`, also bzip2 and xz) read as a zip archive is: each regular
    file under `# File: its/path`, with the same limits (links, devices and folders passed over; a
    member is read from the stream, never written where its name points); a `.gz` that holds one
    file, not a tarball (`notes.txt.gz`), is that file."""
    import gzip
    import tarfile

    if not tarfile.is_tarfile(path):
        if path.suffix.lower() != ".gz":
            raise refused(path, "is not a tar archive")
        with gzip.open(path) as handle:
            data = handle.read(MAX_MEMBER_BYTES + 1)
        if len(data) > MAX_MEMBER_BYTES:
            raise refused(path, f"it inflates past {MAX_MEMBER_BYTES // 2**20} MiB")
        text = enclosed_markdown("File", path.stem, data)
        if text is None:
            raise refused(path, f"the file it holds, {path.stem}, is of a type docdb does not read")
        return text
    parts: list[str] = []
    read = inflated = 0
    with tarfile.open(path, "r|*") as archive:
        for member in archive:
            name = member.name.removeprefix("./")
            if not member.isfile() or any(part.startswith(".") for part in name.split("/")):
                continue
            if read >= MAX_MEMBERS:
                parts.append(f"(the archive's other files are not read: at most {MAX_MEMBERS} are)")
                break
            if member.size > MAX_MEMBER_BYTES or inflated + member.size > MAX_ARCHIVE_BYTES:
                why = f"it is {member.size / 2**20:.0f} MiB, over the archive's limits"
                parts.append(f"# File: {name}\n\n(not read: {why})")
                continue
            source = archive.extractfile(member)
            if source is None:
                continue
            inflated += member.size
            text = enclosed_markdown("File", name, source.read())
            if text is not None:
                read += 1
                parts.append(text)
    return "\n\n".join(parts)


for _suffix in (".tar", ".tgz", ".gz", ".tbz2", ".txz"):
    EXTRACTORS[_suffix] = tar_markdown


# Pictures inside documents, for the vision model (`docdb.vlm`): the larger ones (icons and rules are
# small), at most PICTURES_PER_FILE per file, in document order.
PICTURE_SUFFIXES = (".pdf", ".docx", *IMAGE_SUFFIXES)
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
        with open_image(io.BytesIO(data)) as image:
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
    """(mime, bytes) of the pictures inside a PDF or DOCX, or an image file itself; [] for other types
    or an unreadable file."""
    suffix = file_type(path)
    if suffix not in PICTURE_SUFFIXES:
        return []
    try:
        if suffix in IMAGE_SUFFIXES:
            raw = [path.read_bytes()]
        else:
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
