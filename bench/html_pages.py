"""Real web pages through the HTML converter: does a page's main text come back whole, and how much of
what comes back is the page's furniture (menus, footers, share buttons, comment sections)?

Corpus: Mozilla Readability's test pages (github.com/mozilla/readability, `test/test-pages`, Apache-2.0):
130 real pages, each a `source.html` and an `expected.html` that holds only the article (Readability's
own output, written by hand where it errs). Copy that folder to `$LORE_BENCH_DATA/readability/test-pages`.
Also, where present, markitdown's three web pages (github.com/microsoft/markitdown, MIT,
`packages/markitdown/tests/test_files/test_{wikipedia,blog,serp}.html` in `$LORE_BENCH_DATA/markitdown`)
with the strings its tests say must and must not appear (checked by words, links as their text).

For each page, from expected.html:

- paragraphs: each `p`, `li`, `pre`, `blockquote`, `dd`, `figcaption` of 5 words or more, its own text
  (a list item without its nested list, a quotation without its paragraphs), counts when 90 % of its
  words come back in one block of the converter's text (blocks apart by a blank line, a fenced code
  block one block), as bench/documents.py counts a paragraph in the converter's text; **tight** also
  asks that block (a list's item, a table's row) to hold at most twice its words plus 50 (a page read
  as one block is no paragraph);
- headings: each `h1`-`h6` (and the page's title from expected-metadata.json, when source.html shows it
  as a heading) counts when a `#` line of the text has the same words (a wiki's `History[edit]` as
  Readability writes it);
- rows: each table row with 2 filled cells or more (and no table inside) counts when all its cells'
  words are on one line;
- boilerplate: the share of the text's words that expected.html (and the title) does not have, counted
  as bags of words, over all pages and as each page's mean;
- kept: the share of expected.html's words that come back (bag of words), so that dropping furniture
  never silently drops the article.

    uv run python bench/html_pages.py [--show-misses N] [--pages 001,wikipedia-2]

Ends with one JSON line holding every figure.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import statistics
import time
import unicodedata
from typing import Any

import lxml.html
from bench_data import DATA

from lore_docdb.parse.convert.markup import html_markdown

PAGES = DATA / "readability" / "test-pages"
MARKITDOWN = DATA / "markitdown"
# markitdown's tests (packages/markitdown/tests/_test_vectors.py): strings that must and must not appear
MARKITDOWN_VECTORS: dict[str, tuple[list[str], list[str]]] = {
    "test_blog.html": (
        [
            "Large language models (LLMs) are powerful tools that can generate natural language texts for"
            " various applications, such as chatbots, summarization, translation, and more. GPT-4 is"
            " currently the state of the art LLM in the world. Is model selection irrelevant? What about"
            " inference parameters?",
            "an example where high cost can easily prevent a generic complex",
        ],
        [],
    ),
    "test_wikipedia.html": (
        [
            "Microsoft entered the operating system (OS) business in 1980 with its own version of Unix",
            "Microsoft was founded by Bill Gates",
        ],
        ["You are encouraged to create an account and log in", "154 languages", "move to sidebar"],
    ),
    "test_serp.html": (
        [
            "Microsoft Corporation is an American multinational corporation and technology company"
            " headquartered in Redmond",
            "1995–2007: Foray into the Web, Windows 95, Windows XP, and Xbox",
        ],
        ["https://www.bing.com/ck/a?!&&p=", "data:image/svg+xml,%3Csvg%20width%3D"],
    ),
}
PARAGRAPH_TAGS = {"p", "li", "pre", "blockquote", "dd", "figcaption"}
HEADING_TAGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
MIN_WORDS = 5
_WORD = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^\W_]+")


def words(text: str) -> list[str]:
    text = html.unescape(unicodedata.normalize("NFKC", text)).replace("\\", "")
    return [w.lower() for w in _WORD.findall(text)]


def bag(items: list[str]) -> dict[str, int]:
    have: dict[str, int] = {}
    for w in items:
        have[w] = have.get(w, 0) + 1
    return have


def hits(have: dict[str, int], wanted: list[str]) -> int:
    left = dict(have)
    hit = 0
    for w in wanted:
        if left.get(w, 0) > 0:
            left[w] -= 1
            hit += 1
    return hit


def tag(element: Any) -> str:
    return element.tag.lower() if isinstance(element.tag, str) else ""


# elements that set their text apart from the text around them in a browser
SPACED = {"br", "div", "section", "article", "figure", "header", "footer", "aside", "nav", "dt", "hr", "img"}


def own_text(element: Any, apart: set[str]) -> str:
    """The element's text without its descendants that are paragraphs of their own (inline elements
    run into their neighbours' text as a browser shows them: `<span>Credit</span>Kevin`)."""
    parts = [element.text or ""]
    for child in element:
        if tag(child) not in apart and tag(child) != "table":
            space = " " if tag(child) in SPACED else ""
            parts.append(space + own_text(child, apart) + space)
        parts.append(child.tail or "")
    return "".join(parts)


