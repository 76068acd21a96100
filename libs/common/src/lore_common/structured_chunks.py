"""Chunks that follow a document's structure (see docs/docdb.md, *Chunks*), for the Markdown-like text
docdb's converters write: `#` headings, pipe tables (`| a | b |` under a `|---|` rule), lists, code
fences, and pages split by form feeds.

- A chunk never spans two sections: it is cut at every heading (a heading with no text of its own
  before the next one goes into the next chunk, so `# Guide` then `## Install` stay together).
  Headings with no text under them at all (a document's last headings, an outline, a long table of
  contents) still make chunks of their own, `chunk_size` tokens at most: no title is lost.
- Inside a section, whole paragraphs and tables are packed up to `chunk_size` tokens (the token rule
  of `lore_common.chunking`); the cut falls at a paragraph's or table's end.
- A paragraph longer than `chunk_size` is cut at sentence and line ends (a single sentence longer than
  that at token boundaries), and each of its pieces after the first repeats the last whole sentences of
  the one before, up to `overlap` tokens.
- A table is never cut inside a row. One longer than `chunk_size` is split by rows, its header row and
  rule repeated at the top of every part; a single row longer than `chunk_size` stays whole unless it
  passes `ROW_LIMIT` times the size (then it is cut at token boundaries, as a paragraph would be).
- Each chunk carries its heading path (the titles of the sections it sits in, outermost first; a
  "Contents" heading ends at the next heading of any level) and,
  for a paged document, the first and last page it draws from (1-based, counted by form feeds).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lore_common.chunking import chunk_text, count_tokens

PAGE_BREAK = "\f"
ROW_LIMIT = 4  # a table row past ROW_LIMIT × chunk_size tokens is cut after all
HEADING_CHARS = 200  # a heading's title is kept to this many characters in the path
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_TABLE_LINE = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_RULE = re.compile(r"^\s*\|(\s*:?-+:?\s*\|)+\s*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_UNIT_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？；])\s*|\n+")
# Emphasis and code marks around words (`**Install**`, `_Intro_`, `` `config.yaml` ``), taken out of a
# title; a mark inside a word or without its pair is text: `word_sample.docx`, `my_function`, the star
# `Sgr A*` kept theirs (every `*`, `_` and backtick was dropped: `wordsample.docx`).
_EMPHASIS = re.compile(r"(?<![\w*_`])(\*{1,3}|_{1,3}|`+)(?=\S)(.+?)(?<=\S)\1(?![\w*_`])")
# A table of contents holds its own list only: the next heading, whatever its level, ends it (a
# contents page set in the largest type made a 76-page booklet's every section "Contents > …").
_CONTENTS = re.compile(
    r"^(?:table of contents|contents|inhalt|inhaltsverzeichnis|sommaire|table des matières|índice|"
    r"indice|contenido|目录|目次|목차)$",
    re.IGNORECASE,
)


@dataclass
class StructuredChunk:
    text: str
    heading_path: list[str] = field(default_factory=list)
    page_start: int | None = None  # 1-based; None for a document without pages
    page_end: int | None = None


@dataclass
class _Block:
    kind: str  # heading | paragraph | table
    lines: list[str]
    pages: list[int]  # the page of each line
    path: list[str]
    header: int = 0  # for a table: how many of its first lines are the header (row and rule)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass
class _Piece:
    text: str
    tokens: int
    first_page: int
    last_page: int
    heading: bool = False
    newline: bool = False  # a unit of a long paragraph that starts a line of it


def heading_title(line: str) -> str | None:
    """The title of a Markdown heading line (`## Install` → `Install`), or None."""
    match = _HEADING.match(line)
    if match is None:
        return None
    title = _EMPHASIS.sub(r"\2", _EMPHASIS.sub(r"\2", match.group(2)))  # twice: `**_both_**`
    title = " ".join(title.split())
    return title[:HEADING_CHARS] or None


def _blocks(text: str, paged: bool) -> list[_Block]:
    """The text as headings, paragraphs and tables, each with its page and its heading path."""
    blocks: list[_Block] = []
    stack: list[tuple[int, str]] = []
    current: _Block | None = None
    fence: str | None = None
    page = 1

    def close() -> None:
        nonlocal current
        if current is not None and any(line.strip() for line in current.lines):
            blocks.append(current)
        current = None

    def path() -> list[str]:
        return [title for _, title in stack]

    for raw in text.split("\n"):
        parts = raw.split(PAGE_BREAK)
        for index, line in enumerate(parts):
            if index:
                if paged:
                    page += 1
                if fence is None and (current is None or current.kind != "table"):
                    close()  # a page break ends a paragraph; a table goes on across pages
            line = line.rstrip()
            if fence is not None:
                if current is not None:
                    current.lines.append(line)
                    current.pages.append(page)
                if line.lstrip().startswith(fence):
                    fence = None
                    close()
                continue
            fenced = _FENCE.match(line)
            if fenced:
                close()
                fence = fenced.group(1)
                current = _Block("paragraph", [line], [page], path())
                continue
            if not line.strip():
                if PAGE_BREAK not in raw:  # the empty sides of a page break end nothing
                    close()
                continue
            match = _HEADING.match(line)
            title = heading_title(line) if match else None
            if match and title:
                close()
                level = len(match.group(1))
                while stack and (stack[-1][0] >= level or _CONTENTS.match(stack[-1][1])):
                    stack.pop()
                stack.append((level, title))
                blocks.append(_Block("heading", [line.strip()], [page], path()))
                continue
            if _TABLE_LINE.match(line):
                if current is None or current.kind != "table":
                    close()
                    current = _Block("table", [], [], path())
                current.lines.append(line.strip())
                current.pages.append(page)
                if len(current.lines) == 2 and _TABLE_RULE.match(line):
                    current.header = 2
                continue
            if current is not None and current.kind == "table":
                close()
            if current is None:
                current = _Block("paragraph", [], [], path())
            current.lines.append(line)
            current.pages.append(page)
    close()
    return blocks


def _units(block: _Block) -> list[_Piece]:
    """A long paragraph's sentences and lines, each with its page, in order."""
    pieces: list[_Piece] = []
    for line, page in zip(block.lines, block.pages, strict=True):
        start, first = 0, True
        ends = [(m.start(), m.end()) for m in _UNIT_END.finditer(line)] + [(len(line), len(line))]
        for end, after in ends:
            text = line[start:end].strip()
            if text:
                pieces.append(_Piece(text, count_tokens(text), page, page, newline=first))
                first = False
            start = after
    return pieces


