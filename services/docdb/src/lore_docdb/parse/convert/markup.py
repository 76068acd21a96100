"""HTML and EPUB with lxml: headings, paragraphs, lists and tables in document order (script, style
and the page's <head> left out). An EPUB is its spine's XHTML documents in reading order."""

from __future__ import annotations

import posixpath
import re
import textwrap
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lore_docdb.parse.convert.common import ExtractionError, decode, md_table

_SPACES = re.compile(r"\s+")
_HEADING = re.compile(r"h[1-6]")
_BLOCKS = {
    "address", "article", "aside", "blockquote", "body", "caption", "center", "dd", "details", "dialog",
    "dir", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "header", "hgroup",
    "html", "legend", "li", "main", "menu", "nav", "ol", "p", "pre", "section", "summary", "table", "td",
    "th", "ul",
}  # fmt: skip
# the blocks and headings as lxml's `iter` takes them (any namespace: an EPUB's XHTML), so that the
# page's other elements are passed over in C
_BLOCK_TAGS = [f"{{*}}{tag}" for tag in sorted(_BLOCKS | {f"h{n}" for n in range(1, 7)})]
# what stays a structure of its own inside a list item (a paragraph or a box in it is the item's text)
_STRUCTURES = {"blockquote", "dl", "menu", "ol", "pre", "table", "ul"}
# inline elements set apart by a space: a line break; superscripts and subscripts, so a footnote mark
# does not join its word ("policy<sup>3</sup>" is not "policy3"); a picture, by its alt text
_APART = {"br", "sup", "sub", "img"}
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
# soft hyphens and zero-width spaces, as characters or references: invisible on the page, they cut
# words in two for search (`Vladi&shy;mir`) and make headings of nothing (`<h2>&#8203;</h2>`)
_INVISIBLE = re.compile(
    r"[\u00ad\u200b\u2060\ufeff]|&(?:shy|ZeroWidthSpace|NoBreak);"
    r"|&#(?:173|x0*ad|8203|x0*200b|8288|x0*2060|65279|x0*feff);",
    re.IGNORECASE,
)
_DROPPED = "//script|//style|//noscript|//template|//head"
_EPUB_TYPE = "{http://www.idpf.org/2007/ops}type"
# the charset a page declares: <meta charset="..."> or its http-equiv form, or an XML declaration's
_CHARSET = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_:.-]+)"""
    rb"""|<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9_.-]+)""",
    re.IGNORECASE,
)


CHARSET_SCAN = 64 * 1024  # how far into a page its <head> is read for a charset
_HEAD_END = re.compile(rb"</head\s*>|<body[\s>]", re.IGNORECASE)


def declared_charset(html: bytes) -> str | None:
    """The encoding the page says it is in: in its `<head>` (real pages set kilobytes of styles and
    scripts before their `<meta charset>`), or its first 4 KiB; None if it says none."""
    head = html[:CHARSET_SCAN]
    end = _HEAD_END.search(head)
    found = _CHARSET.search(head[: max(4096, end.start()) if end else 4096])
    return (found.group(1) or found.group(2)).decode("ascii") if found else None


_BREAK = "\x0b"  # a <br> in running text, until the paragraph is emitted
_SPACES_NOT_BREAKS = re.compile(r"[^\S\x0b]+")
_PARAGRAPH_BREAK = re.compile(r"\x0b(?:\s*\x0b)+")  # two line breaks or more: old pages' paragraphs
# the start of a paragraph the chunker would take for a heading, a table row or a code fence
_LOOKS_STRUCTURAL = re.compile(r"^(?=#{1,6}(?:[ \t]|$)|\|.*\|$|```|~~~)")


def _text(element: Any, breaks: bool = False, strip: bool = True, pictures: bool = True) -> str:
    """The element's text on one line, its blocks, line breaks and list items apart (a table cell's
    lines, paragraphs or inner table do not run into one word), an ordered list's items numbered.
    `breaks`: each <br> kept as `_BREAK`, so running text can be parted where two of them stand.
    `strip=False` keeps one space at either end where the element has one: the text of an inline
    element inside a sentence (`pushes<a> sketchy loans</a> onto`) does not join its neighbours'.
    `pictures=False` leaves out pictures' alt text (a heading's picture is not its title)."""
    parts: list[str] = []

    def flat(node: Any, number: str = "") -> None:
        tag = _tag(node)
        apart = tag in _APART or tag in _BLOCKS or bool(_HEADING.fullmatch(tag))
        if apart:
            parts.append(_BREAK if breaks and tag == "br" else " ")
        parts.append(number + (node.text or "") if tag else "")
        if tag == "img" and pictures:
            parts.append(shown_alt(node.get("alt")))  # a picture in a cell or a line: its alt text says what
        items = 0
        for child in node:
            if tag == "ol" and _tag(child) == "li":
                items += 1
                flat(child, f"{items}. ")
            else:
                flat(child)
            parts.append(child.tail or "")
        if apart:
            parts.append(" ")

    flat(element)
    text = (_SPACES_NOT_BREAKS if breaks else _SPACES).sub(" ", "".join(parts))
    return text.strip() if strip else text


def _tag(element: Any) -> str:
    tag = element.tag
    return tag.rsplit("}", 1)[-1].lower() if isinstance(tag, str) else ""


def _holding_blocks(root: Any) -> set[Any]:
    """The elements with a block (a paragraph, a heading, a list, a table...) somewhere inside them.
    Such an element is walked for its blocks even where its own tag is inline: a page's text inside
    `<center>`, `<span><p>...</p></span>`, a heading inside a link (`<a><h2>...</h2></a>`) is not
    flattened into one line."""
    holding: set[Any] = set()
    for element in root.iter(*_BLOCK_TAGS):
        parent = element.getparent()
        while parent is not None and parent not in holding:
            holding.add(parent)
            parent = parent.getparent()
    return holding


def _pre_text(element: Any) -> str:
    """A code block's text with its line breaks: a `<br>` and a block inside `<pre>` (highlighters set
    each line in a `<div>`) end a line, as a browser shows them."""
    parts: list[str] = []

    def flat(node: Any) -> None:
        tag = _tag(node)
        if tag == "br":
            parts.append("\n")
        parts.append(node.text or "" if tag else "")
        for child in node:
            flat(child)
            parts.append(child.tail or "")
        if tag in _BLOCKS and node is not element and parts and not parts[-1].endswith("\n"):
            parts.append("\n")

    flat(element)
    return "".join(parts)


class _Walker:
    def __init__(self, holding: set[Any] | None = None) -> None:
        self.out: list[str] = []
        self.holding = holding or set()

    def emit(self, text: str) -> None:
        """Running text as paragraphs, parted where two line breaks or more stand. A paragraph that
        would read as a heading, a table row or a code fence (`<p># 1 in sales</p>`) is escaped."""
        for paragraph in _PARAGRAPH_BREAK.split(text):
            paragraph = _SPACES.sub(" ", paragraph).strip()
            if paragraph:
                self.out.append(_LOOKS_STRUCTURAL.sub("\\\\", paragraph))

    def walk(self, element: Any, depth: int = 0) -> None:
        tag = _tag(element)
        if _HEADING.fullmatch(tag):
            text = _text(element, pictures=False) or _text(element)  # a logo alone is the title
            if text:
                self.out.append("#" * int(tag[1]) + " " + text)
            return
        if tag == "table":
            for caption in element:
                if _tag(caption) == "caption":
                    self.emit(_text(caption, breaks=True))
            cells = _cells(element)
            if _is_layout(cells):
                for row in cells:
                    for cell in row:
                        self.walk(cell, depth)
                return
            above, cells, below = _title_rows(cells)
            for row in above:
                self.emit(_text(row[0], breaks=True))
            table = md_table(_grid(cells))
            if table:
                self.out.append(table)
            for row in below:
                self.emit(_text(row[0], breaks=True))
            return
        if tag in ("ul", "ol", "menu", "dir"):
            # text set straight in the list (old pages indent a paragraph with `<ul>text</ul>`) is a
            # paragraph; a list set straight inside a list (`<ul><ul>`) is nested
            stray = [element.text or ""]
            number = _start(element) if tag == "ol" else None
            for item in element:
                item_tag = _tag(item)
                if (
                    item_tag == "li"
                    or item_tag in _BLOCKS
                    or _HEADING.fullmatch(item_tag)
                    or item in self.holding
                ):
                    self.emit("".join(stray))
                    stray = []
                    if item_tag == "li":
                        if number is not None:
                            number = _start(item, number)
                        self.list_item(item, depth, "- " if number is None else f"{number}. ")
                        number = None if number is None else number + 1
                    else:
                        self.walk(item, depth + 1)
                elif item_tag == "br":
                    stray.append(_BREAK)
                elif item_tag:
                    stray.append(_text(item, breaks=True, strip=False))
                stray.append(item.tail or "")
            self.emit("".join(stray))
            return
        if tag == "pre":
            code = _pre_text(element).rstrip()
            if code.strip():
                self.out.append("```\n" + code + "\n```")
            return
        inline = [element.text or ""]
        for child in element:
            child_tag = _tag(child)
            if child_tag in _BLOCKS or _HEADING.fullmatch(child_tag) or child in self.holding:
                self.emit("".join(inline))
                inline = []
                self.walk(child, depth)
            elif child_tag == "br":
                inline.append(_BREAK)
            elif child_tag:
                text = _text(child, breaks=True, strip=False)
                inline.append(f" {text} " if child_tag in _APART else text)
            inline.append(child.tail or "")
        self.emit("".join(inline))

    def list_item(self, item: Any, depth: int, marker: str = "- ") -> None:
        """One `- ` line (`3. ` in an ordered list): the item's text with its paragraphs and boxes
        apart (`<li><p>One.</p><p>Two.</p></li>` is not `One.Two.`); its lists, tables, code and
        headings nested under it."""
        inline = [item.text or ""]
        nested = []
        for child in item:
            tag = _tag(child)
            if (
                tag in _STRUCTURES
                or _HEADING.fullmatch(tag)
                or (child in self.holding and _has_structure(child))
            ):
                nested.append(child)
            else:
                inline.append(_text(child, strip=False) if tag else "")
                inline.append(child.tail or "")
        text = _SPACES.sub(" ", "".join(inline)).strip()
        if text:
            self.out.append("  " * depth + marker + text)
        for child in nested:
            self.walk(child, depth + 1)


def _start(element: Any, default: int = 1) -> int:
    """An ordered list's first number (`<ol start="3">`) or an item's own (`<li value="7">`), whose
    number is part of its text: a step or a clause is cited by it."""
    value = element.get("start" if _tag(element) == "ol" else "value", "")
    return int(value) if value.strip().isdigit() and len(value.strip()) < 9 else default


def _has_structure(element: Any) -> bool:
    return any(_tag(e) in _STRUCTURES or _HEADING.fullmatch(_tag(e)) for e in element.iterdescendants())


MAX_SPAN = 100  # a cell's rowspan or colspan: larger ones are cut (a hostile page could ask for millions)


def _span(cell: Any, name: str) -> int:
    try:
        return max(1, min(MAX_SPAN, int(cell.get(name) or 1)))
    except ValueError:
        return 1


def _from_above(out: list[object], above: dict[int, list[Any]]) -> None:
    """The cells that reach this row from above, at the columns where `out` has got to."""
    while len(out) in above:
        column = len(out)
        out.append(above[column][1])
        above[column][0] -= 1
        if above[column][0] == 0:
            del above[column]


def _grid(rows: list[list[Any]]) -> list[list[object]]:
    """The table's rows with spanned cells filled in: a cell spanning rows repeats in each row below it,
    a cell spanning columns in each column, so every row reads whole (a year beside each month)."""
    grid: list[list[object]] = []
    above: dict[int, list[Any]] = {}  # column -> [rows left, text] of a cell spanning down
    for cells in rows:
        out: list[object] = []
        for cell in cells:
            _from_above(out, above)
            text, down = _text(cell), _span(cell, "rowspan")
            for _ in range(_span(cell, "colspan")):
                if down > 1:
                    above[len(out)] = [down - 1, text]
                out.append(text)
        _from_above(out, above)
        grid.append(out)
    return grid


def _cells(table: Any) -> list[list[Any]]:
    """The table's own rows (not an inner table's), each as its td and th cells."""
    return [
        [cell for cell in row if _tag(cell) in ("td", "th")]
        for row in table.iter()
        if _tag(row) == "tr" and _closest_table(row) is table
    ]


def _title_rows(rows: list[list[Any]]) -> tuple[list[list[Any]], list[list[Any]], list[list[Any]]]:
    """The rows above and below the table's body that are one cell across its whole width (a title,
    a source note), and the body: a line of their own each, not one cell repeated in every column."""
    width = max((sum(_span(cell, "colspan") for cell in row) for row in rows), default=0)

    def across(row: list[Any]) -> bool:
        return width > 1 and len(row) == 1 and _span(row[0], "colspan") >= width

    start, end = 0, len(rows)
    while start < end and across(rows[start]):
        start += 1
    while end > start and across(rows[end - 1]):
        end -= 1
    return rows[:start], rows[start:end], rows[end:]


LAYOUT_CELL_CHARS = 2000  # a cell holding more text than this is a page's column, not a value


def _is_layout(cells: list[list[Any]]) -> bool:
    """A table that lays a page out rather than holding data (old pages and HTML e-mails set their
    text in tables): one column of text (a box around a paragraph, a title bar, a page's column
    beside an empty margin or a menu of pictures), or a cell holding a page's worth of text. Its
    cells are read as the page's paragraphs, not squeezed into one row each."""
    if all(sum(1 for cell in row if cell.text_content().strip()) <= 1 for row in cells):
        return True
    return any(len(cell.text_content()) > LAYOUT_CELL_CHARS for row in cells for cell in row)


