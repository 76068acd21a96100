"""Formats a documentation folder holds beside Markdown: Jupyter notebooks, Org-mode, OPML outlines,
FictionBook (`.fb2`) and DocBook, each read by a small reader written here (JSON, lines, or lxml
with entities and the network off), and reStructuredText through docutils.

Each gives the same Markdown-like text as the other converters: headings as `#` lines, paragraphs
apart, lists as `- ` items, tables as pipe tables, code as fenced blocks."""

from __future__ import annotations

import io
import json
import re
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lore_docdb.parse.convert.common import ExtractionError, decode, md_table
from lore_docdb.parse.convert.markup import html_markdown, markdown_text

MAX_HTML_OUTPUT = 200_000  # characters of a notebook cell's HTML output read as a table or text


# ------------------------------------------------------------------ Jupyter notebooks


def _joined(source: object) -> str:
    """A notebook's multi-line string: a list of lines or one string."""
    if isinstance(source, list):
        return "".join(str(part) for part in source)
    return "" if source is None else str(source)


def _output_text(output: dict[str, Any]) -> str:
    """An output's text: a stream's, an error's name and message, else its richest readable form
    (Markdown, then HTML such as a data frame's table, then plain text); pictures left out."""
    kind = output.get("output_type")
    if kind == "stream":
        return _fenced(_joined(output.get("text")), "")
    if kind in ("error", "pyerr"):
        return f"{output.get('ename', 'Error')}: {output.get('evalue', '')}".strip()
    data = output.get("data") or output  # nbformat 3 kept the forms on the output itself
    if not isinstance(data, dict):
        return ""
    markdown = _joined(data.get("text/markdown"))
    if markdown.strip():
        return markdown_text(markdown)
    html = _joined(data.get("text/html") or data.get("html"))
    if html.strip() and len(html) <= MAX_HTML_OUTPUT:
        return html_markdown(html)
    return _fenced(_joined(data.get("text/plain") or data.get("text")), "")


def _fenced(code: str, language: str) -> str:
    code = code.strip("\n")
    if not code.strip():
        return ""
    fence = "````" if "```" in code else "```"
    return f"{fence}{language}\n{code}\n{fence}"


def notebook_markdown(path: Path) -> str:
    """A Jupyter notebook's cells in order: Markdown cells as text, code cells as code blocks in the
    kernel's language, each followed by its outputs' text; the notebook's JSON keys left out."""
    try:
        notebook = json.loads(decode(path.read_bytes()))
    except json.JSONDecodeError as exc:
        raise ExtractionError(f"{path.name}: not a Jupyter notebook (invalid JSON: {exc})") from exc
    if not isinstance(notebook, dict):
        raise ExtractionError(f"{path.name}: not a Jupyter notebook (no cells)")
    cells = notebook.get("cells")
    if cells is None:  # nbformat 3: cells inside worksheets
        cells = [c for sheet in notebook.get("worksheets") or [] for c in sheet.get("cells") or []]
    if not isinstance(cells, list):
        raise ExtractionError(f"{path.name}: not a Jupyter notebook (no cells)")
    meta = notebook.get("metadata") or {}
    language = str(
        (meta.get("kernelspec") or {}).get("language") or (meta.get("language_info") or {}).get("name") or ""
    )
    parts: list[str] = []
    for cell in cells:
        if not isinstance(cell, dict):
            continue
        source = _joined(cell.get("source", cell.get("input")))
        kind = cell.get("cell_type")
        if kind == "markdown":
            parts.append(markdown_text(source))
        elif kind == "heading":  # nbformat 3
            parts.append("#" * int(cell.get("level") or 1) + " " + source.strip())
        elif kind == "code":
            parts.append(_fenced(source, language))
            parts += [_output_text(o) for o in cell.get("outputs") or [] if isinstance(o, dict)]
        else:  # raw cells
            parts.append(source.strip())
    return "\n\n".join(p for p in parts if p.strip())


# ------------------------------------------------------------------ Org-mode

_ORG_HEADING = re.compile(r"^(\*+)\s+(.*?)(?:\s+(:[\w@#%:]+:))?\s*$")
_ORG_KEYWORD = re.compile(r"^\s*#\+(\w+):\s*(.*)$", re.IGNORECASE)
_ORG_BLOCK = re.compile(r"^\s*#\+begin_(\w+)\s*(\S*)", re.IGNORECASE)
_ORG_LINK = re.compile(r"\[\[([^\]]+)\](?:\[([^\]]+)\])?\]")
_ORG_LIST = re.compile(r"^(\s*)(?:[-+]|\*(?=\s)|(\d+|[a-zA-Z])[.)])\s+(.*)$")
_ORG_RULE = re.compile(r"^\s*\|[-+]+\|?\s*$")
_ORG_DRAWER = re.compile(r"^\s*:[A-Z_]+:\s*$")
_ORG_PLANNING = re.compile(r"^\s*(SCHEDULED|DEADLINE|CLOSED):")