class _Packer:
    def __init__(self, chunk_size: int, overlap: int, paged: bool) -> None:
        self.size = max(1, chunk_size)
        self.overlap = max(0, min(overlap, self.size - 1))
        self.paged = paged
        self.chunks: list[StructuredChunk] = []
        self.pieces: list[_Piece] = []
        self.path: list[str] = []

    @property
    def tokens(self) -> int:
        return sum(p.tokens for p in self.pieces)

    @property
    def has_body(self) -> bool:
        return any(not p.heading for p in self.pieces)

    def add(self, piece: _Piece, path: list[str]) -> None:
        self.pieces.append(piece)
        self.path = path

    def flush(self, headings_too: bool = False) -> None:
        """The pieces under way as a chunk; `headings_too`: even when they are headings only."""
        if self.has_body or (headings_too and self.pieces):
            text = "\n\n".join(p.text for p in self.pieces)
            first = min(p.first_page for p in self.pieces)
            last = max(p.last_page for p in self.pieces)
            self.chunks.append(
                StructuredChunk(
                    text=text,
                    heading_path=list(self.path),
                    page_start=first if self.paged else None,
                    page_end=last if self.paged else None,
                )
            )
            self.pieces = []
        # a chunk of headings only waits for the text under them

    def block(self, block: _Block) -> None:
        if block.kind == "heading":
            if self.has_body:
                self.flush()
            elif self.pieces and self.tokens + count_tokens(block.text) > self.size:
                self.flush(headings_too=True)  # an outline longer than a chunk: its titles in parts
            self.add(
                _Piece(block.text, count_tokens(block.text), block.pages[0], block.pages[0], True), block.path
            )
            return
        tokens = count_tokens(block.text)
        whole = _Piece(block.text, tokens, min(block.pages), max(block.pages))
        if self.tokens + tokens <= self.size:
            self.add(whole, block.path)
        elif tokens <= self.size:
            self.flush()  # headings waiting for their text stay with it
            self.add(whole, block.path)
        elif block.kind == "table":
            self.table(block)
        else:
            self.paragraph(block)

    def paragraph(self, block: _Block) -> None:
        """A paragraph longer than a chunk: sentences and lines packed (the first piece fills the chunk
        under way), the overlap repeated."""
        units = _units(block)
        current: list[_Piece] = []
        for unit in units:
            if unit.tokens > self.size:
                self._emit(current, block.path)
                self.flush()
                current = []
                for window in chunk_text(unit.text, self.size, self.overlap):
                    self._emit(
                        [_Piece(window, count_tokens(window), unit.first_page, unit.last_page)], block.path
                    )
                continue
            if not current and self.has_body and self.tokens + unit.tokens > self.size:
                self.flush()  # the chunk under way has no room even for the first sentence
            if current and self._fill(current) + unit.tokens > self.size:
                self._emit(current, block.path)
                current = self._carried(current, unit.tokens)
            current.append(unit)
        self._emit(current, block.path)

    def _fill(self, units: list[_Piece]) -> int:
        return self.tokens + sum(u.tokens for u in units)

    def _carried(self, units: list[_Piece], room_for: int) -> list[_Piece]:
        carried: list[_Piece] = []
        total = 0
        for unit in reversed(units):
            if total + unit.tokens > self.overlap or total + unit.tokens + room_for > self.size:
                break
            carried.insert(0, unit)
            total += unit.tokens
        return carried

    def _emit(self, units: list[_Piece], path: list[str]) -> None:
        if not units:
            return
        text = "".join(("\n" if u.newline else " ") + u.text for u in units)[1:]
        self.add(_Piece(text, sum(u.tokens for u in units), units[0].first_page, units[-1].last_page), path)
        self.flush()

    def table(self, block: _Block) -> None:
        """A table longer than a chunk, by rows, each part under the table's header."""
        self.flush()
        header = block.lines[: block.header]
        header_tokens = count_tokens("\n".join(header))
        rows = list(zip(block.lines[block.header :], block.pages[block.header :], strict=True))
        part: list[tuple[str, int]] = []
        part_tokens = header_tokens

        def emit() -> None:
            if part:
                text = "\n".join([*header, *(row for row, _ in part)])
                self.add(_Piece(text, part_tokens, part[0][1], part[-1][1]), block.path)
                self.flush()

        for row, page in rows:
            tokens = count_tokens(row)
            if tokens > ROW_LIMIT * self.size:  # a row too long for any embedder: cut after all
                emit()
                part, part_tokens = [], header_tokens
                for window in chunk_text(row, self.size, self.overlap):
                    self.add(_Piece(window, count_tokens(window), page, page), block.path)
                    self.flush()
                continue
            if part and part_tokens + tokens > self.size:
                emit()
                part, part_tokens = [], header_tokens
            part.append((row, page))
            part_tokens += tokens
        emit()


def chunk_structured(
    text: str, chunk_size: int = 1024, overlap: int = 50, *, paged: bool = False
) -> list[StructuredChunk]:
    """The text's chunks, cut at headings and paragraph ends, tables whole or split by rows under their
    header; `paged`: form feeds separate pages (a PDF), so each chunk carries its page span."""
    packer = _Packer(chunk_size, overlap, paged)
    for block in _blocks(text, paged):
        packer.block(block)
    packer.flush(headings_too=True)
    return packer.chunks


# Whether the vectors and BM25 index a chunk with its heading path before its text (the text shown and
# cited stays the chunk's own): measured with bench/retrieval.py, see docs/docdb.md (*Chunks*).
HEADINGS_INDEXED = True


def indexed_text(text: str, heading_path: list[str] | tuple[str, ...]) -> str:
    """What retrieval indexes for a chunk: its heading path (`Guide > Install`), then its text."""
    if not HEADINGS_INDEXED or not heading_path:
        return text
    return " > ".join(heading_path) + "\n\n" + text
