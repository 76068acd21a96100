"""Word processing, presentation and article formats through docling-rs (MIT, Rust, pinned): DOCX,
DOC, PPTX, PPT, ODT, ODP, JATS XML and AsciiDoc to Markdown with headings, lists and tables in place,
slides in order with their notes. These formats need none of docling's models; OCR and pictures are
turned off so nothing is fetched.

Word and OpenDocument files often set their headings by hand, as a short paragraph in bold or in a
larger size, with no heading style: docling-rs reads those as `**Title**` text, and their chunks lose
the heading path. `_with_headings` finds such paragraphs (and Word paragraphs given an outline level
directly) and gives them a heading style before docling-rs reads the file."""

from __future__ import annotations

import posixpath
import re
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from io import BytesIO
from itertools import pairwise
from pathlib import Path
from typing import Any

from lore_docdb.parse.convert.common import (
    ENCRYPTED,
    PAGE_BREAK,
    decode,
    refused,
    rust_panics,
    tidy_markdown,
    without_page_label,
)


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


def docling_markdown(path: Path, as_suffix: str | None = None, stream: Any = None) -> str:
    """The document as Markdown, tables compacted to one line per row; a presentation's speaker notes
    and the reviewers' comments (docling's notes layer) after the slide or paragraph they belong to;
    paragraphs that are headings only by their type (bold or larger) as headings.
    `as_suffix`: read the file as that type (an XML article saved as .txt); `stream`: read this
    DocumentStream instead of the file (a source tidied first)."""
    from docling_core.types.doc.common.content_layer import ContentLayer
    from docling_rs import DocumentStream

    source: Any = str(path)
    rewritten = None if stream is not None else _with_headings(path)
    inserts: dict[str, str] = {}
    if stream is not None:
        source = stream
    elif rewritten is not None:
        data, suffix, inserts = rewritten
        source = DocumentStream(name=path.stem + suffix, stream=BytesIO(data))
    elif as_suffix is not None:
        source = DocumentStream(name=path.stem + as_suffix, stream=BytesIO(path.read_bytes()))
    try:
        with rust_panics():
            result = _converter().convert(source)
    except Exception as exc:
        if type(exc).__name__ == "PasswordRequiredError":  # a .doc or .ppt saved with a password
            raise refused(path, ENCRYPTED) from None
        if "no WordDocument stream" not in str(exc):
            raise
        named = _ole_names_cased(path.read_bytes())  # `worddocument`: a writer's lower-case names
        if named is None:
            raise
        with rust_panics():
            result = _converter().convert(DocumentStream(name=path.stem + ".doc", stream=BytesIO(named)))
    layers = {ContentLayer.BODY, ContentLayer.NOTES}
    _mark_slides(result.document)
    markdown = str(result.document.export_to_markdown(included_content_layers=layers))
    if rewritten is None and path.suffix.lower() == ".doc":
        markdown = bold_headings(markdown)  # a Word 97 file: only its Markdown tells what is bold
    markdown = tidy_markdown(plain_markdown(markdown))
    if path.suffix.lower() == ".doc":
        markdown = _with_word97_headers(markdown, path.read_bytes())
    elif path.suffix.lower() == ".ppt":
        markdown = _with_ppt_notes(markdown, path.read_bytes())
        if not markdown.strip():
            from lore_docdb.parse.convert.ppt97 import ppt95_text

            markdown = ppt95_text(path.read_bytes())
    for marker, chunk in inserts.items():  # a Word file's chunks of HTML, RTF or text, in place
        markdown = markdown.replace(marker, chunk)
    return _PAGE_PARAGRAPH.sub(f"\n\n{PAGE_BREAK}\n\n", markdown).strip(" \n")


# A paragraph of its own where a page or a slide begins, made a form feed once the Markdown is tidied
# (`str.splitlines` splits at a form feed, so one would not live through `plain_markdown`).
PAGE_MARKER = "LorePageBreakHere"
_PAGE_PARAGRAPH = re.compile(rf"\s*\b{PAGE_MARKER}\b\s*")
_SLIDE_GROUP = re.compile(r"^slide-(\d+)$")


def _mark_slides(document: Any) -> None:
    """A page marker before each slide but the first: docling-rs puts a PPTX's or an ODP's slides in
    groups of their own (`slide-0`, `slide-1`, a hidden slide's too, with its notes only), each
    slide's comments after its group. Its items'
    page numbers would serve too, but docling's `page_break_placeholder` misplaces them (no break
    before a slide that starts with a list, a slide's comments have no page)."""
    from docling_core.types.doc.labels import DocItemLabel

    before = 0  # the number of the slide before: a slide docling-rs left no group for still counts
    for child in [ref.resolve(document) for ref in document.body.children]:
        named = _SLIDE_GROUP.match(getattr(child, "name", ""))
        if getattr(child, "label", None) != "chapter" or not named:
            continue
        number = int(named.group(1))
        for _ in range(number - before):
            document.insert_text(sibling=child, label=DocItemLabel.TEXT, text=PAGE_MARKER, after=False)
        before = max(before, number)


def _with_word97_headers(markdown: str, data: bytes) -> str:
    """A Word 97 document's page headers before its text and its footers after it, as a DOCX's are
    read (`_with_headers_and_footers`), each line once and not where the text already says it."""
    from lore_docdb.parse.convert.word97 import word97_headers

    headers, footers = word97_headers(data)
    said = {line.strip() for line in markdown.splitlines()}
    top = [line for line in headers if line not in said]
    bottom = [line for line in footers if line not in said and line not in top]
    return "\n\n".join(part for part in [*top, markdown, *bottom] if part)


MIN_ANCHOR = 3  # characters of a slide's first line by which it is found in the Markdown


def _with_ppt_notes(markdown: str, data: bytes) -> str:
    """A PowerPoint 97 presentation with each of its paragraphs once and its speaker notes after
    their slide, as a PPTX's come: before the paragraph where the next slide's first line is (the
    slides found in order), or at the end; a page marker there too where every slide was found.
    A file saved by incremental edits holds its slides once per save and docling-rs read them all,
    one copy after another (a presentation 14 times over, the first copy with its text boxes, the
    others their placeholders' text only): a paragraph an earlier copy has is left out, so what is
    left of a later copy is the text an edit changed, under its heading."""
    from lore_docdb.parse.convert.ppt97 import ppt_notes, slide_lines

    slides, edits = ppt_notes(data)
    lines = slide_lines(data)
    paragraphs = markdown.split("\n\n")
    if edits > 1:
        paragraphs = _without_repeats(paragraphs)
    anchors = [first if len(first) >= MIN_ANCHOR else "" for first, _ in slides]
    found = _slide_starts(paragraphs, lines) if edits <= 1 else None
    starts: list[int | None] = list(found) if found else _found_in_order(paragraphs, anchors, 0)
    pages = Counter(found[1:] if found else [])  # a page marker before each slide but the first
    if not any(notes for _, notes in slides) and not pages:
        return "\n\n".join(paragraphs)
    said = {paragraph.strip() for paragraph in paragraphs}
    before: dict[int, list[str]] = {}
    for n, (_, notes) in enumerate(slides):
        fresh = [line for line in notes if line not in said]
        if fresh:
            follows = next((s for s in starts[n + 1 :] if s is not None), len(paragraphs))
            before.setdefault(follows, []).extend(fresh)
    out: list[str] = []
    for n, paragraph in enumerate([*paragraphs, ""]):
        out += before.get(n, [])
        out += [PAGE_MARKER] * pages[n]
        out.append(paragraph)
    return "\n\n".join(p for p in out if p)