_ORG_EMPHASIS = re.compile(r"""(?<![^\s({'"])([*/=~+])(\S(?:[^\n]{0,200}?\S)?)\1(?=[\s.,;:!?'")\]}-]|$)""")
_ORG_RULE_CELL = re.compile(r"^:?-+:?$")


def _org_inline(text: str) -> str:
    """Links as their description (or address), emphasis and code markers (`/word/`, `=code=`) off
    their words; the rest as written."""
    text = _ORG_LINK.sub(lambda m: m.group(2) or m.group(1), text)
    return _ORG_EMPHASIS.sub(lambda m: m.group(2), text)


def org_markdown(path: Path) -> str:
    """An Org-mode file: `#+TITLE` as the title, `*` headings one level under it, lists, tables
    (their rule lines as the Markdown rule under the header), source and example blocks as code;
    property drawers, planning lines, comments and other `#+` settings left out."""
    lines = decode(path.read_bytes()).splitlines()
    out: list[str] = []
    paragraph: list[str] = []
    title = ""
    shift = 0  # heading levels below the title

    def flush() -> None:
        if paragraph:
            out.append("\n".join(paragraph))
            paragraph.clear()

    at = 0
    for line in lines:
        keyword = _ORG_KEYWORD.match(line)
        if keyword and keyword.group(1).lower() == "title" and not title:
            title = keyword.group(2).strip()
            shift = 1
    if title:
        out.append(f"# {_org_inline(title)}")
    while at < len(lines):
        line = lines[at]
        at += 1
        block = _ORG_BLOCK.match(line)
        if block:
            flush()
            kind = block.group(1).lower()
            end = re.compile(rf"^\s*#\+end_{kind}\b", re.IGNORECASE)
            body: list[str] = []
            while at < len(lines) and not end.match(lines[at]):
                body.append(lines[at])
                at += 1
            at += 1
            if kind in ("src", "example"):
                language = block.group(2) if kind == "src" else ""
                out.append(_fenced(textwrap.dedent("\n".join(body)), language))
            elif kind != "comment":
                out.append(_org_inline("\n".join(b.strip() for b in body).strip()))
            continue
        heading = _ORG_HEADING.match(line)
        if heading:
            flush()
            level = min(6, len(heading.group(1)) + shift)
            out.append("#" * level + " " + _org_inline(heading.group(2)))
            continue
        if line.lstrip().startswith("|"):
            flush()
            rows: list[list[str]] = []
            start = at - 1
            while start < len(lines) and lines[start].lstrip().startswith("|"):
                cells = [c.strip() for c in lines[start].strip().strip("|").split("|")]
                if not _ORG_RULE.match(lines[start]) and not all(_ORG_RULE_CELL.match(c) for c in cells):
                    rows.append([_org_inline(c) for c in cells])
                start += 1
            at = start
            out.append(md_table(rows))
            continue
        if _ORG_DRAWER.match(line):  # :PROPERTIES: ... :END:, :LOGBOOK: ... :END:
            flush()
            while at < len(lines) and lines[at].strip().upper() != ":END:":
                at += 1
            at += 1
            continue
        if (
            _ORG_KEYWORD.match(line)
            or _ORG_PLANNING.match(line)
            or line.startswith("# ")
            or line.strip() == "#"
        ):
            continue
        item = _ORG_LIST.match(line)
        if item:
            flush()
            indent = " " * (len(item.group(1).expandtabs()) // 2 * 2)
            mark = f"{item.group(2)}." if item.group(2) else "-"
            out.append(f"{indent}{mark} {_org_inline(item.group(3))}")
            continue
        if not line.strip():
            flush()
            continue
        if out and paragraph == [] and _ORG_LIST.match(out[-1].split("\n")[-1]) and line[:1].isspace():
            out[-1] += " " + _org_inline(line.strip())  # an item's text going on under it
            continue
        paragraph.append(_org_inline(line.strip()))
    flush()
    return _joined_blocks(out)


def _joined_blocks(blocks: list[str]) -> str:
    """Blocks apart by blank lines, a list's items one under another."""
    text = ""
    for block in blocks:
        if not block.strip():
            continue
        item = _ORG_LIST.match(block) and not block.startswith("#")
        previous_item = text and _ORG_LIST.match(text.rsplit("\n", 1)[-1])
        text += ("\n" if item and previous_item else "\n\n" if text else "") + block
    return text


# ------------------------------------------------------------------ XML documents (OPML, FB2, DocBook)


def _xml_root(path: Path, kind: str) -> Any:
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, recover=True, huge_tree=False)
    try:
        root = etree.fromstring(path.read_bytes(), parser)
    except etree.XMLSyntaxError as exc:
        raise ExtractionError(f"{path.name}: not a readable {kind} file ({exc})") from exc
    if root is None:
        raise ExtractionError(f"{path.name}: not a readable {kind} file (no XML in it)")
    return root