def _closest_table(row: Any) -> Any:
    parent = row.getparent()
    while parent is not None and _tag(parent) != "table":
        parent = parent.getparent()
    return parent


# A page's furniture, measured on Readability's 130 test pages and docling's HTML (bench/html_pages.py,
# bench/documents.py): the site's footer, a search form, and boxes whose class names a cookie
# banner, share buttons, a breadcrumb trail, an advert or a newsletter sign-up. Menus (`<nav>`, role
# navigation), comments, sidebars, "related" boxes, asides and link-dense lists are kept: each held text
# a ground truth counts as the page's (a wiki's contents and its boxes of links in docling's, a blog's
# comments, an author's note, a list of bug links in Readability's), or is a name that a book's or
# paper's sections use too (`div.sidebar`, `#related-work`).
_FURNITURE_TAGS = {"footer"}
_FURNITURE_ROLES = {"search"}
_FURNITURE_WORDS = {
    "ads", "advert", "advertisement", "breadcrumb", "breadcrumbs", "consent", "cookie", "cookies",
    "footer", "gdpr", "newsletter", "outbrain", "share", "sharing", "social",
    "sponsor", "sponsored", "taboola",
}  # fmt: skip
_NAME_PARTS = re.compile(r"[\s_-]+|(?<=[a-z])(?=[A-Z])")
FURNITURE_NAME_PARTS = 3  # "social-share-bar" names furniture; "debt-as-a-share-of-gdp" is a slug
FURNITURE_MAX_SHARE = 0.3  # a box holding more of the page's words than this is never furniture


