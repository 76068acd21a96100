"""Real web pages through docdb's public API: does an article's paragraph come back whole from
`/retrieve` when asked with its opening words, as a reader would search for it?

Corpus: Mozilla Readability's test pages (see bench/html_pages.py; `$LORE_BENCH_DATA/readability/
test-pages`, each a `source.html` and an `expected.html` holding only the article). A sample of the pages
(`--sample`, spread evenly over them in name order) is uploaded as one dataset (each page as
`<folder>.html`), parsed into one knowledge base by a real docdb on loopback, then per page:

- paragraphs: expected.html's paragraphs as bench/html_pages.py reads them (`p`, `li`, `pre`,
  `blockquote`, `dd`, `figcaption` of 5 words or more), at most `--per-page` spread over the page; one
  counts when a passage of its own page among `/retrieve`'s first 10 (default mode, `rerank`) for its
  first 12 words holds 90 % of its words (as bench/documents.py counts);
- text: the same paragraph within one block of the converter's text (what chunking and retrieval start
  from), so that a loss through the API reads apart from the converter's;
- headings: each `h1`-`h6` of expected.html comes back as a heading (`#` line or heading path) of a
  passage of its page, queried with its words;
- per miss, its cause: `converter` (not whole in the converter's text), `ranking` (a passage of its
  page holds it among the first 100, not the first 10), else `unreached` (no passage among the first
  100 holds it whole: cut across chunks, or its words not matched at all, as Chinese asked for with a
  space between characters was before BM25 took those spaces out).

    uv run python bench/html_pages_api.py [--sample 40] [--per-page 10] [--show-misses]

Prints a summary, then (last line) one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from documents import contains
from html_pages import PAGES, text_blocks, truth, words

from lore_common.testing.processes import start_service, wait_task
from lore_docdb.parse.convert.markup import html_markdown

DS = "/api/v1/docdb/files/raw-files/datasets"
KB = "/api/v1/docdb/files/knowledge-bases"
OPENING_WORDS = 12
NAME = "readability"


def spread(items: list[Any], n: int) -> list[Any]:
    if len(items) <= n:
        return items
    return [items[round(i * (len(items) - 1) / (n - 1))] for i in range(n)]


def is_heading(item: dict[str, Any], heading: list[str]) -> bool:
    for line in item["content"].splitlines():
        if line.lstrip().startswith("#") and words(line) == heading:
            return True
    return any(words(h) == heading for h in item.get("heading_path") or [])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=40, help="pages, spread over them in name order")
    parser.add_argument("--per-page", type=int, default=10, help="paragraphs and headings per page, at most")
    parser.add_argument("--show-misses", action="store_true")
    args = parser.parse_args()
    if not PAGES.is_dir():
        raise SystemExit(f"no pages under {PAGES}: copy readability's test/test-pages there")
    folders = spread(sorted(p for p in PAGES.iterdir() if (p / "expected.html").exists()), args.sample)

    work = Path(tempfile.mkdtemp(prefix="lore-bench-html-api-"))
    docdb, base = start_service("docdb", work, {"LORE__DOCDB__GRAPH_STORE__ENABLED": "false"})
    scores: dict[str, list[float]] = {"paragraphs": [], "text": [], "headings": []}
    causes: dict[str, int] = {"converter": 0, "unreached": 0, "ranking": 0}
    misses: list[str] = []
    try:
        with httpx.Client(base_url=base, timeout=600) as client:
            client.post(DS, json={"name": NAME}).raise_for_status()
            for folder in folders:
                page = (folder.name + ".html", (folder / "source.html").read_bytes())
                client.post(f"{DS}/{NAME}/files", files=[("files", page)]).raise_for_status()
            client.post(KB, json={"name": NAME}).raise_for_status()
            started = time.perf_counter()
            reply = client.post(f"{KB}/{NAME}/parse", json={"datasets": [NAME], "mode": 1}).json()
            task = wait_task(client, reply["data"]["tasks"][0]["task_id"], timeout=3600)
            parse_s = time.perf_counter() - started
            skipped = (task.get("metadata") or {}).get("skipped_files") or []

            def retrieve(query: str, n: int = 10) -> list[dict[str, Any]]:
                body = {"kb_id": NAME, "query": query, "max_results": n}
                data: list[dict[str, Any]] = (
                    client.post("/api/v1/docdb/retrieve", json=body).json().get("data") or []
                )
                return data

            for folder in folders:
                file = folder.name + ".html"
                gt = truth((folder / "expected.html").read_text(encoding="utf-8"))
                blocks = [words(b) for b in text_blocks(html_markdown((folder / "source.html").read_bytes()))]
                for paragraph in spread(gt["paragraphs"], args.per_page):
                    wanted = words(paragraph)
                    query = " ".join(wanted[:OPENING_WORDS])
                    in_text = any(contains(b, wanted, 0.9) for b in blocks)
                    scores["text"].append(float(in_text))
                    hits = [i for i in retrieve(query) if i["kb_name"] == file]
                    found = any(contains(words(i["content"]), wanted, 0.9) for i in hits)
                    scores["paragraphs"].append(float(found))
                    if found:
                        continue
                    if not in_text:
                        cause = "converter"
                    else:
                        wide = [i for i in retrieve(query, 100) if i["kb_name"] == file]
                        whole = any(contains(words(i["content"]), wanted, 0.9) for i in wide)
                        cause = "ranking" if whole else "unreached"
                    causes[cause] += 1
                    misses.append(f"{cause:9} {folder.name}: {paragraph[:140]!r}")
                for heading in spread(gt["headings"], args.per_page):
                    wanted = words(heading)
                    if not wanted:
                        continue
                    hits = [i for i in retrieve(heading) if i["kb_name"] == file]
                    found = any(is_heading(i, wanted) for i in hits)
                    scores["headings"].append(float(found))
                    if not found:
                        misses.append(f"heading   {folder.name}: {heading[:140]!r}")
    finally:
        docdb.stop()
        shutil.rmtree(work, ignore_errors=True)

    figures: dict[str, float] = {
        "pages": len(folders),
        "parsed": len(folders) - len(skipped) if task["status"] == "completed" else 0,
        "parse_s": round(parse_s, 1),
    }
    for kind, values in scores.items():
        figures[f"{kind}_n"] = len(values)
        figures[f"{kind}_recall"] = round(statistics.fmean(values), 3) if values else 0.0
    for cause, count in causes.items():
        figures[f"lost_{cause}"] = count
    if args.show_misses:
        for line in misses:
            print("miss " + line)
    print(
        f"readability pages {figures['parsed']}/{figures['pages']} parsed ({figures['parse_s']} s):"
        f" paragraphs through the API {figures['paragraphs_recall']} of {figures['paragraphs_n']}"
        f" (in the converter's text {figures['text_recall']}), headings {figures['headings_recall']}"
        f" of {figures['headings_n']}; lost: {causes['converter']} in the converter,"
        f" {causes['unreached']} not among the first 100, {causes['ranking']} in ranking"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