_MARKDOWN_LEAD = re.compile(r"^\s*(?:#{1,6} |[-*+] |\d+[.)] )?")


def _slide_starts(paragraphs: list[str], lines: list[list[str]]) -> list[int] | None:
    """The paragraph each slide begins at, by the lines only that slide has (a heading, a list item,
    a table cell, a paragraph, matched whole): each paragraph holds those of one slide at most, the
    slides come in order, and a slide with text has a paragraph of it. A slide without text (a
    picture) begins where the next one does. None where any of that fails: no pages, not wrong ones."""
    count = Counter(line for slide in lines for line in set(slide))
    owner = {line: n for n, slide in enumerate(lines) for line in slide if count[line] == 1}
    first: dict[int, int] = {}
    last = -1
    for i, paragraph in enumerate(paragraphs):
        said = {_MARKDOWN_LEAD.sub("", line).strip() for line in paragraph.splitlines()}
        said |= {cell.strip() for line in paragraph.splitlines() for cell in line.split("|")}
        slides = {owner[line] for line in said if line in owner}
        if len(slides) > 1 or (slides and min(slides) < last):
            return None
        if slides:
            last = slides.pop()
            first.setdefault(last, i)
    if any(slide and n not in first for n, slide in enumerate(lines)) or len(lines) < 2:
        return None
    starts = [0] * len(lines)
    at = len(paragraphs)
    for n in reversed(range(1, len(lines))):
        at = first.get(n, at)
        starts[n] = at
    return starts


def _without_repeats(paragraphs: list[str]) -> list[str]:
    """The paragraphs less those said before; a heading said before only where a paragraph under it
    is new."""
    seen: set[str] = set()
    kept: list[str] = []
    heading: str | None = None  # a repeated heading, kept once a new paragraph comes under it
    for paragraph in paragraphs:
        key = paragraph.strip()
        repeated = key in seen
        seen.add(key)
        if _HEADING_LINE.match(key):
            heading = key if repeated else None
            if not repeated:
                kept.append(paragraph)
        elif not repeated:
            if heading is not None:
                kept.append(heading)
                heading = None
            kept.append(paragraph)
    return kept


def _found_in_order(paragraphs: list[str], anchors: list[str], start: int) -> list[int | None]:
    """Where each slide's first line is, each after the one before; None where it is not found or
    the slide has none."""
    starts: list[int | None] = []
    at = start
    for anchor in anchors:
        found = (
            next((i for i in range(at, len(paragraphs)) if anchor in paragraphs[i]), None) if anchor else None
        )
        starts.append(found)
        at = at if found is None else found + 1
    return starts


# a Word 97 file's streams as Word names them; the compound file compares names without case
_OLE_NAMES = ("Root Entry", "WordDocument", "1Table", "0Table", "Data", "ObjectPool")
OLE_ENTRY = 128  # bytes of a directory entry; its name, UTF-16, opens it


def _ole_names_cased(data: bytes) -> bytes | None:
    """A Word 97 file whose directory names its streams in another case (`worddocument`, `1TABLE`),
    which docling-rs looks up by their exact names, with those names as Word writes them."""
    if not data.startswith(b"\xd0\xcf\x11\xe0"):
        return None
    out = bytearray(data)
    for name in _OLE_NAMES:
        cased = name.encode("utf-16-le") + b"\x00\x00"
        for found in re.finditer(re.escape(cased), data, re.IGNORECASE):
            if found.start() % OLE_ENTRY == 0:
                out[found.start() : found.end()] = cased
    return bytes(out) if out != data else None


PICTURE = "<!-- image -->"
_HEADING_LINE = re.compile(r"^#{1,6} ")
_LINK_TARGET = re.compile(r"\]\([^()\s]*\)")  # a link's address, whose `&` docling escapes twice
# docling pads bold and italic runs: `belief,  **text**  in`, `*italic* ,`
_SPACE_RUN = re.compile(r"(?<=\S)  +")
_PADDED_PUNCTUATION = re.compile(r"(?<=[^\s*])(\*{1,3}) ([,.;:!?)])")


def plain_markdown(markdown: str) -> str:
    """docling's Markdown as the text says it: `&lt;`, `&gt;`, `&amp;` and `\\_` back to `<`, `>`, `&`
    and `_` outside tables and code (docling escapes them in paragraphs, headings and list items, so
    `R&D` read `R&amp;D` and `x --> y` read `x --&gt; y`; a link's `&` twice, `\\_` in table cells
    too), its placeholder for a picture
    left out, a blank line before a table that follows a line of text, a heading's own bold
    (`## **Scope**`) left out, runs of spaces inside a line made one and the space docling puts
    between bold or italic words and the comma after them (`**bold** ,`) left out."""
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
                line = line.replace("\\_", "_")  # in a bold cell too: `**2026\_invoice.docx**`
            else:
                line = _LINK_TARGET.sub(lambda m: m.group(0).replace("&amp;amp;", "&amp;"), line)
                line = line.replace("\\_", "_").replace("&lt;", "<").replace("&gt;", ">")
                line = line.replace("&amp;", "&")
                if _HEADING_LINE.match(line) and "**" in line:
                    line = line.replace("**", " ")  # a heading's bold says nothing
                indent = len(line) - len(line.lstrip(" "))
                line = line[:indent] + _SPACE_RUN.sub(" ", line[indent:]).rstrip()
                line = _PADDED_PUNCTUATION.sub(r"\1\2", line)
        lines.append(line)
    return "\n".join(lines)


# ------------------------------------------------------------------ headings set by type


@dataclass
class Block:
    """One paragraph, list item or table of a document's body, in order, as far as headings go.
    kind: `text` (a paragraph that may be a heading), `heading` (one already, `level` as docling
    numbers them: a title 0, Heading N / outline level N is N), `content` (a list item, a table, a
    paragraph that cannot be a heading: a caption, a table of contents entry)."""

    kind: str
    text: str = ""
    level: int = 0
    chars: int = 0  # letters and digits
    bold_chars: int = 0  # of those, set in bold
    sizes: Counter[float] = field(default_factory=Counter)  # letters and digits per type size (pt)
    element: Any = None

    def add(self, text: str, bold: bool, size: float | None) -> None:
        letters = len(_ALNUM.findall(text))
        self.chars += letters
        self.bold_chars += letters if bold else 0
        if size is not None and letters:
            self.sizes[size] += letters

    @property
    def bold(self) -> bool:
        """Every letter and digit bold (a colon or a space after the bold words may be plain)."""
        return self.bold_chars > 0 and self.bold_chars >= self.chars

    @property
    def size(self) -> float | None:
        """The smallest type size of its letters: a title is larger all through."""
        return min(self.sizes) if self.sizes else None


HEADING_MAX_WORDS = 12
HEADING_MAX_CHARS = 100
HEADING_MAX_UNSPACED = 40  # Chinese or Japanese, written without spaces
LARGER = 1.2  # a paragraph's type this much larger than the body's sets it apart without bold
SECTION_MIN_WORDS = 6  # what a heading must have under it (or a table or a list)
MOST_HEADINGS = 0.5  # more of the paragraphs than this "headings": bold is the body's type
_ALNUM = re.compile(r"[^\W_]")
_BULLET = re.compile(r"^[\u2022\u25aa\u25cf\u25e6\u2023\u2043\u00b7\u2013\u2014*>-]\s*")