def _name(element: Any) -> str:
    """An element's local name, its namespace left out; '' for comments and instructions."""
    tag = element.tag
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _inline(element: Any, skip: frozenset[str] = frozenset(), refs: dict[str, str] | None = None) -> str:
    """An element's text with everything inside it, on one line; elements named in `skip` left out;
    a DocBook cross-reference (`<xref linkend="ch02"/>`, empty) as its target's label or title."""
    parts: list[str] = []

    def walk(node: Any) -> None:
        if refs is not None and _name(node) == "xref":
            parts.append(refs.get(node.get("linkend") or "", ""))
        if node.text and _name(node):
            parts.append(node.text)
        for child in node:
            if _name(child) and _name(child) not in skip:
                walk(child)
            if child.tail:
                parts.append(child.tail)

    walk(element)
    return " ".join("".join(parts).split())


def opml_markdown(path: Path) -> str:
    """An OPML outline: its title, then each outline as a list item under its parent (its text, its
    note, and the address of a feed or link)."""
    root = _xml_root(path, "OPML")
    if _name(root) != "opml":
        raise ExtractionError(f"{path.name}: not an OPML file (its root is <{_name(root)}>)")
    out: list[str] = []
    title = next((_inline(e) for e in root.iter() if _name(e) == "title"), "")
    if title:
        out.append(f"# {title}\n")
    lines: list[str] = []

    def walk(element: Any, depth: int) -> None:
        for child in element:
            if _name(child) != "outline":
                continue
            text = " ".join((child.get("text") or child.get("title") or "").split())
            address = child.get("xmlUrl") or child.get("htmlUrl") or child.get("url") or ""
            note = " ".join((child.get("_note") or "").split())
            line = " ".join(p for p in (text, f"({address})" if address else "", note) if p)
            if line:
                lines.append("  " * depth + "- " + line)
            walk(child, depth + 1 if line else depth)

    for body in root:
        if _name(body) == "body":
            walk(body, 0)
    out.append("\n".join(lines))
    text = "\n".join(part for part in out if part).strip()
    if not text:
        raise ExtractionError(f"{path.name}: an OPML file with no outlines")
    return text