def _words(text: str) -> int:
    return len(text.split())


def _furniture_name(element: Any) -> bool:
    """A class of the element names furniture (`share-buttons`, `cookie-banner`, `site-footer`). Ids
    are not read: they are often a heading's slug (`#market-share`), and added nothing measurable."""
    classes = element.get("class") or ""
    lowered = classes.lower()
    if not any(word in lowered for word in _FURNITURE_WORDS):  # a cheap first look
        return False
    for name in classes.split():
        parts = [p.lower() for p in _NAME_PARTS.split(name) if p]
        if len(parts) <= FURNITURE_NAME_PARTS and not _FURNITURE_WORDS.isdisjoint(parts):
            return True
    return False


def _main_box(root: Any) -> Any:
    """The element whose own paragraphs hold the most words: the article's box, as near as a page
    without markup for it lets one tell."""
    words: dict[Any, int] = {}
    for paragraph in root.iter("p", "pre"):
        parent = paragraph.getparent()
        if parent is not None:
            words[parent] = words.get(parent, 0) + _words(paragraph.text_content())
    return max(words, key=lambda box: words[box]) if words else None


def _drop_furniture(root: Any) -> None:
    """Leave out a page's footer, cookie banner, share buttons, breadcrumbs, adverts and newsletter
    boxes (on Readability's pages 30 % of the words kept were outside the article; 28 % after this).
    Never the article's box or what holds it, never a box with a `<main>`, `<article>` or `<h1>`
    inside, never one holding 30 % of the page's words; inside the article's box only what a class or
    role names, not a `<footer>` tag (an article's own footer notes stay). A wiki's "[edit]" links
    stay: Readability's ground truth writes its headings with them (`History[edit]`), and without
    them 50 of its 520 headings missed."""
    box = _main_box(root)
    keep = set(box.iterancestors()) | {box} if box is not None else set()
    total = 0
    gone: set[Any] = set()
    for element in root.iter(*_BLOCK_TAGS):
        role = (element.get("role") or "").lower()
        tag = _tag(element)
        named = role in _FURNITURE_ROLES or _furniture_name(element)
        if not named and (tag not in _FURNITURE_TAGS or box in element.iterancestors()):
            continue
        if tag not in _BLOCKS or tag in ("html", "body", "main", "article") or element in keep:
            continue
        if role == "main" or any(parent in gone for parent in element.iterancestors()):
            continue
        if any(_tag(e) in ("h1", "main", "article") for e in element.iterdescendants()):
            continue
        total = total or _words(root.text_content()) or 1
        if _words(element.text_content()) > FURNITURE_MAX_SHARE * total:
            continue
        gone.add(element)
    for element in gone:
        element.drop_tree()