def _heading_shape(text: str) -> bool:
    """Short, no sentence: at most a dozen words, not ending in `.`, `,` or `;`, starting with no
    lower-case Latin letter (the rest of a sentence) or bullet, with a letter in it."""
    text = text.strip()
    if not text or len(text) > HEADING_MAX_CHARS or len(text.split()) > HEADING_MAX_WORDS:
        return False
    if " " not in text and len(text) > HEADING_MAX_UNSPACED:
        return False
    if text[-1] in ".,;" or ("a" <= text[0] <= "z") or _BULLET.match(text):
        return False
    return any(c.isalpha() for c in text)


def promoted(blocks: list[Block]) -> dict[int, int]:
    """Which `text` blocks are headings set by type, and their levels (index -> level).

    A paragraph is one when it is short (`_heading_shape`), all of it bold in body type or larger
    (unless bold is the body's own type) or all of it in type a fifth larger than the body's, the
    paragraphs beside it are not set the same way (a run of bold lines is an address or a list), and
    the text under it, down to the next heading as prominent, has a few words or a table or list.
    Levels follow prominence (larger type first, then bold), below the document's styled headings."""
    texts = [b for b in blocks if b.kind == "text" and b.chars]
    if not texts:
        return {}
    body_sizes: Counter[float] = Counter()
    for block in blocks:
        if block.kind in ("text", "content"):
            body_sizes.update(block.sizes)
    body = body_sizes.most_common(1)[0][0] if body_sizes else None
    bold_share = sum(b.bold_chars for b in texts) / max(1, sum(b.chars for b in texts))

    def key(block: Block) -> tuple[float, bool]:
        return (block.size or body or 0.0, block.bold)

    def candidate(block: Block) -> bool:
        if block.kind != "text" or not _heading_shape(block.text):
            return False
        size = block.size
        if body is not None and size is not None and size >= body * LARGER:
            return True
        return block.bold and bold_share < MOST_HEADINGS and (not body or not size or size >= body)

    shown = [i for i, b in enumerate(blocks) if b.kind != "text" or b.text.strip()]
    found = {i for i in shown if candidate(blocks[i])}
    alike = set()
    for before, after in pairwise(shown):
        if before in found and after in found and key(blocks[before]) == key(blocks[after]):
            alike |= {before, after}
    found -= alike
    headings = []
    for at, i in enumerate(shown):
        if i not in found:
            continue
        words, content = 0, False
        for j in shown[at + 1 :]:
            block = blocks[j]
            if block.kind == "heading" or (j in found and key(block) >= key(blocks[i])):
                break
            if j in found:
                continue
            words += len(block.text.split())
            content = content or block.kind == "content"
        if content or words >= SECTION_MIN_WORDS:
            headings.append(i)
    if len(headings) > MOST_HEADINGS * len(texts):
        return {}
    styled = [b.level for b in blocks if b.kind == "heading"]
    base = max(styled) + 1 if styled else 1
    ranks = sorted({key(blocks[i]) for i in headings}, reverse=True)
    return {i: min(9, base + ranks.index(key(blocks[i]))) for i in headings}


_LIST_OR_TABLE = re.compile(r"^\s*(?:[-*+] |\d+[.)] |\|)")


def bold_headings(markdown: str) -> str:
    """Markdown whose paragraphs set wholly in bold (`**Scope**`) are headings where `promoted` finds
    them so, for a file read without its formatting (a Word 97 `.doc`): one level below the
    Markdown's deepest heading."""
    parts = re.split(r"(\n\s*\n)", markdown)
    blocks: list[Block] = []
    for index in range(0, len(parts), 2):
        part = parts[index].strip()
        if part.startswith("#"):
            level = len(part) - len(part.lstrip("#")) - 1
            blocks.append(Block("heading", part.lstrip("#").strip(), level=level, element=index))
        elif _LIST_OR_TABLE.match(part) or part.startswith("```"):
            blocks.append(Block("content", part, element=index))
        else:
            block = Block("text", element=index)
            pieces = part.split("**")
            if "\n" in part:
                pieces = [part]  # a line break: more than one line is no heading
            for n, piece in enumerate(pieces):
                block.add(piece, n % 2 == 1, None)
            block.text = " ".join(part.replace("**", " ").split())
            blocks.append(block)
    levels = promoted(blocks)
    for i, level in levels.items():
        parts[blocks[i].element] = "#" * (level + 1) + " " + blocks[i].text.strip("* ")
    return "".join(parts)


Prepared = tuple[bytes, str, dict[str, str]]  # the file's bytes, its suffix, Markdown for markers


def _with_headings(path: Path) -> Prepared | None:
    """The DOCX or ODT file (told by its content) with its headings set by type given heading
    styles, and the suffix to read it as; None when it has none or is another kind of file. A DOCX
    whose main part has another name (`word/document2.xml`, as some editors save it, which docling-rs
    refused) comes back with it renamed, and one holding other documents as its text (`altChunk`:
    HTML, a web archive, RTF or text, as programs that write reports make them; docling-rs left them
    out) with a marker paragraph for each, and each one's Markdown to put there."""
    try:
        with path.open("rb") as handle:
            if handle.read(4) != b"PK\x03\x04":
                return None
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            if any(
                info.file_size > MAX_REWRITTEN_PART
                for info in archive.infolist()
                if info.filename.endswith(".xml")
            ):
                return None  # a huge part (or a bomb): docling-rs reads it as it is, within the limits
            main = _word_main_part(archive, names)
            if main is not None:
                return _docx_with_headings(archive, main)
            if "content.xml" in names and b"opendocument.text" in _read(archive, "mimetype"):
                return _odt_with_headings(archive)
            if "ppt/presentation.xml" in names:
                return _pptx_with_diagrams(archive, names)
    except MemoryError:
        raise
    except Exception:
        return None  # encrypted, truncated, not XML: docling-rs reads it as it is, or says why
    return None


MAX_REWRITTEN_PART = 64 * 1024 * 1024  # an XML part this large inflated is read as it is, not rewritten
_OFFICE_DOCUMENT = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"
WORD_MAIN = "word/document.xml"


def _word_main_part(archive: zipfile.ZipFile, names: set[str]) -> str | None:
    """The name of a Word file's main part, which the package's relationships name."""
    if WORD_MAIN in names:
        return WORD_MAIN
    relations = _read(archive, "_rels/.rels")
    if not relations:
        return None
    for relation in _xml(relations):
        if relation.get("Type") == _OFFICE_DOCUMENT:
            target = (relation.get("Target") or "").lstrip("/")
            types = _read(archive, "[Content_Types].xml")
            if target in names and b"wordprocessingml.document.main" in types:
                return target
    return None


def _read(archive: zipfile.ZipFile, name: str) -> bytes:
    try:
        return archive.read(name)
    except KeyError:
        return b""


def _xml(data: bytes) -> Any:
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True)
    return etree.fromstring(data, parser)


def _replaced(
    archive: zipfile.ZipFile, changed: dict[str, bytes], renamed: dict[str, str] | None = None
) -> bytes:
    """The archive again with the `changed` parts' new bytes and the `renamed` parts' new names,
    entries in their order (an ODT's `mimetype` first and stored, as readers expect)."""
    renamed = renamed or {}
    out = BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as target:
        for info in archive.infolist():
            name = info.filename
            body = changed[name] if name in changed else archive.read(info)
            # pictures stored as they are: compressing them again cost seconds for no gain
            packed = name.endswith((".xml", ".rels")) and name != "mimetype"
            kind = zipfile.ZIP_DEFLATED if packed else zipfile.ZIP_STORED
            target.writestr(renamed.get(name, name), body, compress_type=kind)
    return out.getvalue()


# ---- Word

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_HEADING_NAME = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)
_NOT_HEADINGS = ("toc", "caption", "header", "footer", "footnote", "endnote", "list", "quote")
_OFF = ("0", "false", "off", "none")