class _Blocks:
    """Walks an XML document into Markdown blocks, told by element names what is a section (whose
    title is a heading one level under its parent's), a paragraph, a list, a table, code, and what
    to leave out."""

    def __init__(
        self,
        sections: frozenset[str],
        titles: frozenset[str],
        paragraphs: frozenset[str],
        lists: frozenset[str],
        items: frozenset[str],
        code: frozenset[str],
        skip: frozenset[str],
        lines: frozenset[str] = frozenset(),
    ) -> None:
        self.sections, self.titles, self.paragraphs = sections, titles, paragraphs
        self.lists, self.items, self.code, self.skip, self.lines = lists, items, code, skip, lines
        self.out: list[str] = []
        self.refs: dict[str, str] | None = None  # DocBook: what each id's cross-references say

    def inline(self, element: Any) -> str:
        return _inline(element, self.skip, self.refs)

    def heading(self, level: int, text: str) -> None:
        if text:
            self.out.append("#" * max(1, min(6, level)) + " " + text)

    def walk(self, element: Any, level: int) -> None:
        name = _name(element)
        if not name or name in self.skip:
            return
        if name in self.sections:  # its title a heading; a section without one adds no level
            inner = level
            for child in element:
                child_name = _name(child)
                title = child if child_name in self.titles else None
                if child_name in ("info", "articleinfo", "bookinfo", "chapterinfo", "sectioninfo"):
                    title = next((c for c in child if _name(c) in self.titles), None)
                elif title is None:
                    self.walk(child, inner)
                    continue
                if title is not None and self.title_text(title) and inner == level:
                    self.heading(level, self.title_text(title))
                    inner = level + 1
            return
        if name in self.titles:  # a title outside a section (a table's, a figure's)
            self.paragraph(self.title_text(element))
        elif name in self.code:
            self.out.append(_fenced("".join(element.itertext()), element.get("language") or ""))
        elif name in self.lists:
            self.list(element, 0)
        elif name in ("table", "informaltable", "simplelist") and self.table(element):
            pass
        elif name in self.lines:  # a poem's stanza: its lines together
            self.out.append("\n".join(self.inline(v) for v in element if self.inline(v)))
        elif name in self.paragraphs or (element.text and element.text.strip()):
            self.paragraph(self.inline(element))
        else:
            for child in element:
                self.walk(child, level)

    def paragraph(self, text: str) -> None:
        if text:
            self.out.append(text)

    def title_text(self, element: Any) -> str:
        """A title's text; a title of several paragraphs (FictionBook's) on one line."""
        return self.inline(element)

    def list(self, element: Any, depth: int) -> None:
        ordered = _name(element) in ("orderedlist",)
        number = 0
        for item in element:
            if _name(item) not in self.items:
                continue
            number += 1
            text_parts: list[str] = []
            nested: list[Any] = []
            for child in item:
                if _name(child) in self.lists:
                    nested.append(child)
                elif _name(child) and _name(child) not in self.skip:
                    text_parts.append(self.inline(child))
            if item.text and item.text.strip():
                text_parts.insert(0, " ".join(item.text.split()))
            if _name(item) == "varlistentry":  # a term and its definition
                text_parts = [": ".join(p for p in text_parts if p)]
            mark = f"{number}." if ordered else "-"
            self.out.append("  " * depth + f"{mark} " + " ".join(p for p in text_parts if p))
            for child in nested:
                self.list(child, depth + 1)

    def table(self, element: Any) -> bool:
        rows = [r for r in element.iter() if _name(r) in ("row", "tr")]
        if not rows:
            return False
        for child in element:
            if _name(child) in self.titles or _name(child) == "caption":
                self.paragraph(self.inline(child))
        cells = [[self.inline(c) for c in row if _name(c) in ("entry", "td", "th")] for row in rows]
        table = md_table(cells)
        if table:
            self.out.append(table)
        return True

    def markdown(self) -> str:
        return _joined_blocks(self.out)


_FB2_SKIP = frozenset({"binary", "image", "stylesheet"})


def fb2_markdown(path: Path) -> str:
    """A FictionBook: the book's title, authors and annotation, then each body (the notes' last) with
    its sections as headings, paragraphs, poems (a stanza's lines together), citations, epigraphs
    and tables; embedded pictures (base64) left out."""
    root = _xml_root(path, "FictionBook")
    if _name(root) != "FictionBook":
        raise ExtractionError(f"{path.name}: not a FictionBook (its root is <{_name(root)}>)")
    blocks = _Blocks(
        sections=frozenset({"section", "body"}),
        titles=frozenset({"title"}),
        paragraphs=frozenset({"p", "subtitle", "text-author", "v", "date"}),
        lists=frozenset(),
        items=frozenset(),
        code=frozenset(),  # FictionBook's <code> is inline
        skip=_FB2_SKIP,
        lines=frozenset({"stanza"}),
    )
    info = next((e for e in root.iter() if _name(e) == "title-info"), None)
    if info is not None:
        title = next((_inline(e) for e in info if _name(e) == "book-title"), "")
        blocks.heading(1, title)
        authors = [
            " ".join(
                _inline(part) for part in author if _name(part) in ("first-name", "middle-name", "last-name")
            )
            or _inline(author)
            for author in info
            if _name(author) == "author"
        ]
        if any(authors):
            blocks.paragraph(", ".join(a for a in authors if a))
        for annotation in (e for e in info if _name(e) == "annotation"):
            blocks.walk(annotation, 2)
    for body in root:
        if _name(body) == "body":
            blocks.walk(body, 1 if info is None else 2)
    text = blocks.markdown()
    if not text.strip():
        raise ExtractionError(f"{path.name}: a FictionBook with no text")
    return text


_DOCBOOK_SECTIONS = frozenset(
    "book part chapter preface appendix article section simplesect sect1 sect2 sect3 sect4 sect5 "
    "refentry refsect1 refsect2 refsect3 refsection glossary bibliography colophon dedication "
    "partintro reference set".split()
)
_DOCBOOK_SKIP = frozenset(
    "indexterm remark info articleinfo bookinfo chapterinfo sectioninfo titleabbrev imageobject "
    "videoobject audioobject".split()
)