_DISPLAYSTYLE = re.compile(r"^\{\\displaystyle\s*(.*)\}$", re.DOTALL)


# alt text that says nothing of the picture: a word for "picture" itself, or the file's name
_PLACEHOLDER_ALT = re.compile(
    r"(?i)^\W*(?:image|img|picture|pic|photo|figure|fig|graphic|illustration|icon|logo|picto|cover|spacer"
    r"|blank|bild|imagen|immagine|foto|\d+|[\w.-]+\.(?:png|jpe?g|gif|svg|webp|bmp|tiff?))\W*$"
)


def shown_alt(alt: str | None) -> str:
    """A picture's alt text where it says something (`image`, `picto` and `cover1.jpg` say nothing)."""
    return "" if not alt or _PLACEHOLDER_ALT.match(alt.strip()) else alt


def _tex(text: str) -> str:
    text = " ".join(text.split())
    found = _DISPLAYSTYLE.match(text)
    return found.group(1).strip() if found else text


_TEX_LIKE = re.compile(r"[\\^_{}=+<>]|\d")


def _math_as_tex(root: Any) -> None:
    """A MathML formula as its TeX source where the page gives one (Wikipedia writes each formula
    three times: MathML, its TeX annotation, and a picture whose alt text is the TeX again), once;
    otherwise its MathML text as it stands."""
    for math in list(root.iter("math", "{*}math")):
        annotation = next(
            (e for e in math.iter() if _tag(e) == "annotation" and "tex" in (e.get("encoding") or "")), None
        )
        alttext = math.get("alttext") or ""
        if annotation is None and not _TEX_LIKE.search(alttext) and math.text_content().strip():
            continue  # an alt text in words (or a placeholder: `Alternative text not available`)
        tex = _tex(annotation.text_content() if annotation is not None else alttext)
        if not tex:
            continue
        box = math.getparent()
        # the picture of the same formula beside it (in the box that holds the formula)
        for holder in (box, box.getparent() if box is not None else None):
            for img in list(holder.iter("img")) if holder is not None else ():
                if _tex(img.get("alt") or "") == tex:
                    img.drop_tree()
        for child in list(math):
            math.remove(child)
        math.text = f" {tex} "


def _noscript_pictures(root: Any) -> None:
    """A lazy-loaded picture's `<noscript>` copy, the one that carries its alt text (`<img data-src>`
    beside it often has none), read as that picture; other `<noscript>` text (enable JavaScript...) is
    dropped with the rest of the element."""
    for noscript in list(root.iter("noscript")):
        pictures = list(noscript.iter("img"))
        parent = noscript.getparent()
        if not pictures or noscript.text_content().strip() or parent is None:
            continue
        shown = {img.get("alt") for img in parent.iter("img") if img not in pictures}
        for img in pictures:
            if img.get("alt") in shown:
                img.drop_tree()
        noscript.tag = "span"


