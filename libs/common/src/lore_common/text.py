"""Text helpers shared by retrieval, BM25, graph building and the offline model: sentences, content
words, stop words, and Chinese segmentation by jieba (its dictionary loads once, on first use).

Sentences come from `segments`, a rule-based segmenter written for the documents Lore is given
(Markdown, man pages, specs, PDF text): a block is split into lines first, so a heading, a list item, a
table row or a code line is a unit of its own and never glued to the prose around it; the lines of a
paragraph are joined (a line break inside a paragraph ends no sentence, and a word hyphenated across
lines is mended); then a paragraph is cut after `.`, `!` or `?` followed by a space and a capital,
a digit or a quote, unless the word before the stop is an abbreviation or an initial, and after
`。！？` in Chinese (closing quotes stay with their sentence). docs/providers.md compares it with pysbd
and blingfire on the same cases.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any, Literal

WORD = re.compile(r"[A-Za-z][A-Za-z0-9'\-]*|[0-9]+(?:\.[0-9]+)?")
CJK = re.compile(r"[\u4e00-\u9fff]")

STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have how i if in into is it
    its me my no not of on or our she he so than that the their them then there these they this to too was we
    were what when where which who whom why will with would you your yes about also after all any because
    before being between both during each few more most other over same some such only own very just
    should now up down out off again further once here let's i'm i've it's don't please tell know like
    want think really much many get got make made use used""".split()
)

