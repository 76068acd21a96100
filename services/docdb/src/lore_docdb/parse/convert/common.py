"""Helpers shared by the converters: text decoding and Markdown tables."""

from __future__ import annotations

import re
from collections.abc import Sequence

PAGE_BREAK = "\f"  # between two pages of a paged document (PDF)
_SPACES = re.compile(r"\s+")
_CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")
_TABLE_RULE = re.compile(r"^\|(\s*:?-+:?\s*\|)+\s*$")
# A table of contents' dot leaders (`Preface . . . . . . xi`, `Authors.......xi`): four dots or more
_LEADER = re.compile(r"[ \t]*(?:\.[ \t]?){4,}[ \t]*")


def decode(data: bytes) -> str:
    """UTF-8 (BOM or not), UTF-16 with a BOM, GB18030 when it reads as Chinese, else the encoding
    charset-normalizer finds (Latin-1, Shift-JIS, Cyrillic code pages...), else lossy UTF-8."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            pass
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    try:  # Chinese text in GB18030/GBK: short samples fool charset-normalizer, so check it first
        chinese = data.decode("gb18030")
    except UnicodeDecodeError:
        chinese = ""
    wide = [c for c in chinese if ord(c) > 0x7F]
    if wide and sum(1 for c in wide if _CJK.match(c)) >= 0.8 * len(wide):
        return chinese
    from charset_normalizer import from_bytes

    matches = list(from_bytes(data[: 1 << 20]))  # the first MiB is enough to choose the encoding
    if matches:
        # code pages that read the bytes equally well tie; Windows-1252 is the likeliest of them
        top = [m for m in matches if (m.chaos, m.coherence) == (matches[0].chaos, matches[0].coherence)]
        encoding = next((m.encoding for m in top if m.encoding == "cp1252"), matches[0].encoding)
        try:
            return data.decode(encoding)
        except (UnicodeDecodeError, LookupError):
            pass
    return data.decode("utf-8", errors="replace")


def cell_text(value: object) -> str:
    """One table cell on one line: whitespace collapsed, `|` escaped, whole floats without `.0`."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return _SPACES.sub(" ", str(value)).strip().replace("|", "\\|")


def md_table(rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table, its first row the header; empty rows and columns dropped."""
    cells = [[cell_text(c) for c in row] for row in rows]
    cells = [row for row in cells if any(row)]
    if not cells:
        return ""
    width = max(len(row) for row in cells)
    cells = [row + [""] * (width - len(row)) for row in cells]
    keep = [j for j in range(width) if any(row[j] for row in cells)]
    cells = [[row[j] for j in keep] for row in cells]
    lines = ["| " + " | ".join(cells[0]) + " |", "|" + "---|" * len(keep)]
    lines += ["| " + " | ".join(row) + " |" for row in cells[1:]]
    return "\n".join(lines)


def tidy_markdown(markdown: str) -> str:
    """Markdown from another converter without table padding: `|  a   |` becomes `| a |` and a rule
    `|-----|` becomes `|---|`, so the spaces and dashes cost no tokens in a chunk."""
    lines = []
    for line in markdown.replace("\xa0", " ").splitlines():
        stripped = line.strip()
        if stripped.startswith("|") and stripped.endswith("|"):
            if _TABLE_RULE.match(stripped):
                line = "|" + "---|" * (stripped.count("|") - 1)
            else:
                line = "| " + " | ".join(c.strip() for c in stripped[1:-1].split(" | ")) + " |"
                line = _SPACES.sub(" ", line)
        lines.append(line.rstrip())
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def drop_leaders(text: str) -> str:
    """Dot leaders (`Preface . . . . . . . . xi`) become one ` … `: as dots they filled passages and
    quoted answers with punctuation, and each dot was a token."""
    return _LEADER.sub(" … ", text)