def html_markdown(html: str | bytes) -> str:
    import lxml.html

    if isinstance(html, bytes):
        html = decode(html, declared_charset(html))
    html = _XML_DECLARATION.sub("", html, count=1)  # lxml refuses a str that still names its encoding
    html = _INVISIBLE.sub("", html)
    if not html.strip():
        return ""
    root = lxml.html.document_fromstring(html)
    _noscript_pictures(root)
    for dropped in root.xpath(_DROPPED):
        dropped.drop_tree()
    for annotation in root.xpath("//rt|//rp"):  # ruby's readings: the base text is what is searched
        annotation.drop_tree()
    # a note's reference (EPUB's `epub:type="noteref"`, ARIA's `doc-noteref`), which a reader sets
    # raised by its style: apart from its word as a superscript is (`year<a>2</a>` is not `year2`)
    for element in root.iter():
        kind = element.get("epub:type") or element.get(_EPUB_TYPE) or ""
        if "noteref" in kind.split() or element.get("role") == "doc-noteref":
            element.tag = "sup"
    # an inline XBRL filing's (SEC 10-K...) hidden header: contexts, units and facts' ids, not text
    for header in [e for e in root.iter() if isinstance(e.tag, str) and e.tag.lower() == "ix:header"]:
        header.drop_tree()
    _drop_furniture(root)
    _math_as_tex(root)
    walker = _Walker(_holding_blocks(root))
    walker.walk(root)
    return "\n\n".join(walker.out)


def html_file(path: Path) -> str:
    return html_markdown(path.read_bytes())


MAX_EPUB_PART = 64 * 1024 * 1024  # one XHTML document inside an EPUB, uncompressed


_EPUB_TEXT_TYPES = {"application/xhtml+xml", "text/html", "image/svg+xml", "application/x-dtbook+xml"}
MAX_FALLBACKS = 8  # a manifest's fallback chain followed this far (a loop stops there)


def epub_markdown(path: Path) -> str:
    """The spine's documents in reading order (container.xml -> the OPF package -> its spine), the
    items marked `linear="no"` (notes, a glossary a reader opens aside) after the others. A spine item
    that is not a text (a picture page, a foreign JSON or XML document) is read through its manifest
    fallback, else passed over; the navigation document (the reader's table of contents, with hidden
    page and landmark lists) is left out where the book has other text; an `epub:switch` reads its
    default; a part missing from the zip is passed over, said at the end."""
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, recover=True)

    def read(archive: zipfile.ZipFile, name: str) -> bytes:
        if archive.getinfo(name).file_size > MAX_EPUB_PART:
            raise ValueError(f"{name} inside the EPUB is over {MAX_EPUB_PART >> 20} MiB")
        return archive.read(name)

    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
        if "META-INF/container.xml" not in names:
            raise ExtractionError(f"{path.name}: not an EPUB (it has no META-INF/container.xml)")
        container = etree.fromstring(read(archive, "META-INF/container.xml"), parser)
        rootfiles = (
            container.xpath("//*[local-name()='rootfile']/@full-path") if container is not None else []
        )
        package_path = unquote(str(rootfiles[0])) if rootfiles else ""
        if package_path not in names:
            raise ExtractionError(f"{path.name}: not an EPUB (its container names no package file it holds)")
        package = etree.fromstring(read(archive, package_path), parser)
        base = posixpath.dirname(package_path)
        items = {
            item.get("id"): item
            for item in package.xpath("//*[local-name()='manifest']/*[local-name()='item']")
        }
        spine = package.xpath("//*[local-name()='spine']/*[local-name()='itemref']")
        ordered = [r for r in spine if r.get("linear") != "no"] + [
            r for r in spine if r.get("linear") == "no"
        ]
        texts: list[tuple[bool, str]] = []  # (is the navigation document, its text)
        missing: list[str] = []
        for ref in ordered:
            item = items.get(ref.get("idref"))
            for _ in range(MAX_FALLBACKS):  # a picture page or a foreign document: its fallback
                if item is None or (item.get("media-type") or "").lower() in _EPUB_TEXT_TYPES:
                    break
                item = items.get(item.get("fallback"))
            if item is None or not item.get("href"):
                continue
            name = posixpath.normpath(posixpath.join(base, unquote(item.get("href").split("#")[0])))
            if name not in names:
                missing.append(name)
                continue
            navigation = "nav" in (item.get("properties") or "").split()
            texts.append((navigation, html_markdown(_epub_switched(read(archive, name)))))
    body = [text for navigation, text in texts if not navigation and text.strip()]
    parts = [_epub_metadata(package), *(body or [text for _, text in texts])]
    if missing:
        parts.append(f"(not in the book's file, so not read: {', '.join(missing[:10])})")
    return "\n\n".join(p for p in parts if p)


_EPUB_SWITCH = re.compile(rb"<epub:case\b.*?</epub:case>|</?epub:(?:switch|default)\b[^>]*>", re.DOTALL)


def _epub_switched(data: bytes) -> bytes:
    """An XHTML document with each `epub:switch` read as its `epub:default`: a reader that does not
    know a case's markup (MathML, ChemML) shows the default, and showing both wrote everything twice."""
    return _EPUB_SWITCH.sub(b"", data) if b"epub:switch" in data else data


_EPUB_FIELDS = (("title", "Title"), ("creator", "Authors"), ("publisher", "Publisher"), ("date", "Date"))