def _on(element: Any) -> bool | None:
    """A Word toggle (`<w:b/>`, `<w:b w:val="0"/>`): None when not set."""
    if element is None:
        return None
    return element.get(W + "val", "true").lower() not in _OFF


def _half_points(element: Any) -> float | None:
    try:
        return None if element is None else float(element.get(W + "val")) / 2
    except (TypeError, ValueError):
        return None


@dataclass
class _WordStyle:
    name: str = ""
    based_on: str | None = None
    bold: bool | None = None
    size: float | None = None
    numbered: bool = False
    outline: int | None = None


def _word_styles(root: Any) -> tuple[dict[str, _WordStyle], _WordStyle, str | None]:
    """Styles by id, the document defaults, and the default paragraph style's id."""
    styles: dict[str, _WordStyle] = {}
    default_paragraph = None
    defaults = _WordStyle()
    if root is None:
        return styles, defaults, None
    run_defaults = root.find(f"{W}docDefaults/{W}rPrDefault/{W}rPr")
    if run_defaults is not None:
        defaults.bold = _on(run_defaults.find(W + "b"))
        defaults.size = _half_points(run_defaults.find(W + "sz"))
    for element in root.iter(W + "style"):
        style_id = element.get(W + "styleId")
        if not style_id:
            continue
        name = element.find(W + "name")
        based = element.find(W + "basedOn")
        style = _WordStyle(
            name="" if name is None else name.get(W + "val", ""),
            based_on=None if based is None else based.get(W + "val"),
        )
        run = element.find(W + "rPr")
        if run is not None:
            style.bold = _on(run.find(W + "b"))
            style.size = _half_points(run.find(W + "sz"))
        paragraph = element.find(W + "pPr")
        if paragraph is not None:
            number = paragraph.find(f"{W}numPr/{W}numId")
            style.numbered = number is not None and number.get(W + "val") != "0"
            outline = paragraph.find(W + "outlineLvl")
            if outline is not None and (outline.get(W + "val") or "").isdigit():
                style.outline = int(outline.get(W + "val"))
        styles[style_id] = style
        if element.get(W + "type") == "paragraph" and element.get(W + "default") in ("1", "true"):
            default_paragraph = style_id
    return styles, defaults, default_paragraph


def _chain(styles: dict[str, _WordStyle], style_id: str | None) -> list[_WordStyle]:
    """A style and those it is based on, nearest first."""
    chain: list[_WordStyle] = []
    seen: set[str] = set()
    while style_id and style_id in styles and style_id not in seen:
        seen.add(style_id)
        chain.append(styles[style_id])
        style_id = styles[style_id].based_on
    return chain


def _first(values: Any) -> Any:
    return next((v for v in values if v is not None), None)


def _word_blocks(document: Any, styles_root: Any) -> list[Block]:
    """The body's paragraphs and tables in order, with each paragraph's bold letters and type sizes
    (direct formatting over character style over paragraph style over the document's defaults)."""
    styles, defaults, default_paragraph = _word_styles(styles_root)
    blocks: list[Block] = []
    body = document.find(W + "body")
    if body is None:
        return blocks

    def walk(parent: Any) -> None:
        for child in parent:
            tag = child.tag
            if tag == W + "p":
                blocks.append(paragraph(child))
            elif tag == W + "tbl":
                blocks.append(Block("content", element=child))
            elif tag in (W + "sdt", W + "sdtContent", W + "customXml", W + "ins", W + "moveTo"):
                walk(child)

    def paragraph(element: Any) -> Block:
        properties = element.find(W + "pPr")
        style_id = default_paragraph
        direct_outline = None
        numbered = False
        framed = False
        if properties is not None:
            named = properties.find(W + "pStyle")
            if named is not None:
                style_id = named.get(W + "val")
            number = properties.find(f"{W}numPr/{W}numId")
            numbered = number is not None and number.get(W + "val") != "0"
            outline = properties.find(W + "outlineLvl")
            if outline is not None and (outline.get(W + "val") or "").isdigit():
                direct_outline = int(outline.get(W + "val"))
            framed = properties.find(W + "framePr") is not None
        chain = _chain(styles, style_id)
        names = [s.name.lower() for s in chain] + [(style_id or "").lower()]
        style_level = _first(s.outline for s in chain)
        text_parts: list[str] = []
        block = Block("text", element=element)
        for run in element.iterfind(f".//{W}r"):
            if _inside_box(run, element):
                continue
            run_text = "".join(
                node.text or " " if node.tag == W + "t" else " "
                for node in run
                if node.tag in (W + "t", W + "tab", W + "br")
            )
            if not run_text:
                continue
            text_parts.append(run_text)
            props = run.find(W + "rPr")
            if props is not None and _on(props.find(W + "vanish")):
                continue
            char_chain: list[_WordStyle] = []
            if props is not None and props.find(W + "rStyle") is not None:
                char_chain = _chain(styles, props.find(W + "rStyle").get(W + "val"))
            bold = _first(
                [
                    None if props is None else _on(props.find(W + "b")),
                    *(s.bold for s in char_chain),
                    *(s.bold for s in chain),
                    defaults.bold,
                ]
            )
            size = _first(
                [
                    None if props is None else _half_points(props.find(W + "sz")),
                    *(s.size for s in char_chain),
                    *(s.size for s in chain),
                    defaults.size,
                    10.0,
                ]
            )
            block.add(run_text, bool(bold), size)
        block.text = " ".join("".join(text_parts).split())
        heading = next((m for n in names if (m := _HEADING_NAME.match(n))), None)
        if heading:
            return Block("heading", block.text, level=int(heading.group(1)), element=element)
        if style_level is not None and style_level < 9:
            return Block("heading", block.text, level=style_level + 1, element=element)
        if any(n in ("title", "subtitle") for n in names):
            return Block("heading", block.text, level=0, element=element)
        if any("heading" in n for n in names):  # `toa heading`: docling-rs reads it as one
            return Block("heading", block.text, level=1, element=element)
        if direct_outline is not None and direct_outline < 9 and block.text:
            # an outline level set on the paragraph itself, which docling-rs does not read
            return Block("outline", block.text, level=direct_outline + 1, element=element)
        listed = numbered or any(s.numbered for s in chain)
        if listed or framed or any(n.startswith(_NOT_HEADINGS) for n in names):
            block.kind = "content"  # a list item, a frame, a caption, a contents entry
        return block

    walk(body)
    return blocks


def _inside_box(node: Any, paragraph: Any) -> bool:
    """The run is in a text box or a shape inside the paragraph, not in its own text."""
    parent = node.getparent()
    while parent is not None and parent is not paragraph:
        if parent.tag in (W + "txbxContent", W + "del"):
            return True
        parent = parent.getparent()
    return False