def truth(expected: str) -> dict[str, Any]:
    root = lxml.html.fromstring(expected)
    for dropped in root.xpath("//script|//style"):
        dropped.drop_tree()
    apart = PARAGRAPH_TAGS | HEADING_TAGS | {"tr", "ul", "ol", "dl"}
    paragraphs, headings, rows = [], [], []
    for element in root.iter():
        name = tag(element)
        if name in PARAGRAPH_TAGS:
            text = " ".join(own_text(element, set() if name == "pre" else apart).split())
            if len(words(text)) >= MIN_WORDS:
                paragraphs.append(text)
        elif name in HEADING_TAGS:
            if words(element.text_content()):
                headings.append(" ".join(element.text_content().split()))
        elif name == "tr" and not any(tag(e) == "table" for e in element.iterdescendants()):
            cells = [c.text_content() for c in element if tag(c) in ("td", "th")]
            filled = list(dict.fromkeys(" ".join(c.split()) for c in cells if words(c)))
            if len(filled) >= 2:
                rows.append(filled)
    return {
        "paragraphs": paragraphs,
        "headings": headings,
        "rows": rows,
        "words": words(root.text_content()),
    }


def text_blocks(markdown: str) -> list[str]:
    """Blocks apart by a blank line, a fenced code block kept as one."""
    out: list[str] = []
    fence = False
    for block in re.split(r"\n\s*\n", markdown):
        if fence:
            out[-1] += "\n\n" + block
        else:
            out.append(block)
        if block.count("```") % 2 == 1:
            fence = not fence
    return [b.strip() for b in out if b.strip()]


_ITEM = re.compile(r"^\s*(?:[-*+] |\d+[.)] |\|)")


def tight_units(markdown: str) -> list[str]:
    """The text's blocks, a list or a table cut into its items and rows (one unit each)."""
    out: list[str] = []
    for block in text_blocks(markdown):
        lines = block.splitlines()
        if all(_ITEM.match(line) for line in lines) or sum(1 for line in lines if _ITEM.match(line)) > 1:
            out.extend(lines)
        else:
            out.append(block)
    return out


def measure(name: str, source: bytes, expected: str, title: str, show: int) -> dict[str, Any]:
    started = time.process_time()
    text = html_markdown(source)
    cpu = time.process_time() - started
    gt = truth(expected)
    blocks = [words(b) for b in text_blocks(text)]
    bags = [bag(b) for b in blocks]
    units = [bag(words(u)) for u in tight_units(text)]
    lines = [bag(words(line)) for line in text.splitlines()]
    heads = [words(line) for line in text.splitlines() if line.lstrip().startswith("#")]
    found: dict[str, Any] = {"paragraphs": [], "tight": [], "headings": [], "rows": []}
    missed: dict[str, list[str]] = {"paragraphs": [], "tight": [], "headings": [], "rows": []}
    for paragraph in gt["paragraphs"]:
        wanted = words(paragraph)
        whole = [
            len(b) for b, have in zip(blocks, bags, strict=True) if hits(have, wanted) >= 0.9 * len(wanted)
        ]
        found["paragraphs"].append(float(bool(whole)))
        found["tight"].append(
            float(
                any(
                    hits(u, wanted) >= 0.9 * len(wanted) and sum(u.values()) <= 2 * len(wanted) + 50
                    for u in units
                )
            )
        )
        if not whole:
            missed["paragraphs"].append(paragraph)
        elif not found["tight"][-1]:
            missed["tight"].append(f"({min(whole)} words) {paragraph}")
    expected_headings = list(gt["headings"])
    source_heads = {
        tuple(words(h.text_content())) for h in lxml.html.fromstring(source).iter("h1", "h2", "h3")
    }
    if title and tuple(words(title)) in source_heads and words(title) not in map(words, expected_headings):
        expected_headings.append(title)
    for heading in expected_headings:
        hit = words(heading) in heads
        found["headings"].append(float(hit))
        if not hit:
            missed["headings"].append(heading)
    for row in gt["rows"]:
        cells = [words(c) for c in row]
        hit = any(all(hits(line, c) == len(c) for c in cells) for line in lines)
        found["rows"].append(float(hit))
        if not hit:
            missed["rows"].append(" | ".join(row))
    out_words = [w for b in blocks for w in b]
    truth_bag = bag(gt["words"] + words(title))
    extra = len(out_words) - hits(truth_bag, out_words)
    kept = hits(bag(out_words), gt["words"])
    result = {
        "name": name,
        "found": found,
        "out_words": len(out_words),
        "extra_words": extra,
        "truth_words": len(gt["words"]),
        "kept_words": kept,
        "cpu_s": cpu,
        "bytes": len(source),
    }
    mean = {k: (statistics.fmean(v) if v else None) for k, v in found.items()}
    line = "  ".join(f"{k} {v:.2f}/{len(found[k])}" for k, v in mean.items() if v is not None)
    boiler = extra / max(1, len(out_words))
    print(f"{name:42} {line}  boilerplate {boiler:.2f}  kept {kept / max(1, len(gt['words'])):.2f}")
    for kind, items in missed.items():
        for item in items[:show]:
            print(f"    {kind}: {' '.join(item.split())[:200]}")
    return result