def _epub_metadata(package: Any) -> str:
    """The book's title, authors, publisher and date as lines, and its description as a paragraph,
    from the package's Dublin Core: a search for a book's author or blurb finds the book, and many
    books name neither in their chapters."""
    lines = []
    for name, label in _EPUB_FIELDS:
        values = [
            " ".join(str(text).split())
            for text in package.xpath(f"//*[local-name()='metadata']/*[local-name()='{name}']/text()")
        ]
        values = list(dict.fromkeys(v for v in values if v))
        if values:
            lines.append(f"{label}: {', '.join(values)}")
    descriptions = package.xpath("//*[local-name()='metadata']/*[local-name()='description']")
    about = " ".join(str(d.xpath("string()")) for d in descriptions).strip()
    # a blurb written as escaped HTML, or as text with the package's own line breaks and indents
    about = html_markdown(about) if "<" in about else " ".join(about.split())
    return "\n".join(lines) + (f"\n\n{about}" if about else "")


HTML_BLOCK_LOOKAHEAD = 500  # lines an HTML block's closing tag is looked for past its first blank line
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)\s*$")
_HTML_BLOCK = re.compile(r"^ {0,3}<(/?)([A-Za-z][A-Za-z0-9]*)[\s/>]|^ {0,3}<([A-Za-z][A-Za-z0-9]*)$")
_HTML_BLOCK_TAGS = _BLOCKS - {"html", "body"} | {"center", "hr", "thead", "tbody", "tfoot", "tr"}
_NOT_PARAGRAPH = re.compile(r"^ {0,3}(#|>|[-*+] |\d+[.)] |\||```|~~~)|^\s*$")


_DATA_URI = re.compile(r"(data:[\w.+-]+/[\w.+-]+(?:;[\w.+-]+=[\w.+-]+)*;base64,)[A-Za-z0-9+/=]{16,}")


def markdown_text(markdown: str) -> str:
    """Markdown as the converters write it: setext headings (a line underlined with `===` or `---`)
    as `#` lines, and HTML blocks (a `<table>`, `<div>`... standing on their own lines, as READMEs
    write tables with spans) through the HTML converter, so their rows are one line each; a front
    matter as its title and description (`_front_matter`); a call-out (`:::note`, as Docusaurus and
    VuePress write one) as its bold label over its text. Code fences are left as they are; the rest
    is kept verbatim, but for the
    base64 payload of pictures written into the text (`![](data:image/png;base64,iVBOR...)`, as note
    editors paste them), which filled chunks with kilobytes of letters that are no words."""
    lines = _DATA_URI.sub(r"\1…", markdown).splitlines()
    out, i = _front_matter(lines)
    fence = ""
    comment = False  # inside an HTML comment that runs over several lines
    floor = len(out)  # no heading reaches back into the front matter
    while i < len(lines):
        line = lines[i]
        opened = _FENCE.match(line)
        if not fence and not opened:
            kept, comment = _without_comments(line, comment)
            if kept is None:
                i += 1
                continue
            line = _site_marks(kept)
        if not fence and not opened and (admonition := _ADMONITION.match(line)):
            kind = admonition.group(1)
            title = (admonition.group(2) or admonition.group(3) or "").strip()
            if kind:  # `:::note Keep it dry` opens a call-out; a bare `:::` closes one
                label = kind.replace("-", " ").replace("_", " ").capitalize()
                out.append(f"**{label}{': ' + title if title else ''}**")
            i += 1
            continue
        if fence:
            fence = (
                ""
                if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence)
                else fence
            )
        elif opened:
            fence = opened.group(1)
        elif "|" in line and i + 1 < len(lines) and _pipe_table_rule(line, lines[i + 1]):
            i = _pipe_table(lines, i, out)
            continue
        elif _SETEXT.match(line) and len(out) > floor and not _NOT_PARAGRAPH.match(out[-1]):
            start = len(out)  # the heading is the whole paragraph above the underline
            while start > floor and not _NOT_PARAGRAPH.match(out[start - 1]):
                start -= 1
            title = " ".join(part.strip() for part in out[start:])
            out[start:] = ["#" * (1 if line.strip()[0] == "=" else 2) + " " + title]
            i += 1
            continue
        else:
            tag = _HTML_BLOCK.match(line)
            name = (tag.group(2) or tag.group(3) or "").lower() if tag else ""
            if name in _HTML_BLOCK_TAGS:  # such a block may interrupt a paragraph (CommonMark)
                end = _html_block_end(lines, i, name)
                out.extend(html_markdown("\n".join(lines[i:end])).splitlines())
                i = end
                continue
        out.append(line)
        i += 1
    return "\n".join(out)


_GFM_RULE = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
_CELL_BAR = re.compile(r"(?<!\\)\|")  # a cell border: a `|` not escaped as `\|`


def _pipe_cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [cell.strip() for cell in _CELL_BAR.split(inner)]


def _pipe_table_rule(header: str, rule: str) -> bool:
    """`rule` is the delimiter row of a pipe table under `header`, with as many cells."""
    return (
        "|" in rule + header.strip()[1:-1]
        and bool(_GFM_RULE.match(rule))
        and (len(_pipe_cells(header)) == len(_pipe_cells(rule)))
    )