def _docx_with_headings(archive: zipfile.ZipFile, main: str) -> Prepared | None:
    document = _xml(archive.read(main))
    body = document.find(W + "body")
    pages = _page_breaks(
        body,
        list(document.iter(W + "lastRenderedPageBreak")),
        W + "tr",
        W + "t",
        (W + "txbxContent",),
        _stated_pages(archive, "docProps/app.xml", _WORD_PAGES),
    )
    original = set(body) if body is not None else set()
    chunks = _alt_chunks(archive, main, document)
    noted = _with_notes(archive, main, document)
    drawn = _word_diagrams(archive, main, document)
    styles_data = _read(archive, "word/styles.xml")
    blocks = _word_blocks(document, _xml(styles_data) if styles_data else None)
    levels = promoted(blocks)
    levels.update({i: b.level for i, b in enumerate(blocks) if b.kind == "outline"})
    framed = _with_headers_and_footers(archive, main, document)  # after the blocks: no headings
    joined = _words_rejoined(document) | _ruby_bases(document)
    changed: dict[str, bytes] = {}
    renamed: dict[str, str] = {}
    if main != WORD_MAIN:
        folder, _, name = main.rpartition("/")
        renamed = {main: WORD_MAIN, f"{folder}/_rels/{name}.rels": "word/_rels/document.xml.rels"}
        for part, old, new in (
            ("_rels/.rels", main, WORD_MAIN),
            ("[Content_Types].xml", "/" + main, "/" + WORD_MAIN),
        ):
            changed[part] = _read(archive, part).replace(old.encode(), new.encode())
    elif not levels and not chunks and not noted and not drawn and not joined and not framed and not pages:
        return None
    from lxml import etree

    _mark_pages(pages, original, lambda: _word_paragraph(PAGE_MARKER))

    inserts: dict[str, str] = {}
    for n, (element, markdown) in enumerate(chunks):
        marker = f"LoreAltChunk{n}Here"
        paragraph = etree.Element(W + "p")
        etree.SubElement(etree.SubElement(paragraph, W + "r"), W + "t").text = marker
        element.getparent().replace(element, paragraph)
        inserts[marker] = markdown

    for i, level in levels.items():
        element = blocks[i].element
        properties = element.find(W + "pPr")
        if properties is None:
            properties = etree.SubElement(element, W + "pPr")
            element.insert(0, properties)
        named = properties.find(W + "pStyle")
        if named is None:
            named = etree.Element(W + "pStyle")
            properties.insert(0, named)
        # an id no style has: docling-rs reads the level from it, and no numbering comes with it
        named.set(W + "val", f"heading {level}")
    changed[main] = etree.tostring(document, xml_declaration=True, encoding="UTF-8", standalone=True)
    return _replaced(archive, changed, renamed), ".docx", inserts


R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_WORD_PAGES = re.compile(rb"<(?:\w+:)?Pages>\s*(\d+)\s*<")
_ODF_PAGES = re.compile(rb'meta:page-count="(\d+)"')
PageBreaks = list[tuple[Any, bool]]  # (a block of the body, the page starts before it)


def _stated_pages(archive: zipfile.ZipFile, part: str, pattern: re.Pattern[bytes]) -> int | None:
    """How many pages the writer said the document had when it saved it; None when it did not say."""
    found = pattern.search(_read(archive, part))
    return int(found.group(1)) if found else None


def _page_breaks(
    body: Any, breaks: list[Any], row: str, text: str | None, boxes: tuple[str, ...], stated: int | None
) -> PageBreaks:
    """Where pages began when the writer last laid the document out (Word's `lastRenderedPageBreak`,
    LibreOffice's `soft-page-break`, which both write for every page, a hard break's too), each at a
    block of the body (a paragraph, a table): before it when the page began at its start, else after
    it, so that no paragraph is cut in two and a passage is cited by the page it starts on (a table
    that runs over pages is on its first; its rows are not told apart). A table row that runs onto
    the next page has a break in each of its cells: one page. Only when the breaks
    add up to the pages the writer counted at that save: a file another program wrote or changed
    after (breaks it did not write, or left stale) has no pages, never wrong ones."""
    if body is None or not breaks or stated is None:
        return []
    found: PageBreaks = []
    rows: set[Any] = set()
    for mark in breaks:
        if any(a.tag in boxes for a in mark.iterancestors()):
            continue  # a text box's: its anchor's page, not the flow's
        block, at_row = mark, None
        while block.getparent() is not None and block.getparent() is not body:
            at_row = block if block.tag == row else at_row  # the outermost table's row
            block = block.getparent()
        if block.getparent() is None or (at_row is not None and at_row in rows):
            continue
        if at_row is not None:
            rows.add(at_row)
            first = next(block.iter(row)) is at_row  # past a table's first row: after the table
            before = first and not _said_before(at_row, mark, text)
        else:
            before = not _said_before(block, mark, text)
        found.append((block, before))
    return found if len(found) + 1 == stated else []


def _said_before(block: Any, mark: Any, text: str | None) -> bool:
    """Whether the block shows text before the mark: in its `text` elements (Word's `w:t`), or for
    None anywhere (OpenDocument's text is its elements' text and tails)."""
    above = set(mark.iterancestors())
    for node in block.iter():
        if node is mark:
            return False
        if (text is None or node.tag == text) and (node.text or "").strip():
            return True
        if text is None and node not in above and (node.tail or "").strip():
            return True
    return False


def _mark_pages(pages: PageBreaks, original: set[Any], marker: Any) -> None:
    """A page marker paragraph before or after each block where a page began; after a block, past
    what was added after it (its footnotes, a diagram's text), which sits on its page."""
    for block, before in pages:
        if before:
            block.addprevious(marker())
            continue
        last = block
        while last.getnext() is not None and last.getnext() not in original:
            last = last.getnext()
        last.addnext(marker())


def _word_paragraph(text: str) -> Any:
    from lxml import etree

    paragraph = etree.Element(W + "p")
    etree.SubElement(etree.SubElement(paragraph, W + "r"), W + "t").text = text
    return paragraph


def _ruby_bases(document: Any) -> bool:
    """Words set with ruby (furigana over Japanese or Chinese) as their base text: docling-rs read
    neither the base nor its reading, so `東京` with `とうきょう` over it was left out. The reading
    says how to pronounce it; the base is the word. True when there were any."""
    found = False
    for ruby in list(document.iter(W + "ruby")):
        run = ruby.getparent()
        base = ruby.find(W + "rubyBase")
        if run is None or run.tag != W + "r" or run.getparent() is None:
            continue
        for inner in reversed(list(base) if base is not None else []):
            run.addnext(inner)
        run.getparent().remove(run)
        found = True
    return found


_WORD_START = re.compile(r"^\w+")
XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"


def _shown(texts: list[Any]) -> str:
    return "".join((t.text or "") if t.tag == W + "t" else " " for t in texts)


def _words_rejoined(document: Any) -> bool:
    """A word split over runs formatted apart (`21` + superscript `st`, `H` + subscript `2` + `O`,
    a word half in italics) made whole in the first run: docling-rs puts a space between runs
    formatted apart, so `21st century` read `21 st century` and `H2O` `H 2 O`. True when any was."""
    changed = False
    for paragraph in document.iter(W + "p"):
        before: Any = None  # the last w:t of the run before
        for run in paragraph.iter(W + "r"):
            texts = [node for node in run if node.tag in (W + "t", W + "tab", W + "br")]
            if not _shown(texts):
                continue
            first = texts[0]
            head = _WORD_START.match(first.text or "") if first.tag == W + "t" else None
            if (
                head is not None
                and before is not None
                and before.getparent().getparent() is run.getparent()
                and (before.text or "")[-1:].isalnum()
            ):
                before.text = (before.text or "") + head.group()
                before.set(XML_SPACE, "preserve")
                first.text = (first.text or "")[head.end() :]
                first.set(XML_SPACE, "preserve")
                changed = True
                if not _shown(texts):
                    continue  # all of it went to the run before, which goes on
            last = texts[-1]
            before = last if last.tag == W + "t" else None
    return changed


DGM = "{http://schemas.openxmlformats.org/drawingml/2006/diagram}"
A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"