def markitdown_checks(show: int) -> dict[str, float]:
    must, must_not = [], []
    for name, (wanted, unwanted) in MARKITDOWN_VECTORS.items():
        path = MARKITDOWN / name
        if not path.exists():
            continue
        text = html_markdown(path.read_bytes())
        flat = " ".join(words(text))
        raw = " ".join(text.split())
        for phrase in wanted:
            ok = " ".join(words(phrase)) in flat
            must.append(float(ok))
            if not ok and show:
                print(f"    markitdown {name} lacks: {phrase[:100]}")
        for phrase in unwanted:
            ok = (" ".join(words(phrase)) not in flat) if words(phrase)[0] != "https" else phrase not in raw
            must_not.append(float(ok))
            if not ok and show:
                print(f"    markitdown {name} keeps: {phrase[:100]}")
        print(f"{'markitdown/' + name:42} {len(text.split())} words")
    if not must:
        return {}
    return {
        "markitdown_must_include": round(statistics.fmean(must), 3),
        "markitdown_must_not_include": round(statistics.fmean(must_not), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show-misses", type=int, default=0)
    parser.add_argument("--pages", default="", help="comma-separated page folders (default: all)")
    args = parser.parse_args()
    if not PAGES.is_dir():
        raise SystemExit(f"no pages under {PAGES}: copy readability's test/test-pages there")
    chosen = set(filter(None, args.pages.split(",")))
    results = []
    for folder in sorted(p for p in PAGES.iterdir() if (p / "expected.html").exists()):
        if chosen and folder.name not in chosen:
            continue
        meta_path = folder / "expected-metadata.json"
        meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.exists() else {}
        results.append(
            measure(
                folder.name,
                (folder / "source.html").read_bytes(),
                (folder / "expected.html").read_text(encoding="utf-8"),
                meta.get("title") or "",
                args.show_misses,
            )
        )
    figures: dict[str, float] = {"pages": len(results)}
    for kind in ("paragraphs", "tight", "headings", "rows"):
        every = [h for r in results for h in r["found"][kind]]
        figures[f"{kind}_n"] = len(every)
        figures[f"{kind}_recall" if kind != "rows" else "row_integrity"] = (
            round(statistics.fmean(every), 3) if every else 0.0
        )
    per_page = [statistics.fmean(r["found"]["paragraphs"]) for r in results if r["found"]["paragraphs"]]
    figures["paragraphs_page_mean"] = round(statistics.fmean(per_page), 3) if per_page else 0.0
    figures["pages_under_90"] = sum(1 for v in per_page if v < 0.9)
    out_words = sum(r["out_words"] for r in results)
    figures["boilerplate_share"] = round(sum(r["extra_words"] for r in results) / max(1, out_words), 3)
    figures["boilerplate_page_mean"] = round(
        statistics.fmean(r["extra_words"] / max(1, r["out_words"]) for r in results), 3
    )
    figures["kept_share"] = round(
        sum(r["kept_words"] for r in results) / max(1, sum(r["truth_words"] for r in results)), 3
    )
    figures["pages_kept_under_95"] = sum(1 for r in results if r["kept_words"] < 0.95 * r["truth_words"])
    figures["mb_per_cpu_s"] = round(
        sum(r["bytes"] for r in results) / 1e6 / max(0.001, sum(r["cpu_s"] for r in results)), 2
    )
    if not chosen:
        figures.update(markitdown_checks(args.show_misses))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