# Words that end in a period without ending a sentence (compared lower-cased, without the period).
ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof sr jr st mt ft vs etc e.g i.e cf al fig figs eq eqs no nos vol vols p pp ch sec
    inc ltd co corp dept univ approx est jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu
    fri sat sun gen gov rep sen rev col lt capt sgt u.s u.k u.n a.m p.m ph.d b.sc m.sc op cit ibid viz
    resp ca""".split()
)

SegmentKind = Literal["sentence", "heading", "item", "code", "table"]


@dataclass(frozen=True, slots=True)
class Segment:
    """One unit of a text: a prose sentence, a heading, a list item, a code line or a table row."""

    kind: SegmentKind
    text: str


_jieba_lock = threading.Lock()
_jieba_ready = False


def jieba() -> Any:
    """The jieba module, its dictionary loaded (0.65 s, once per process) and its logging quiet."""
    global _jieba_ready
    import jieba as module
    import jieba.posseg  # part-of-speech tagging, for Chinese entities

    with _jieba_lock:
        if not _jieba_ready:
            module.setLogLevel(60)
            module.initialize()
            _jieba_ready = True
    return module


def has_cjk(text: str) -> bool:
    return bool(CJK.search(text))


_FENCE = re.compile(r"^\s*(```|~~~)")
_ATX_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_ITEM = re.compile(r"^\s*(?:[-*+•·▪]|\(?\d{1,3}[.)]|\(?[a-zA-Z][.)]|\[\d{1,3}\])\s+(.*)$")
_TABLE = re.compile(r"^\s*\|.*\|\s*$")
_RULE = re.compile(r"^\s*(?:[-*_=]\s*){3,}$")
_INDENTED = re.compile(r"^(?:\t| {4,})\S")
_CODE_LIKE = re.compile(r"[{};]\s*$|^\s*(?:\$|>>>|#include|def |class |import |return\b)|\w\(.*\)\s*;")
_HYPHEN_BREAK = re.compile(r"(\w)-\s*\n\s*([a-z])")
# A stop, then closing quotes or brackets, then space, then something that can open a sentence.
_STOP = re.compile(r"""([.!?…]+)(["'”’)\]]*)(\s+)(?=["'“‘(\[]?(?:[A-Z0-9À-Ý\u4e00-\u9fff]|[a-z]+[A-Z0-9]))""")
_CJK_STOP = re.compile(r"([。！？!?]+)([”’」』）)]*)")
_LAST_WORD = re.compile(r"([A-Za-z][A-Za-z.]*)$")


# A document's own reference marks (`[4]`, `[38, 22]`, `[12-14]`, Wikipedia's `[39]`): beside an
# answer's passage numbers they read as its citations, and `leg.[41] In` hides a sentence's end.
_REFERENCE_MARK = re.compile(r"[ \t]?\[\d{1,4}(?:\s*[,–-]\s*\d{1,4})*\]")


def unmarked(text: str) -> str:
    """The text without its own reference marks."""
    return _REFERENCE_MARK.sub("", text) if "[" in text else text


def repair_hyphenation(text: str) -> str:
    """Mend words a typesetter broke across lines ("Docu-\\nment" becomes "Document")."""
    return _HYPHEN_BREAK.sub(r"\1\2", text)


def _line_kind(line: str, in_prose: bool) -> SegmentKind | None:
    if _TABLE.match(line):
        return "table"
    if _ITEM.match(line):
        return "item"
    if _INDENTED.match(line) and not in_prose:
        return "code"
    if _CODE_LIKE.search(line) and not re.search(r"[.!?。]\s*$", line.strip()):
        return "code"
    return None


def _split_prose(paragraph: str) -> list[str]:
    """A paragraph cut into sentences at stops that are not abbreviations, initials or decimals."""
    pieces: list[str] = []
    start = 0
    for match in _STOP.finditer(paragraph):
        stop = match.group(1)
        if stop == ".":
            before = _LAST_WORD.search(paragraph[start : match.start()])
            word = before.group(1).lower().rstrip(".") if before else ""
            if word in ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
                continue
        end = match.end(2)
        pieces.append(paragraph[start:end])
        start = match.end()
    pieces.append(paragraph[start:])
    out: list[str] = []
    for piece in pieces:
        out.extend(_split_chinese(piece) if has_cjk(piece) else [piece])
    return [p.strip() for p in out if p.strip()]


def _split_chinese(text: str) -> list[str]:
    parts: list[str] = []
    start = 0
    for match in _CJK_STOP.finditer(text):
        parts.append(text[start : match.end()])
        start = match.end()
    parts.append(text[start:])
    return parts


def _join_lines(lines: list[str]) -> str:
    joined = ""
    for line in lines:
        line = line.strip()
        if not joined:
            joined = line
        elif joined.endswith("-") and line[:1].islower() and joined[-2:-1].isalpha():
            joined = joined[:-1] + line  # a word hyphenated across lines
        elif has_cjk(joined[-1:]) and has_cjk(line[:1]):
            joined += line  # Chinese has no spaces between words
        else:
            joined += " " + line
    return joined


def segments(text: str) -> list[Segment]:
    """The text's units in order: sentences of prose, headings, list items, code lines, table rows."""
    found: list[Segment] = []
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            found.extend(Segment("sentence", s) for s in _split_prose(_join_lines(paragraph)))
            paragraph.clear()

    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    in_fence = False
    item: list[str] = []

    def flush_item() -> None:
        if item:
            found.append(Segment("item", _join_lines(item)))
            item.clear()

    for index, line in enumerate(lines):
        if _FENCE.match(line):
            flush()
            flush_item()
            in_fence = not in_fence
            continue
        if in_fence:
            if line.strip():
                found.append(Segment("code", line.rstrip()))
            continue
        stripped = line.strip()
        if not stripped or (_RULE.match(line) and not paragraph):
            flush()
            flush_item()
            continue
        heading = _ATX_HEADING.match(line)
        following = lines[index + 1] if index + 1 < len(lines) else ""
        if heading:
            flush()
            flush_item()
            found.append(Segment("heading", heading.group(1)))
            continue
        if _SETEXT.match(following) and len(paragraph) == 0 and not item and not _ITEM.match(line):
            found.append(Segment("heading", stripped))
            continue
        if _SETEXT.match(line) and not paragraph:
            continue
        kind = _line_kind(line, bool(paragraph) or bool(item))
        if kind == "item":
            flush()
            flush_item()
            matched = _ITEM.match(line)
            item.append(matched.group(1) if matched else stripped)
            continue
        if kind in ("table", "code"):
            flush()
            flush_item()
            found.append(Segment(kind, stripped))
            continue
        if item and (line[:1].isspace() or not paragraph):
            item.append(stripped)  # a list item's continuation line
            continue
        paragraph.append(line)
    flush()
    flush_item()
    return found


def sentences(text: str) -> list[str]:
    """The text's prose sentences and list items, whole; headings, code and table rows left out."""
    out: list[str] = []
    for segment in segments(text):
        if segment.kind == "sentence":
            out.append(segment.text)
        elif segment.kind == "item":
            out.extend(_split_prose(segment.text))
    return out


_stemmers = threading.local()


def stem(words: list[str]) -> list[str]:
    """English words by their Snowball stems (`bundles`, `bundled` → `bundl`); other words as given.
    A PyStemmer object must not be shared between threads (indexes are built in worker threads)."""
    stemmer = getattr(_stemmers, "stemmer", None)
    if stemmer is None:
        import Stemmer

        stemmer = _stemmers.stemmer = Stemmer.Stemmer("english")
    stems: list[str] = stemmer.stemWords(words)
    return stems


def keywords(text: str) -> list[str]:
    """Content words, lower-cased: English words minus stop words, Chinese words by jieba."""
    words = [w.lower() for w in WORD.findall(text) if w.lower() not in STOPWORDS and len(w) > 1]
    if has_cjk(text):
        words.extend(w for w in jieba().lcut(text) if CJK.search(w) and len(w) > 1)
    return words