def _relations(archive: zipfile.ZipFile, part: str) -> dict[str, str]:
    """A part's relationships: id -> the target part's name in the package."""
    folder, _, name = part.rpartition("/")
    data = _read(archive, f"{folder}/_rels/{name}.rels")
    found = {}
    for relation in _xml(data) if data else []:
        target = relation.get("Target") or ""
        if relation.get("TargetMode") != "External" and target:
            path = target.lstrip("/") if target.startswith("/") else f"{folder}/{target}"
            found[relation.get("Id")] = posixpath.normpath(path)
    return found


def _diagram_texts(archive: zipfile.ZipFile, relations: dict[str, str], frame: Any) -> list[str]:
    """The texts of the SmartArt diagram a drawing holds (an org chart's names, a process's steps),
    each node's in the order of the diagram's data; docling-rs read none of them."""
    ids = frame.find(f".//{DGM}relIds")
    part = relations.get(ids.get(R + "dm", "")) if ids is not None else None
    data = _read(archive, part) if part else b""
    if not data:
        return []
    texts = []
    for point in _xml(data).iter(DGM + "pt"):
        if point.get("type", "node") != "node":
            continue
        for paragraph in point.iter(A + "p"):
            text = " ".join("".join(t.text or "" for t in paragraph.iter(A + "t")).split())
            if text:
                texts.append(text)
    return texts


def _word_diagrams(archive: zipfile.ZipFile, main: str, document: Any) -> bool:
    """Each SmartArt diagram's texts as paragraphs after the paragraph that holds it; True if any."""
    from lxml import etree

    frames = [ids.getparent() for ids in document.iter(DGM + "relIds")]
    if not frames:
        return False
    relations = _relations(archive, main)
    added = False
    for frame in frames:
        block = frame
        while block.getparent() is not None and block.getparent().tag not in _BLOCK_PARENTS:
            block = block.getparent()
        for text in reversed(_diagram_texts(archive, relations, frame)):
            paragraph = etree.Element(W + "p")
            etree.SubElement(etree.SubElement(paragraph, W + "r"), W + "t").text = text
            block.addnext(paragraph)
            added = True
    return added


_SLIDE = re.compile(r"^ppt/slides/slide\d+\.xml$")


def _pptx_with_diagrams(archive: zipfile.ZipFile, names: set[str]) -> Prepared | None:
    """The presentation with each SmartArt diagram's texts in a text box beside it on its slide."""
    from lxml import etree

    changed: dict[str, bytes] = {}
    for part in sorted(n for n in names if _SLIDE.match(n)):
        data = archive.read(part)
        if b"drawingml/2006/diagram" not in data:
            continue
        slide = _xml(data)
        relations = _relations(archive, part)
        for ids in list(slide.iter(DGM + "relIds")):
            frame = ids
            while frame is not None and frame.tag != P + "graphicFrame":
                frame = frame.getparent()
            texts = _diagram_texts(archive, relations, ids.getparent())
            if frame is None or not texts:
                continue
            shape = etree.Element(P + "sp")
            properties = etree.SubElement(shape, P + "nvSpPr")
            etree.SubElement(properties, P + "cNvPr", id="0", name="Diagram text")
            etree.SubElement(properties, P + "cNvSpPr")
            etree.SubElement(properties, P + "nvPr")
            etree.SubElement(shape, P + "spPr")
            body = etree.SubElement(shape, P + "txBody")
            etree.SubElement(body, A + "bodyPr")
            for text in texts:
                run = etree.SubElement(etree.SubElement(body, A + "p"), A + "r")
                etree.SubElement(run, A + "t").text = text
            frame.addnext(shape)
            changed[part] = b""
        if part in changed:
            changed[part] = etree.tostring(slide, xml_declaration=True, encoding="UTF-8", standalone=True)
    if not changed:
        return None
    return _replaced(archive, changed), ".pptx", {}


_PAGE_FIELDS = ("PAGE", "NUMPAGES", "SECTIONPAGES", "DATE", "TIME", "PRINTDATE", "SAVEDATE", "FILENAME")
_WORD = re.compile(r"[^\W\d_]+")


def _field_free_text(paragraph: Any) -> str:
    """A header's or footer's paragraph without the results of its page-number, date and file-name
    fields, nor a page number's label (`Page 3 of 12`), text boxes inside it left out."""
    parts: list[str] = []
    fields: list[list[str | bool]] = []  # per open field: its instruction, whether past `separate`
    numbered = False  # a page number was left out
    for node in paragraph.iter(W + "t", W + "tab", W + "ptab", W + "fldChar", W + "instrText"):
        if _inside_box(node, paragraph):
            continue
        tag = node.tag
        if tag == W + "fldChar":
            kind = node.get(W + "fldCharType")
            if kind == "begin":
                fields.append(["", False])
            elif kind == "separate" and fields:
                fields[-1][1] = True
            elif kind == "end" and fields:
                fields.pop()
        elif tag == W + "instrText" and fields:
            fields[-1][0] = str(fields[-1][0]) + (node.text or "")
        else:
            instructions = [str(f[0]) for f in fields if f[1]]  # the fields it is the result of
            instructions += [a.get(W + "instr") or "" for a in node.iterancestors(W + "fldSimple")]
            if any(i.split()[:1] and i.split()[0].upper() in _PAGE_FIELDS for i in instructions):
                numbered = True
                continue
            parts.append(node.text or "" if tag == W + "t" else " ")
    return without_page_label("".join(parts), numbered)


def _frame_texts(root: Any) -> list[str]:
    """A header's or footer's lines worth reading: its paragraphs (in its tables' cells too) less
    page numbers; a line that was only a page number is none."""
    lines = []
    for paragraph in root.iter(W + "p"):
        if any(a.tag == W + "p" for a in paragraph.iterancestors()):
            continue  # a text box's paragraph: its anchor's paragraph holds it (twice, with a fallback)
        text = _field_free_text(paragraph)
        if _WORD.search(text):
            lines.append(text)
    return lines


_PAGES_SHOWN = {"first": 0, "default": 1, "even": 2}  # the first page's header first


def _with_headers_and_footers(archive: zipfile.ZipFile, main: str, document: Any) -> bool:
    """Each section's page headers as paragraphs before its text and its footers after it, each line
    once in the document; True when there were any. docling-rs left them out, and with them the
    text some documents have only there: a title or a document number on the first page's header,
    a company, a classification, a version in the footer. A DOCX stores a header once however many
    pages repeat it, so one copy costs one line, not one per page as in a PDF. Page numbers and
    dates are fields, left out, and a line the body already says is not said again; the first
    page's header only where the section has one (`titlePg`), the even pages' only where the
    document sets them apart (`evenAndOddHeaders`)."""
    from lxml import etree

    body = document.find(W + "body")
    if body is None:
        return False
    relations = _relations(archive, main)
    settings = _read(archive, main.rpartition("/")[0] + "/settings.xml")
    even_pages = b"evenAndOddHeaders" in settings and b'evenAndOddHeaders w:val="0"' not in settings
    said = {" ".join("".join(t.text or "" for t in p.iter(W + "t")).split()) for p in body.iter(W + "p")}
    sections: list[tuple[Any, Any, Any]] = []  # (first block, last block, sectPr)
    first = None
    for child in body:
        if child.tag == W + "sectPr":
            sections.append((first, child.getprevious(), child))
            break
        first = child if first is None else first
        inner = child.find(f"{W}pPr/{W}sectPr") if child.tag == W + "p" else None
        if inner is not None:
            sections.append((first, child, inner))
            first = None
    added = False
    for start, end, properties in sections:
        title_page = _on(properties.find(W + "titlePg")) or False
        for kind in ("header", "footer"):
            lines = []
            references = properties.iter(f"{W}{kind}Reference")
            for reference in sorted(references, key=lambda r: _PAGES_SHOWN.get(r.get(W + "type"), 1)):
                shown = reference.get(W + "type", "default")
                if (shown == "first" and not title_page) or (shown == "even" and not even_pages):
                    continue
                data = _read(archive, relations.get(reference.get(R + "id", ""), ""))
                for line in _frame_texts(_xml(data)) if data else []:
                    if line not in said:
                        said.add(line)
                        lines.append(line)
            for line in lines if kind == "header" else reversed(lines):
                paragraph = etree.Element(W + "p")
                etree.SubElement(etree.SubElement(paragraph, W + "r"), W + "t").text = line
                if kind == "header" and start is not None:
                    start.addprevious(paragraph)
                elif kind == "footer" and end is not None and end.tag != W + "sectPr":
                    end.addnext(paragraph)
                else:
                    properties.addprevious(paragraph)  # an empty section: before its properties
                added = True
    return added