def _pipe_table(lines: list[str], start: int, out: list[str]) -> int:
    """A pipe table written without its outer bars (`a | b` over `---|---`, as GitHub reads it) or
    with uneven ones, as `| a | b |` rows under a `|---|` rule, the only form the chunker keeps whole
    and repeats the header of; the index of the line after it."""
    width = len(_pipe_cells(lines[start]))
    out.append("| " + " | ".join(_pipe_cells(lines[start])) + " |")
    out.append("|" + "---|" * width)
    i = start + 2
    while i < len(lines) and lines[i].strip() and "|" in lines[i]:
        cells = (_pipe_cells(lines[i]) + [""] * width)[: max(width, len(_pipe_cells(lines[i])))]
        out.append("| " + " | ".join(cells) + " |")
        i += 1
    return i


def _html_block_end(lines: list[str], start: int, name: str) -> int:
    """Where an HTML block that starts at `start` ends: at a blank line once its `name` elements are
    all closed (a table with blank lines inside stays whole); if they never are, at the first blank
    line (CommonMark's rule)."""
    opens = re.compile(rf"<{name}[\s>/]|<{name}$", re.IGNORECASE)
    closes = re.compile(rf"</{name}\s*>", re.IGNORECASE)
    depth, first_blank = 0, None
    for j in range(start, len(lines)):
        if not lines[j].strip():
            if depth <= 0:
                return j
            first_blank = j if first_blank is None else first_blank
        if first_blank is not None and j - first_blank > HTML_BLOCK_LOOKAHEAD:
            break  # never closed: each unclosed `<p>` of a long file would read it to its end
        depth += len(opens.findall(lines[j])) - len(closes.findall(lines[j]))
    return first_blank if first_blank is not None else len(lines)


_COMMENT = re.compile(r"<!--.*?-->")
# A heading's anchor, as Docusaurus, Pandoc, kramdown and MkDocs write one (`## Setup {#setup}`, MDX's
# `{/* #setup */}`, Nextra's `[#setup]`): the site's, not the title's.
_ANCHOR = re.compile(r"^(#{1,6}\s.*?)\s*(?:\{#[^\s{}]+\}|\{/\*.*?\*/\}|\[#[\w-]+\])\s*$")
# Collapsible sections (`<details><summary>More</summary>` … `</details>`, as READMEs and docs write
# them): the summary as a bold line, the tags dropped, what they hold read as Markdown (the HTML
# converter read it as HTML and ran its lists and code blocks into one line).
_DETAILS = re.compile(r"</?details\b[^>]*>", re.IGNORECASE)
_SUMMARY = re.compile(r"<summary\b[^>]*>(.*?)</summary>", re.IGNORECASE)
# GitHub's alerts (`> [!NOTE]`): the label as a reader sees it.
_ALERT = re.compile(r"^(\s*>\s*)\[!(NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]\s*$", re.IGNORECASE)


def _without_comments(line: str, inside: bool) -> tuple[str | None, bool]:
    """The line without its HTML comments (`<!-- prettier-ignore -->`), and whether one is still
    open at its end; None for a line that held nothing else."""
    had = inside or "<!--" in line
    if inside:
        end = line.find("-->")
        if end < 0:
            return None, True
        line, inside = line[end + 3 :], False
    line = _COMMENT.sub("", line)
    start = line.find("<!--")
    if start >= 0:
        line, inside = line[:start], True
    return (None if had and not line.strip() else line), inside


def _site_marks(line: str) -> str:
    """A line without the marks a documentation site reads for itself: a heading's anchor, the
    `<details>` and `<summary>` tags (the summary's text kept in bold), a GitHub alert's brackets."""
    if anchored := _ANCHOR.match(line):
        return anchored.group(1)
    if alert := _ALERT.match(line):
        return f"{alert.group(1)}**{alert.group(2).capitalize()}**"
    if "<details" in line.lower() or "<summary" in line.lower() or "</details" in line.lower():
        line = _DETAILS.sub("", _SUMMARY.sub(lambda m: f"**{m.group(1).strip()}**", line))
    return line


# A front matter's keys kept as the page's text: its title (a heading) and what it says of the page;
# the others (layout, slug, sidebar_position, draft, weight...) configure the site that shows it.
_FRONT_TEXT = ("subtitle", "description", "summary", "abstract", "excerpt")
_H1 = re.compile(r"^#\s+\S|^\S.*\n=+[ \t]*$", re.MULTILINE)  # `# Title`, or one underlined with `===`
# A call-out's fence (Docusaurus, VuePress, MyST's colon fence): `:::note`, `:::warning[Careful]`,
# `:::tip Title`, and the bare `:::` that closes it.
_ADMONITION = re.compile(r"^\s{0,3}:::+\s*(?:\{?([A-Za-z][\w-]*)\}?)?\s*(?:\[([^\]]*)\]|(.*))$")