def is_docbook(root: Any) -> bool:
    """DocBook 5 by its namespace, DocBook 4 by a root such as <book>, <article> or <chapter> whose
    children are DocBook's (a title, sections or paragraphs)."""
    tag = root.tag if isinstance(root.tag, str) else ""
    if tag.startswith("{http://docbook.org/ns/docbook}"):
        return True
    if tag not in ("book", "article", "chapter", "section", "sect1", "part", "appendix", "preface"):
        return False
    names = {_name(child) for child in root}
    return bool(names & {"para", "sect1", "section", "chapter", "simpara", "articleinfo", "bookinfo"})


def docbook_markdown(path: Path) -> str:
    """A DocBook document: its title, sections as headings by depth, paragraphs, lists (definition
    lists as `term: definition`), tables, admonitions, and program listings as code."""
    root = _xml_root(path, "DocBook")
    if not is_docbook(root):
        raise ExtractionError(f"{path.name}: not a DocBook document (its root is <{_name(root)}>)")
    return docbook_root_markdown(root)


def _docbook_labels(root: Any) -> dict[str, str]:
    """Each id's label for a cross-reference to it: its `xreflabel`, else its title's text (an
    `<info>` title too), else its own text (a command's name)."""
    labels: dict[str, str] = {}
    for element in root.iter():
        if not _name(element):
            continue
        key = element.get("id") or element.get("{http://www.w3.org/XML/1998/namespace}id")
        if not key:
            continue
        label = element.get("xreflabel") or ""
        if not label:
            holders = [element, *(c for c in element if _name(c) in ("info", "bookinfo", "chapterinfo"))]
            title = next((c for h in holders for c in h if _name(c) == "title"), None)
            label = _inline(title if title is not None else element, _DOCBOOK_SKIP)
        labels[key] = " ".join(label.split()[:20])
    return labels


def docbook_root_markdown(root: Any) -> str:
    blocks = _Blocks(
        sections=_DOCBOOK_SECTIONS,
        titles=frozenset({"title"}),
        paragraphs=frozenset({"para", "simpara", "formalpara", "term", "attribution", "subtitle"}),
        lists=frozenset({"itemizedlist", "orderedlist", "variablelist", "simplelist", "glosslist"}),
        items=frozenset({"listitem", "varlistentry", "member", "glossentry"}),
        code=frozenset({"programlisting", "screen", "literallayout", "synopsis", "programlistingco"}),
        skip=_DOCBOOK_SKIP,
    )
    blocks.refs = _docbook_labels(root)
    blocks.walk(root, 1)
    text = blocks.markdown()
    if not text.strip():
        raise ExtractionError("a DocBook document with no text")
    return text


# ------------------------------------------------------------------ reStructuredText

# Sphinx's roles, which plain docutils does not know (`:func:`parse``): read as their text
_SPHINX_ROLES = (
    "ref doc term func meth class mod attr data const exc obj py:func py:meth py:class py:mod "
    "py:attr py:data py:const py:exc py:obj c:func c:type cpp:func cpp:class envvar option "
    "program file command kbd menuselection guilabel samp abbr dfn download numref keyword "
    "token any mimetype rfc pep"
).split()
# Sphinx's directives: their content read as text, their arguments left out
_SPHINX_DIRECTIVES = (
    "toctree automodule autoclass autofunction automethod autodata autoattribute autoexception "
    "currentmodule module function class method attribute data exception versionadded "
    "versionchanged deprecated seealso glossary index only highlight tabularcolumns hlist "
    "centered productionlist literalinclude autosummary todo"
).split()


_SETTING_DIRECTIVES = frozenset(
    "highlight tabularcolumns index only literalinclude currentmodule module toctree".split()
)


def _sphinx_known() -> None:
    """Roles and directives Sphinx adds, made known to docutils once so that documentation written
    for Sphinx reads as its text instead of error messages."""
    from docutils import nodes
    from docutils.parsers.rst import Directive, directives, roles

    if getattr(_sphinx_known, "done", False):
        return

    def role(
        name: str,
        rawtext: str,
        text: str,
        lineno: int,
        inliner: object,
        options: object = None,
        content: object = None,
    ) -> tuple[list[Any], list[Any]]:
        shown = re.sub(r"^(.*?)\s*<[^<>]*>$", r"\1", text).lstrip("~!") or text
        return [nodes.literal(rawtext, shown)], []

    class Content(Directive):  # type: ignore[misc]
        has_content = True
        optional_arguments = 10
        final_argument_whitespace = True
        option_spec: Any = None  # any option

        def run(self) -> list[Any]:
            container = nodes.container()
            if self.arguments and self.name not in _SETTING_DIRECTIVES:  # `versionadded:: 1.2 Text`
                container += nodes.paragraph(text=" ".join(self.arguments))
            if self.content:
                self.state.nested_parse(self.content, self.content_offset, container)
            return [container]

    Content.option_spec = _AnyOptions()
    for name in _SPHINX_ROLES:
        roles.register_local_role(name, role)
    for name in _SPHINX_DIRECTIVES:
        directives.register_directive(name, Content)
    _sphinx_known.done = True  # type: ignore[attr-defined]