_NOTE_KINDS = (("footnote", "footnotes"), ("endnote", "endnotes"))
_BLOCK_PARENTS = (W + "body", W + "sdtContent")


def _with_notes(archive: zipfile.ZipFile, main: str, document: Any) -> bool:
    """Footnotes and endnotes, which docling-rs leaves out, as paragraphs (`[footnote 1]: text`)
    after the paragraph or table that refers to them, the way reviewers' comments come; True when
    there were any."""
    from lxml import etree

    folder = main.rpartition("/")[0]
    after: dict[Any, list[str]] = {}
    for kind, part in _NOTE_KINDS:
        references = list(document.iter(f"{W}{kind}Reference"))
        data = _read(archive, f"{folder}/{part}.xml") if references else b""
        if not data:
            continue
        texts = {}
        for note in _xml(data).iter(W + kind):
            words = [
                " ".join("".join(t.text or "" for t in p.iter(W + "t")).split()) for p in note.iter(W + "p")
            ]
            texts[note.get(W + "id")] = " ".join(w for w in words if w)
        number = 0
        for reference in references:
            text = texts.pop(reference.get(W + "id"), "")  # a note referred to again: once
            if not text:
                continue
            number += 1
            block = reference
            while block.getparent() is not None and block.getparent().tag not in _BLOCK_PARENTS:
                block = block.getparent()
            after.setdefault(block, []).append(f"[{kind} {number}]: {text}")
    for block, lines in after.items():
        for line in reversed(lines):
            paragraph = etree.Element(W + "p")
            etree.SubElement(etree.SubElement(paragraph, W + "r"), W + "t").text = line
            block.addnext(paragraph)
    return bool(after)


def _alt_chunks(archive: zipfile.ZipFile, main: str, document: Any) -> list[tuple[Any, str]]:
    """Each `altChunk` of the document with the Markdown of the part it points to."""
    found = list(document.iter(W + "altChunk"))
    if not found:
        return []
    folder, _, name = main.rpartition("/")
    targets = {}
    relations = _read(archive, f"{folder}/_rels/{name}.rels")
    for relation in _xml(relations) if relations else []:
        target = relation.get("Target") or ""
        if relation.get("TargetMode") != "External" and target:
            part = target.lstrip("/") if target.startswith("/") else f"{folder}/{target}"
            targets[relation.get("Id")] = posixpath.normpath(part)
    chunks = []
    for element in found:
        part = targets.get(element.get(R + "id"))
        data = _read(archive, part) if part else b""
        chunks.append((element, _chunk_markdown(part or "", data) if data else ""))
    return chunks


def _chunk_markdown(name: str, data: bytes) -> str:
    from lore_docdb.parse.convert.mail import rtf_markdown, web_archive_markdown
    from lore_docdb.parse.convert.markup import html_markdown

    head = data[:512].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if head.startswith(b"{\\rtf"):
        return rtf_markdown(data)
    if name.lower().endswith((".mht", ".mhtml")) or head.startswith((b"mime-version", b"from:")):
        return web_archive_markdown(data)
    if name.lower().endswith((".htm", ".html", ".xhtml")) or head.startswith(b"<"):
        return html_markdown(data)
    return decode(data).strip()


# ---- OpenDocument text

TEXT_NS = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
STYLE_NS = "urn:oasis:names:tc:opendocument:xmlns:style:1.0"
FO_NS = "urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"
OFFICE_NS = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
TABLE_NS = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
T = "{" + TEXT_NS + "}"
S = "{" + STYLE_NS + "}"
_SIZE = re.compile(r"^([\d.]+)(pt|%|cm|mm|in|px)?$")
_UNIT_PT = {"pt": 1.0, "cm": 72 / 2.54, "mm": 72 / 25.4, "in": 72.0, "px": 0.75}
_ODF_BLOCK_PARENTS = ("{" + OFFICE_NS + "}text", T + "section")
_SKIPPED_IN_TEXT = {T + "note", T + "tracked-changes", "{" + OFFICE_NS + "}annotation"}
_DRAW = "{urn:oasis:names:tc:opendocument:xmlns:drawing:1.0}"


@dataclass
class _OdfStyle:
    name: str = ""
    parent: str | None = None
    bold: bool | None = None
    size: str | None = None
    outline: bool = False
    listed: bool = False


def _odf_styles(*roots: Any) -> tuple[dict[tuple[str, str], _OdfStyle], dict[str, _OdfStyle]]:
    """Paragraph and text styles by (family, name), and the default style per family."""
    styles: dict[tuple[str, str], _OdfStyle] = {}
    defaults: dict[str, _OdfStyle] = {}
    for root in roots:
        if root is None:
            continue
        for element in root.iter(S + "style", S + "default-style"):
            family = element.get(S + "family", "")
            style = _OdfStyle(
                name=(element.get(S + "display-name") or element.get(S + "name") or ""),
                parent=element.get(S + "parent-style-name"),
                outline=bool(element.get(S + "default-outline-level")),
                listed=bool(element.get(S + "list-style-name")),
            )
            props = element.find(S + "text-properties")
            if props is not None:
                weight = props.get("{" + FO_NS + "}font-weight")
                if weight is not None:
                    style.bold = weight == "bold" or (weight.isdigit() and int(weight) >= 600)
                style.size = props.get("{" + FO_NS + "}font-size")
            if element.tag == S + "default-style":
                defaults[family] = style
            elif element.get(S + "name"):
                styles[(family, element.get(S + "name"))] = style
    return styles, defaults