def _front_matter(lines: list[str]) -> tuple[list[str], int]:
    """A YAML (`---`) or TOML (`+++`) front matter, as Jekyll, Hugo, Docusaurus and Obsidian write
    one, as the page's text: its `title` as a `#` heading (unless the page has a title of its own)
    and its description or summary as a paragraph; one that does not parse is kept as it is. The
    lines to start with and the index of the first line after it."""
    opener = lines[0].strip() if lines else ""
    if opener not in ("---", "+++"):
        return [], 0
    closers = ("---", "...") if opener == "---" else ("+++",)
    end = next((j for j in range(1, len(lines)) if lines[j].strip() in closers), 0)
    if not end:
        return [], 0  # no closing line: a rule opening the page, not a front matter
    raw = "\n".join(lines[1:end])
    try:
        if opener == "---":
            import yaml

            data = yaml.safe_load(raw)
        else:
            import tomllib

            data = tomllib.loads(raw)
    except Exception:
        return lines[: end + 1], end + 1
    if not isinstance(data, dict):
        return lines[: end + 1], end + 1
    out: list[str] = []
    title = data.get("title")
    if isinstance(title, str | int | float) and str(title).strip() and not _H1.search("\n".join(lines[end:])):
        out += [f"# {' '.join(str(title).split())}", ""]
    for key in _FRONT_TEXT:
        value = data.get(key)
        if isinstance(value, str) and value.strip():
            out += [" ".join(value.split()), ""]
    after = end + 1
    while after < len(lines) and not lines[after].strip():
        after += 1  # the page starts at its first line, after one blank line from what is kept
    if (
        out and after < len(lines) and lines[after].startswith("# ")
    ):  # its own title, its description under it
        title_at, after = after, after + 1
        while after < len(lines) and not lines[after].strip():
            after += 1
        return [lines[title_at], "", *out], after
    return out, after


def markdown_file(path: Path) -> str:
    text = decode(path.read_bytes())
    return markdown_text(_without_jsx(text) if path.suffix.lower() == ".mdx" else text)


# MDX (Markdown with JSX, as Docusaurus, Nextra and Storybook write docs): its ES module blocks
# (`import`/`export`, to the next blank line, as MDX reads them) and its components' tags (capitalised:
# `<Tabs>`, `<TabItem value="linux">`, `</Tabs>`, `<Admonition />`, over one line or several), on
# lines of their own, are code, not text; what a component holds is the page's text, and so is an
# ```` ```mdx-code-block ```` fence's body, which Docusaurus renders as MDX.
_ESM = re.compile(
    r"^(?:import\s.+?from\s|import\s+['\"]|import\s*\{|export\s+(?:const|default|function|let|var)\b|export\s*\{)"
)
_JSX_OPEN = re.compile(r"^\s*<([A-Z][\w.]*)(?=[\s/>]|$)")
_JSX_CLOSE = re.compile(r"^\s*</[A-Z][\w.]*\s*>\s*$")
_JSX_WRAPPED = re.compile(r"^(\s*)<([A-Z][\w.]*)(?:\s[^<>]*)?>(.*)</\2>\s*$")  # `<Callout>Tip</Callout>`
_MDX_COMMENT = re.compile(r"\{/\*.*?\*/\}")
_MDX_BLOCK_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*mdx-code-block\s*$")


def _tag_end(lines: list[str], start: int) -> int | None:
    """The index of the line that ends the JSX tag opened on `start` (its `>` outside quotes and
    braces), or None when it does not end within a few lines (then it is text)."""
    quote, braces = "", 0
    for j in range(start, min(start + 40, len(lines))):
        for char in lines[j][lines[j].index("<") + 1 :] if j == start else lines[j]:
            if quote:
                quote = "" if char == quote else quote
            elif char in "\"'`":
                quote = char
            elif char == "{":
                braces += 1
            elif char == "}":
                braces = max(braces - 1, 0)
            elif char == ">" and not braces:
                return j
    return None


def _without_jsx(text: str) -> str:
    """The MDX page without its module blocks, comments and component tags; the lines a component
    holds lose only the indent they share (a nested list stays nested)."""
    lines = text.splitlines()
    out: list[str] = []
    held: list[str] = []  # the lines inside the outermost open component
    fence, depth, i = "", 0, 0
    block = ""  # the marks of an open ```` ```mdx-code-block ```` fence, whose body is MDX

    def put(line: str) -> None:
        (held if depth else out).append(line)

    while i < len(lines):
        line = lines[i]
        i += 1
        opened = _FENCE.match(line)
        if not fence and (mdx := _MDX_BLOCK_FENCE.match(line)):
            block = mdx.group(1)  # the fence itself goes; its body is read as the page's MDX
            continue
        if not fence and block and opened and line.strip() == block:
            block = ""  # and its closing fence
            continue
        if fence or opened:
            if (
                fence
                and opened
                and opened.group(1)[0] == fence[0]
                and not line.strip()[len(opened.group(1)) :]
            ):
                fence = ""
            elif not fence and opened:
                fence = opened.group(1)
            put(line)
            continue
        line = _MDX_COMMENT.sub("", line)
        if not line.strip():
            put("")  # a comment's line, or a blank one
            continue
        if _ESM.match(line) and depth == 0:
            while i < len(lines) and lines[i].strip():
                i += 1  # an import or export block runs to the next blank line
            continue
        if wrapped := _JSX_WRAPPED.match(line):
            put(wrapped.group(1) + wrapped.group(3))
            continue
        if _JSX_CLOSE.match(line):
            depth = max(depth - 1, 0)
            if depth == 0:
                out.extend(textwrap.dedent("\n".join(held)).split("\n") if held else [])
                held = []
            continue
        if _JSX_OPEN.match(line) and (end := _tag_end(lines, i - 1)) is not None:
            tag = " ".join(part.strip() for part in lines[i - 1 : end + 1])
            i = end + 1
            if not tag.rstrip().endswith("/>"):
                depth += 1
            continue
        put(line)
    out.extend(textwrap.dedent("\n".join(held)).split("\n") if held else [])
    return "\n".join(out)