class _AnyOptions(dict[str, Callable[[str], str]]):
    """A directive's option spec that takes every option (`:maxdepth: 2`, `:members:`)."""

    def __contains__(self, key: object) -> bool:
        return True

    def __getitem__(self, key: str) -> Callable[[str], str]:
        return lambda value: value or ""

    def get(self, key: str, default: Any = None) -> Callable[[str], str]:
        return self[key]


def rst_markdown(path: Path) -> str:
    """reStructuredText through docutils (to HTML, then as HTML is read): sections, lists, tables,
    literal blocks; file inclusion and raw passthrough off, so nothing outside the file is read;
    Sphinx's roles and directives read as their text."""
    from docutils.core import publish_parts

    _sphinx_known()
    settings = {
        "file_insertion_enabled": False,
        "raw_enabled": False,
        "report_level": 5,  # no system messages in the text
        "halt_level": 5,
        "warning_stream": io.StringIO(),
        "_disable_config": True,
        "input_encoding": "unicode",
        "syntax_highlight": "none",
        "math_output": "latex",
        "embed_stylesheet": False,
        "doctitle_xform": True,
    }
    parts = publish_parts(
        source=decode(path.read_bytes()),
        source_path=path.name,
        writer="html5",
        settings_overrides=settings,
    )
    html = f"<h1>{parts['title']}</h1>" if parts.get("title") else ""
    html += str(parts.get("subtitle") or "") + str(parts.get("body") or "")
    return html_markdown(html)


# ------------------------------------------------------------------ Typst

_TYPST_HEADING = re.compile(r"^(=+)\s+(.*?)\s*(?:<[\w:.-]+>)?\s*$")
_TYPST_ITEM = re.compile(r"^(\s*)([-+])\s+(.*)$")
_TYPST_TERM = re.compile(r"^(\s*)/\s+([^:]+):\s*(.*)$")
_TYPST_SETTING = re.compile(r"^\s*#(set|show|import|include|let|pagebreak|v|h|outline)\b")
_TYPST_CALL = re.compile(r"#([A-Za-z][\w.-]*)")
_TYPST_STRONG = re.compile(r"(?<![\w*])\*(\S(?:[^*\n]{0,200}?\S)?)\*(?![\w*])")
_TYPST_EMPH = re.compile(r"(?<![\w_])_(\S(?:[^_\n]{0,200}?\S)?)_(?![\w_])")
_TYPST_TITLE = re.compile(
    r"""#set\s+document\s*\((?:[^()]|\([^()]*\))*?title:\s*(?:"((?:[^"\\]|\\.)*)"|\[([^\]]*)\])""", re.DOTALL
)


