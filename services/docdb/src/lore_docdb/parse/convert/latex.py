"""LaTeX through docling-rs, with the source tidied first of what its reader writes out as text:
`\\href{url}{text}` (its address and text run together, a heading split in two), `\\rule{3in}{0.4pt}`
(`3in0.4pt`), a line break's space (`\\\\[2mm]` read `2mm`), a minipage's position (`[b]` in every
header cell), and a longtable's header and footer written again for its continuation pages (each
table's header row twice); and with a table's rows of empty cells (its closing `\\hline`) left out."""

from __future__ import annotations

import re
from io import BytesIO
from pathlib import Path

from lore_docdb.parse.convert.common import decode

_HREF = re.compile(r"\\href\s*(?=\{)")
_RULE = re.compile(r"\\rule\s*(?:\[[^\]]*\])?\s*(?=\{)")
_MINIPAGE = re.compile(r"\\begin\{minipage\}\s*(?:\[[^\]]*\]\s*)*(?=\{)")
_LONGTABLE = re.compile(r"\\begin\{longtable\}(.*?)\\end\{longtable\}", re.DOTALL)
_BREAK_SPACE = re.compile(r"\\\\\*?\s*\[[^\]\n]*\]")  # `\\[2mm]`: a line break and the space after it
_TABLE_PART = re.compile(r"\\(endfirsthead|endhead|endfoot|endlastfoot)\b")
_EMPTY_ROW = re.compile(r"^\|(?:\s*\|)+\s*$")
# A list environment's start or end, or an item: an `enumerate`'s items are numbered here, as LaTeX
# typesets them (docling-rs reads every list as bullets, and "step 3" was lost).
_LIST_TOKEN = re.compile(r"\\(begin|end)\{(enumerate|itemize|description)\}|\\item\b(?!\s*\[)")
_NUMBER_MARK = "LoreItemNumber"  # a word docling-rs keeps as it is, put before a numbered item's text
_NUMBERED_ITEM = re.compile(rf"^(\s*)[-*+] {_NUMBER_MARK}(\d+){_NUMBER_MARK} ?", re.MULTILINE)
_STRAY_MARK = re.compile(rf"{_NUMBER_MARK}\d+{_NUMBER_MARK} ?")


def _group_end(text: str, at: int) -> int:
    """Where the brace group opening at `at` ends (past its `}`); the text's end if it never does."""
    depth = 0
    while at < len(text):
        char = text[at]
        if char == "\\":
            at += 2
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return at + 1
        at += 1
    return at


def _groups(text: str, at: int, count: int) -> tuple[list[str], int]:
    """The contents of `count` brace groups from `at` (spaces between them passed over)."""
    contents = []
    for _ in range(count):
        while at < len(text) and text[at] in " \t\n":
            at += 1
        if at >= len(text) or text[at] != "{":
            break
        end = _group_end(text, at)
        contents.append(text[at + 1 : end - 1])
        at = end
    return contents, at


def _replaced(text: str, pattern: re.Pattern[str], count: int, keep: int | None) -> str:
    """Each match of `pattern` and the `count` brace groups after it replaced by the group numbered
    `keep` (or by nothing)."""
    out = []
    at = 0
    for found in pattern.finditer(text):
        if found.start() < at:
            continue
        groups, end = _groups(text, found.end(), count)
        out.append(text[at : found.start()])
        if keep is not None and len(groups) > keep:
            out.append(groups[keep])
        at = end
    out.append(text[at:])
    return "".join(out)


def _longtable_once(found: re.Match[str]) -> str:
    """A longtable with its first header and its last footer only: the parts before `\\endhead`
    (where `\\endfirsthead` gave the first one) and `\\endfoot` repeat on continuation pages."""
    body = found.group(1)
    parts = _TABLE_PART.split(body)
    markers = parts[1::2]
    kept = []
    for n, marker in enumerate(markers):
        part = parts[2 * n]
        if marker == "endfoot" or (marker == "endhead" and "endfirsthead" in markers):
            continue
        kept.append(part)
    kept.append(parts[-1])
    return "\\begin{longtable}" + "".join(kept) + "\\end{longtable}"


def _numbered_items(source: str) -> str:
    """Each `\\item` of an `enumerate` (not one with its own `[label]`) marked with its number,
    counted per list, nested lists apart."""
    counters: list[int | None] = []  # per open list: the next number, None for an unnumbered one

    def mark(found: re.Match[str]) -> str:
        if found.group(1) == "begin":
            counters.append(1 if found.group(2) == "enumerate" else None)
        elif found.group(1) == "end":
            if counters:
                counters.pop()
        elif counters and counters[-1] is not None:
            number = counters[-1]
            counters[-1] = number + 1
            return f"\\item {_NUMBER_MARK}{number}{_NUMBER_MARK}"
        return found.group(0)

    return _LIST_TOKEN.sub(mark, source)


def tidy_latex(source: str) -> str:
    source = _numbered_items(source)
    source = _replaced(source, _HREF, 2, 1)
    source = _replaced(source, _RULE, 2, None)
    source = _replaced(source, _MINIPAGE, 1, None).replace("\\end{minipage}", "")
    source = _BREAK_SPACE.sub(lambda found: "\\\\", source)
    return _LONGTABLE.sub(_longtable_once, source)


def latex_markdown(path: Path) -> str:
    from docling_rs import DocumentStream

    from lore_docdb.parse.convert.office import docling_markdown

    source = decode(path.read_bytes())
    stream = DocumentStream(name=path.stem + ".tex", stream=BytesIO(tidy_latex(source).encode()))
    markdown = docling_markdown(path, stream=stream)
    markdown = _STRAY_MARK.sub("", _NUMBERED_ITEM.sub(r"\1\2. ", markdown))
    lines = markdown.split("\n")
    kept = [
        line
        for n, line in enumerate(lines)
        if not (
            _EMPTY_ROW.match(line)
            and n >= 2
            and lines[n - 1].startswith("|")
            and lines[n - 2].startswith("|")
        )
    ]
    return "\n".join(kept)