def _odt_blocks(content: Any, styles_root: Any) -> list[Block]:
    styles, defaults = _odf_styles(styles_root, content)

    def chain(family: str, name: str | None) -> list[_OdfStyle]:
        found: list[_OdfStyle] = []
        seen: set[str] = set()
        while name and (family, name) in styles and name not in seen:
            seen.add(name)
            found.append(styles[(family, name)])
            name = styles[(family, name)].parent
        if family in defaults:
            found.append(defaults[family])
        return found

    def size_of(styles_chain: list[_OdfStyle]) -> float:
        """The type size in points; a percentage is of the size of the style it is based on."""
        scale = 1.0
        for style in styles_chain:
            match = _SIZE.match(style.size or "")
            if not match:
                continue
            value, unit = float(match.group(1)), match.group(2) or "pt"
            if unit == "%":
                scale *= value / 100
                continue
            return value * _UNIT_PT[unit] * scale
        return 12.0 * scale  # OpenDocument's default

    blocks: list[Block] = []

    def paragraph(element: Any) -> Block:
        paragraph_chain = chain("paragraph", element.get(T + "style-name"))
        names = [s.name.lower() for s in paragraph_chain]
        block = Block("text", element=element)
        parts: list[str] = []

        def segments(node: Any, span_chain: list[_OdfStyle]) -> None:
            if node.text:
                add(node.text, span_chain)
            for child in node:
                if child.tag in _SKIPPED_IN_TEXT or child.tag.startswith(_DRAW):
                    pass
                elif child.tag == T + "span":
                    segments(child, chain("text", child.get(T + "style-name")) + span_chain)
                elif child.tag in (T + "s", T + "tab", T + "line-break"):
                    add(" ", span_chain)
                else:
                    segments(child, span_chain)
                if child.tail:
                    add(child.tail, span_chain)

        def add(text: str, span_chain: list[_OdfStyle]) -> None:
            parts.append(text)
            full = [s for s in span_chain if s not in paragraph_chain] + paragraph_chain
            block.add(text, bool(_first(s.bold for s in full)), round(size_of(full), 1))

        segments(element, [])
        block.text = " ".join("".join(parts).split())
        if any(n in ("title", "subtitle") or "heading" in n for n in names) or any(
            s.outline for s in paragraph_chain
        ):
            block.kind = "heading"  # docling-rs reads these styles as headings
            block.level = 0 if names and names[0] == "title" else 1
        elif any(s.listed for s in paragraph_chain) or any(n.startswith(_NOT_HEADINGS) for n in names):
            block.kind = "content"
        return block

    def walk(parent: Any) -> None:
        for child in parent:
            if child.tag == T + "p":
                blocks.append(paragraph(child))
            elif child.tag == T + "h":
                level = child.get(T + "outline-level", "1")
                text = " ".join("".join(child.itertext()).split())
                blocks.append(Block("heading", text, int(level) if level.isdigit() else 1))
            elif child.tag in (T + "section", "{" + OFFICE_NS + "}text"):
                walk(child)
            elif child.tag in (T + "list", "{" + TABLE_NS + "}table"):
                blocks.append(Block("content", element=child))

    for text in content.iter("{" + OFFICE_NS + "}text"):
        walk(text)
        break
    return blocks


def _odt_with_headings(archive: zipfile.ZipFile) -> Prepared | None:
    content = _xml(archive.read("content.xml"))
    body = next(content.iter("{" + OFFICE_NS + "}text"), None)
    pages = _page_breaks(
        body,
        list(content.iter(T + "soft-page-break")),
        "{" + TABLE_NS + "}table-row",
        None,
        (_DRAW + "text-box", "{" + OFFICE_NS + "}annotation"),
        _stated_pages(archive, "meta.xml", _ODF_PAGES),
    )
    original = set(body) if body is not None else set()
    styles_data = _read(archive, "styles.xml")
    blocks = _odt_blocks(content, _xml(styles_data) if styles_data else None)
    levels = promoted(blocks)
    noted = _odt_notes(content)
    if not levels and not noted and not pages:
        return None
    from lxml import etree

    def marker() -> Any:
        paragraph = etree.Element(T + "p")
        paragraph.text = PAGE_MARKER
        return paragraph

    _mark_pages(pages, original, marker)

    for i, level in levels.items():
        element = blocks[i].element
        element.tag = T + "h"
        element.set(T + "outline-level", str(level))
    data = etree.tostring(content, xml_declaration=True, encoding="UTF-8")
    return _replaced(archive, {"content.xml": data}), ".odt", {}


def _odt_notes(content: Any) -> bool:
    """An OpenDocument text's footnotes and endnotes, which docling-rs leaves out, as paragraphs
    (`[footnote 1]: text`) after the paragraph, list or table that holds them; True when any."""
    from lxml import etree

    numbers = {"footnote": 0, "endnote": 0}
    after: dict[Any, list[str]] = {}
    for note in list(content.iter(T + "note")):
        body = note.find(T + "note-body")
        text = "" if body is None else " ".join("".join(body.itertext()).split())
        kind = note.get(T + "note-class", "footnote")
        if not text or kind not in numbers:
            continue
        numbers[kind] += 1
        block = note
        while block.getparent() is not None and block.getparent().tag not in _ODF_BLOCK_PARENTS:
            block = block.getparent()
        after.setdefault(block, []).append(f"[{kind} {numbers[kind]}]: {text}")
    for block, lines in after.items():
        for line in reversed(lines):
            paragraph = etree.Element(T + "p")
            paragraph.text = line
            block.addnext(paragraph)
    return bool(after)


# ---- Word 2003 XML (WordML)

WORDML = "http://schemas.microsoft.com/office/word/2003/wordml"
_AUX_HINT = "{http://schemas.microsoft.com/office/word/2003/auxHint}"
_WORD_MAIN_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_PACKAGE = {
    "[Content_Types].xml": '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.'
    'openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="'
    'application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" '
    'ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="'
    'application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
    '<Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-'
    'officedocument.wordprocessingml.styles+xml"/></Types>',
    "_rels/.rels": '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.'
    'openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.'
    'openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
    'Target="word/document.xml"/></Relationships>',
    "word/_rels/document.xml.rels": '<?xml version="1.0" encoding="UTF-8"?><Relationships '
    'xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" '
    'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" '
    'Target="styles.xml"/></Relationships>',
}


def is_wordml(head: bytes) -> bool:
    """The XML is a Word 2003 XML document (`<w:wordDocument>`, Word's "XML Document" format)."""
    return WORDML.encode() in head and b"wordDocument" in head


def wordml_markdown(path: Path) -> str:
    """A Word 2003 XML document read as the DOCX it became: its body and styles are WordprocessingML
    under an older namespace, so they are put in a package of their own (the sections' wrappers
    unwrapped, and links' and insertions' runs; embedded objects, comments and deletions left out)
    and read like any Word file.
    Before, its text came as the text of every element: a line per run, the properties' numbers,
    base64 of embedded objects."""
    import tempfile

    from lxml import etree

    root = _xml(path.read_bytes())
    w = "{" + WORDML + "}"
    body = root.find(w + "body")
    if body is None:
        raise ValueError("a Word 2003 XML document without a body")
    aml = "{http://schemas.microsoft.com/aml/2001/core}"
    for note in list(body.iter(aml + "annotation")):
        if note.find(aml + "content") is None or note.get(w + "type") != "Word.Insertion":
            note.getparent().remove(note)  # a comment, a deletion, a bookmark's mark
    wrappers = (_AUX_HINT + "sect", _AUX_HINT + "sub-section", w + "hlink", aml + "annotation")
    for wrapper in list(body.iter(*wrappers, aml + "content")):
        parent = wrapper.getparent()
        at = parent.index(wrapper)
        for child in reversed(list(wrapper)):
            parent.insert(at, child)
        parent.remove(wrapper)
    for dropped in list(body.iter(w + "binData", w + "pict", "{urn:schemas-microsoft-com:office:office}*")):
        dropped.getparent().remove(dropped)
    styles = root.find(w + "styles")
    parts = dict(_PACKAGE)
    document = b'<w:document xmlns:w="' + WORDML.encode() + b'">' + etree.tostring(body) + b"</w:document>"
    parts["word/document.xml"] = document.replace(WORDML.encode(), _WORD_MAIN_NS.encode()).decode()
    styled = (
        etree.tostring(styles) if styles is not None else b'<w:styles xmlns:w="' + WORDML.encode() + b'"/>'
    )
    parts["word/styles.xml"] = styled.replace(WORDML.encode(), _WORD_MAIN_NS.encode()).decode()
    with tempfile.TemporaryDirectory() as folder:
        package = Path(folder) / (path.stem + ".docx")
        with zipfile.ZipFile(package, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, text in parts.items():
                archive.writestr(name, text)
        return docling_markdown(package)