def _balanced(text: str, at: int) -> int:
    """Past the bracket or parenthesis group opening at `at` (strings and nested groups inside)."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack: list[str] = []
    quoted = False
    while at < len(text):
        char = text[at]
        if quoted:
            if char == "\\":
                at += 1
            elif char == '"':
                quoted = False
        elif char == '"' and (not stack or stack[-1] != "]"):
            quoted = True
        elif char in pairs:
            stack.append(pairs[char])
        elif stack and char == stack[-1]:
            stack.pop()
            if not stack:
                return at + 1
        at += 1
    return at


def _typst_depth(line: str) -> int:
    """How many more groups the line opens than it closes."""
    return line.count("(") + line.count("[") - line.count(")") - line.count("]")


def _typst_call(text: str, at: int) -> tuple[str, int]:
    """A function call at `at` (`#link("url")[text]`, `#table(columns: 2, [a], [b])`): its
    content blocks' text, a table's cells as a pipe table; where it ends."""
    name = _TYPST_CALL.match(text, at)
    assert name is not None
    end = name.end()
    arguments = ""
    if end < len(text) and text[end] == "(":
        close = _balanced(text, end)
        arguments, end = text[end + 1 : close - 1], close
    blocks = []
    while end < len(text) and text[end] == "[":
        close = _balanced(text, end)
        blocks.append(text[end + 1 : close - 1])
        end = close
    function = name.group(1)
    inner = _bracket_blocks(arguments)
    if function.endswith("table") or function == "grid":
        return _typst_table(arguments, inner), end
    if function in ("link", "cite", "ref") and not blocks:
        strings = re.findall(r'"([^"]*)"', arguments)
        return (strings[0] if strings and function == "link" else ""), end
    if not arguments and not blocks and end == name.end():
        return function, end  # a variable's value (`#count`): its name stands for it
    shown = [_typst_inline(b) for b in [*inner, *blocks]]
    return " ".join(s for s in shown if s), end


def _bracket_blocks(arguments: str) -> list[str]:
    """The content blocks (`[...]`) among a call's arguments, in order, a nested table's found too."""
    found = []
    at = 0
    while at < len(arguments):
        if arguments[at] == "[":
            close = _balanced(arguments, at)
            found.append(arguments[at + 1 : close - 1])
            at = close
        elif arguments[at] == '"':  # a string argument (an address, a path): no content
            at = arguments.find('"', at + 1) + 1 or len(arguments)
        else:
            at += 1
    return found


def _typst_table(arguments: str, cells: list[str]) -> str:
    columns = re.search(r"columns:\s*(\d+|\()", arguments)
    width = 1
    if columns and columns.group(1) == "(":
        close = _balanced(arguments, columns.end() - 1)
        inside = arguments[columns.end() : close - 1]
        width = max(1, len([c for c in re.split(r",(?![^()]*\))", inside) if c.strip()]))
    elif columns:
        width = max(1, int(columns.group(1)))
    values = [_typst_inline(c) for c in cells]
    rows = [values[n : n + width] for n in range(0, len(values), width)]
    return md_table(rows) if rows else ""


def _typst_inline(text: str) -> str:
    """Markup's text: calls as their content, strong and emphasis markers off, on one line; raw
    text between backticks as written."""
    parts = re.split(r"(`[^`\n]*`)", text)
    shown = [part if part.startswith("`") else _typst_markup(part) for part in parts]
    return " ".join("".join(shown).split())


def _typst_markup(text: str) -> str:
    out = []
    at = 0
    while at < len(text):
        found = _TYPST_CALL.search(text, at)
        if found is None or (found.start() > 0 and text[found.start() - 1] == "\\"):
            if found is None:
                out.append(text[at:])
                break
            out.append(text[at : found.end()])
            at = found.end()
            continue
        out.append(text[at : found.start()])
        shown, at = _typst_call(text, found.start())
        out.append(shown)
    return _TYPST_EMPH.sub(r"\1", _TYPST_STRONG.sub(r"\1", "".join(out)))


def _typst_without_comments(text: str) -> str:
    """Typst without its `// line` and `/* block */` comments (an address's `//` kept)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.DOTALL)
    return re.sub(r"(?m)(^|(?<=\s))//.*$", "", text)


def typst_markdown(path: Path) -> str:
    """A Typst document: its title (`#set document(title: …)`), `=` headings, lists and term lists,
    code blocks, tables (`#table(columns: …, [cell], …)`) as pipe tables, other calls as their
    content (`#link("…")[text]` as its text); settings, definitions and comments left out, and
    nothing included from another file."""
    source = _typst_without_comments(decode(path.read_bytes()))
    out: list[str] = []
    title = _TYPST_TITLE.search(source)
    shift = 0
    if title:
        out.append("# " + _typst_inline(title.group(1) or title.group(2) or ""))
        shift = 1
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            out.append(_typst_inline(" ".join(paragraph)))
            paragraph.clear()

    lines = source.split("\n")
    at = 0
    while at < len(lines):
        line = lines[at]
        at += 1
        stripped = line.strip()
        if stripped.startswith("```"):
            flush()
            body = []
            while at < len(lines) and not lines[at].strip().startswith("```"):
                body.append(lines[at])
                at += 1
            at += 1
            out.append(_fenced(textwrap.dedent("\n".join(body)), stripped[3:].strip()))
            continue
        block_call = not paragraph and stripped.startswith("#") and _TYPST_CALL.match(stripped)
        if _TYPST_SETTING.match(line) or block_call:  # (a call inside a paragraph is its text)
            flush()
            # a statement or call that goes on over lines: read up to where its groups close
            taken = [line]
            depth = _typst_depth(line)
            while depth > 0 and at < len(lines):
                taken.append(lines[at])
                depth += _typst_depth(lines[at])
                at += 1
            text = "\n".join(taken)
            if not _TYPST_SETTING.match(line):
                shown = _typst_inline(text) if "table(" not in text and "grid(" not in text else ""
                if not shown:
                    start = text.find("#")
                    shown, _ = _typst_call(text, start) if _TYPST_CALL.match(text, start) else ("", 0)
                if shown:
                    out.append(shown)
            continue
        heading = _TYPST_HEADING.match(line)
        if heading:
            flush()
            out.append("#" * min(6, len(heading.group(1)) + shift) + " " + _typst_inline(heading.group(2)))
            continue
        item = _TYPST_ITEM.match(line)
        term = _TYPST_TERM.match(line)
        if item or term:
            flush()
            if term:
                indent, text = (
                    term.group(1),
                    f"{_typst_inline(term.group(2))}: {_typst_inline(term.group(3))}",
                )
                mark = "-"
            else:
                assert item is not None
                indent, text = item.group(1), _typst_inline(item.group(3))
                mark = "1." if item.group(2) == "+" else "-"
            out.append(" " * (len(indent) // 2 * 2) + f"{mark} {text}")
            continue
        if not stripped:
            flush()
            continue
        paragraph.append(stripped)
    flush()
    return _joined_blocks(out)


# ------------------------------------------------------------------ SubRip subtitles

_SRT_TIMING = re.compile(r"^\s*\d{1,2}:\d{2}:\d{2}[,.]\d{1,3}\s*-->\s*\d{1,2}:\d{2}:\d{2}[,.]\d{1,3}")
_SRT_TAGS = re.compile(r"</?[a-zA-Z][^>]*>|\{\\[^}]*\}")  # <i>, <font color=…>, {\an8}


def srt_markdown(path: Path) -> str:
    """SubRip subtitles (`.srt`): each cue's text a paragraph, in order, as WebVTT's are; the cue
    numbers, timings and styling tags left out."""
    cues: list[str] = []
    lines: list[str] = []
    timed = False  # inside a cue: after its timing line
    for line in [*decode(path.read_bytes()).lstrip("\ufeff").splitlines(), ""]:
        if _SRT_TIMING.match(line):
            if lines and lines[-1].strip().isdigit():
                lines.pop()  # the next cue's number, written without a blank line before it
            if lines:
                cues.append(" ".join(lines))
            lines, timed = [], True
        elif timed and line.strip():
            lines.append(" ".join(_SRT_TAGS.sub("", line).split()))
        elif not line.strip():
            if lines:
                cues.append(" ".join(lines))
            lines, timed = [], False
    cues = [c for c in (" ".join(c.split()) for c in cues) if c]
    if not cues:
        raise ExtractionError(f"{path.name}: no subtitle cues in it (a number, a timing line, its text)")
    return "\n\n".join(cues)


# ------------------------------------------------------------------ SVG drawings

_SVG_HIDDEN = frozenset({"style", "script", "defs", "metadata", "symbol", "clipPath", "mask", "pattern"})


def svg_markdown(path: Path) -> str:
    """An SVG drawing (a diagram, a chart, a slide exported as SVG): its title and description, then each text
    element's words in the order they are drawn, a `<text>` of several `<tspan>` lines one paragraph;
    styles, scripts and definitions left out, nothing fetched. An icon or a logo, which has no text
    element, gives no text (its file is skipped as such), not a passage of its title alone."""
    root = _xml_root(path, "SVG")
    title = next((_inline(t) for t in root if _name(t) == "title"), "")
    description = next((_inline(t) for t in root if _name(t) == "desc"), "")
    blocks: list[str] = []
    for element in root.iter():
        if _name(element) != "text" or any(_name(a) in _SVG_HIDDEN for a in element.iterancestors()):
            continue
        parts: list[str] = []
        for node in element.iter():
            if _name(node) in ("title", "desc"):
                continue
            if node is not element and _name(node) == "tspan" and {"x", "y", "dy"} & set(node.keys()):
                parts.append(" ")  # a tspan placed apart is a line of its own
            if _name(node):  # not a comment nor an entity left unresolved
                parts.append(node.text or "")
            if node is not element and node.tail:
                parts.append(node.tail)
        words = " ".join("".join(parts).split())
        if words:
            blocks.append(words)
    if not blocks:  # an icon or a logo (a title at most, its letters drawn as paths): no text to find
        return ""
    return "\n\n".join([*([f"# {title}"] if title else []), *([description] if description else []), *blocks])
