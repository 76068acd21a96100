"""Documents as they come (#40): the docling project's test documents (github.com/docling-project/docling,
`tests/data`, MIT licence: real PDFs, Office files, HTML, EPUB, JATS and patent XML, sheets, e-mails and
scans, most with a ground-truth Markdown file written by that project) parsed by a real docdb and
read back through the public API, per format:

- files parsed: the files of a format Lore accepts that the parse did not skip;
- paragraph recall: a ground-truth paragraph (a block of 5 words or more that is not a heading, table,
  code or picture; each list item on its own) comes back whole, 90 % of its words at least, in one
  passage of its file among `/retrieve`'s results for its first 12 words;
- table-row integrity: every cell of a ground-truth table row (2 filled cells or more) is in one
  returned passage of its file, queried with the row's words;
- heading recall: a ground-truth heading comes back as a heading (`#` line or heading path) of a
  passage of its file, queried with its words;
- then the converters alone, in the extraction child the service runs (`parse/sandbox.py`): the same
  three shares in the converter's text (a paragraph within one block, a row within one line, a heading
  as a `#` line: what chunking and retrieval start from), pages per second of the PDFs (of wall time,
  and per CPU-second of the child, which a machine loaded by other work does not change), the child's
  peak resident memory per format, and the character error rate of OCR on the scans that have a known
  text (docling's `ocr_test.pdf`; the English and Chinese scans committed under
  services/docdb/tests/data), with every format or when `ocr` is named;
- and the PDF libraries compared on the same text PDFs (pages per CPU-second, peak memory).

It prints a table per format, then (last line) every figure flat, with each goal's ratio: the worst
format's share over the goal (paragraphs 0.95, headings 0.90, rows 0.90 and 0.80 for PDF), the OCR goal
(5 % error) over the worst error rate, pages/s over 20 and 1 GB over the PDF child's peak.

At most 10 paragraphs, rows and headings per file, spread evenly over it. Nothing here is tuned to this
corpus. Data: copy the repository's `tests/data` to `$LORE_BENCH_DATA/docling` (see bench_data.py).

    uv run python bench/documents.py [--formats pdf,docx] [--skip-api]
"""

from __future__ import annotations

import argparse
import asyncio
import html
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from bench_data import DATA

from lore_common.testing.processes import start_service, wait_task
from lore_docdb.parse.extract import EXTRACTORS

CORPUS = DATA / "docling"
TESTS_DATA = Path(__file__).resolve().parent.parent / "services/docdb/tests/data"
DS = "/api/v1/docdb/files/raw-files/datasets"
KB = "/api/v1/docdb/files/knowledge-bases"
PER_FILE = 10
OPENING_WORDS = 12
OCR_REFERENCE = (
    "Docling bundles PDF document conversion to JSON and Markdown in an easy self contained package"
)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^\W_]+")
# a Markdown link or picture, its text kept: nested brackets (`[[1]](#cite)`) and parentheses in the URL
_LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\((?:[^()\s]|\([^()]*\))*\)")


# ------------------------------------------------------------------ ground truth


def words(text: str) -> list[str]:
    """Lower-case words; each Chinese character a word of its own; Markdown's links, escapes and
    character references (`&amp;`) read as the text they show."""
    text = _LINK.sub(r"\1", html.unescape(unicodedata.normalize("NFKC", text))).replace("\\", "")
    return [w.lower() for w in _WORD.findall(text)]


def blocks(markdown: str) -> list[str]:
    return [b.strip() for b in re.split(r"\n\s*\n", markdown) if b.strip()]


def truth(markdown: str) -> dict[str, list[Any]]:
    """Paragraphs, table rows (lists of cells) and headings of a ground-truth Markdown file."""
    paragraphs: list[str] = []
    rows: list[list[str]] = []
    headings: list[str] = []
    in_code = False
    for block in blocks(markdown):
        if block.startswith("```") or in_code:
            in_code = block.count("```") % 2 == 1 if block.startswith("```") else "```" not in block
            continue
        lines = block.splitlines()
        if all(line.lstrip().startswith("|") for line in lines):
            for line in lines:
                if re.fullmatch(r"\s*\|[\s:|-]*\|\s*", line):
                    continue  # the rule under the header
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                filled = list(dict.fromkeys(c for c in cells if words(c)))
                if len(filled) >= 2:
                    rows.append(filled)
            continue
        if block.startswith("#"):
            headings.append(block.lstrip("#").strip())
            continue
        if block.startswith("<!--"):
            continue  # a picture's placeholder
        items = re.split(r"\n(?=\s*(?:[-*+]|\d+[.)])\s)", block)
        for item in items:
            item = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", item)
            if len(words(item)) >= 5:
                paragraphs.append(item)
    return {"paragraphs": paragraphs, "rows": rows, "headings": headings}


def spread(items: list[Any], n: int = PER_FILE) -> list[Any]:
    if len(items) <= n:
        return items
    return [items[round(i * (len(items) - 1) / (n - 1))] for i in range(n)]


def truth_file(folder: Path, source: Path) -> Path | None:
    for candidate in (
        folder / "groundtruth" / f"{source.name}.md",
        folder / "groundtruth" / f"{source.stem}.md",
    ):
        if candidate.exists():
            return candidate
    return None


def corpus(formats: list[str] | None) -> dict[str, list[Path]]:
    """Per format (the corpus's folder), the files Lore accepts."""
    found: dict[str, list[Path]] = {}
    for folder in sorted(p for p in CORPUS.iterdir() if (p / "sources").is_dir()):
        if formats and folder.name not in formats:
            continue
        files = [
            p
            for p in sorted((folder / "sources").iterdir())
            if p.is_file() and p.suffix.lower() in EXTRACTORS and not p.name.endswith((".source.txt",))
        ]
        # A copy made from a Git checkout without its large-file store holds some files empty (docling
        # keeps three of its PDFs there): those are not documents and are left out, said so.
        empty = [p.name for p in files if p.stat().st_size == 0]
        if empty:
            print(f"{folder.name}: left out {len(empty)} empty file(s) of this copy: {', '.join(empty)}")
            files = [p for p in files if p.stat().st_size]
        if folder.name in ("html_chandra", "json_dots", "ebcdic", "pdf_password"):
            continue  # inputs of other docling features (their .txt/.json are notes, not documents)
        # docling's test that a password-protected document is refused: no one can parse it
        locked = [p.name for p in files if "password_protected" in p.name]
        if locked:
            print(f"{folder.name}: left out {', '.join(locked)} (saved with a password, refused as such)")
            files = [p for p in files if p.name not in locked]
        if files:
            found[folder.name] = files
    return found


# ------------------------------------------------------------------ through the API


def contains(passage: list[str], wanted: list[str], share: float) -> bool:
    have: dict[str, int] = {}
    for w in passage:
        have[w] = have.get(w, 0) + 1
    hit = 0
    for w in wanted:
        if have.get(w, 0) > 0:
            have[w] -= 1
            hit += 1
    return hit >= share * len(wanted)


def is_heading(item: dict[str, Any], heading: list[str]) -> bool:
    for line in item["content"].splitlines():
        if line.lstrip().startswith("#") and words(line) == heading:
            return True
    return any(words(h) == heading for h in item.get("heading_path") or [])


def miss_cause(
    retrieve: Callable[..., list[dict[str, Any]]],
    query: str,
    file: str,
    found: Callable[[dict[str, Any]], bool],
) -> str:
    """Why an item did not come back among the first results: `ranking` when a passage of its file
    holds it among the first 100 (it is in a chunk, ranked below others), else `absent` (no passage
    holds it whole: cut across chunks, or never in the converter's text, which `--skip-api` measures)."""
    wide = [i for i in retrieve(query, 100) if i["kb_name"] == file]
    return "ranking" if any(found(i) for i in wide) else "absent"


def question(kind: str, item: Any) -> tuple[str, Callable[[dict[str, Any]], bool]]:
    """The query for a ground-truth item of `kind`, and the test that a returned passage holds it."""
    if kind == "rows":
        cells = [words(c) for c in item]
        return " ".join(item), lambda i: all(contains(words(i["content"]), c, 1.0) for c in cells)
    wanted = words(item)
    if kind == "paragraphs":
        return " ".join(wanted[:OPENING_WORDS]), lambda i: contains(words(i["content"]), wanted, 0.9)
    return (item if wanted else ""), lambda i: is_heading(i, wanted)


def through_api(
    client: httpx.Client, kb: str, files: list[Path], misses: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    client.post(DS, json={"name": kb}).raise_for_status()
    for path in files:
        reply = client.post(f"{DS}/{kb}/files", files=[("files", (path.name, path.read_bytes()))])
        reply.raise_for_status()
    client.post(KB, json={"name": kb}).raise_for_status()
    started = time.perf_counter()
    reply = client.post(f"{KB}/{kb}/parse", json={"datasets": [kb], "mode": 1}).json()
    task = wait_task(client, reply["data"]["tasks"][0]["task_id"], timeout=3600)
    seconds = time.perf_counter() - started
    skipped = (task.get("metadata") or {}).get("skipped_files") or []
    reasons = {s["file"]: s["reason"] for s in skipped}

    def retrieve(query: str, n: int = 10) -> list[dict[str, Any]]:
        body = {"kb_id": kb, "query": query, "max_results": n}
        data: list[dict[str, Any]] = client.post("/api/v1/docdb/retrieve", json=body).json().get("data") or []
        return data

    scores: dict[str, list[float]] = {"paragraphs": [], "rows": [], "headings": []}
    for path in files:
        gt = truth_file(path.parent.parent, path)
        if gt is None or task["status"] != "completed":
            continue
        expected = truth(gt.read_text(encoding="utf-8", errors="replace"))
        for kind, items in (
            ("paragraphs", spread(expected["paragraphs"])),
            ("rows", spread(expected["rows"])),
            ("headings", spread(expected["headings"])),
        ):
            for item in items:
                query, found = question(kind, item)
                if not query:
                    continue
                hits = [i for i in retrieve(query) if i["kb_name"] == path.name]
                hit = any(found(i) for i in hits)
                scores[kind].append(float(hit))
                if not hit and misses is not None:
                    misses.append(
                        {
                            "kb": kb,
                            "file": path.name,
                            "kind": kind,
                            "item": item if isinstance(item, str) else " | ".join(item),
                            "cause": miss_cause(retrieve, query, path.name, found),
                        }
                    )

    def mean(values: list[float]) -> float | None:
        return round(statistics.fmean(values), 3) if values else None

    return {
        "files": len(files),
        "parsed": len(files) - len(reasons) if task["status"] == "completed" else 0,
        "skipped": reasons,
        "parse_s": round(seconds, 1),
        "paragraph_recall": mean(scores["paragraphs"]),
        "table_row_integrity": mean(scores["rows"]),
        "heading_recall": mean(scores["headings"]),
        "counted": {k: len(v) for k, v in scores.items()},
    }


# ------------------------------------------------------------------ the converters alone


def vm_hwm_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a live process: what its work cost, however loaded the machine."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pdf_page_count(path: Path) -> int:
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(str(path))
    try:
        return len(document)
    finally:
        document.close()


def cer(found: str, reference: str) -> float:
    """Character error rate: edit distance over the reference's length, whitespace ignored."""
    a = "".join(unicodedata.normalize("NFKC", found).split())
    b = "".join(unicodedata.normalize("NFKC", reference).split())
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1] / max(1, len(b))


async def converters(found: dict[str, list[Path]]) -> dict[str, Any]:
    from lore_docdb.parse.extract import ExtractionError
    from lore_docdb.parse.sandbox import Sandbox

    per_format: dict[str, Any] = {}
    for name, files in found.items():
        sandbox = Sandbox(timeout=600, memory_mb=2048, max_file_mb=256)
        seconds, pages, peak = 0.0, 0, 0.0
        cpu: dict[int, float] = {}  # per child (a scan replaces it), its CPU time so far
        shares: dict[str, list[float]] = {"paragraphs": [], "rows": [], "headings": []}
        try:
            for path in files:
                started = time.perf_counter()
                try:
                    text = await sandbox.extract(path)
                except ExtractionError:
                    continue
                seconds += time.perf_counter() - started
                gt = truth_file(path.parent.parent, path)
                if gt is not None:
                    expected = truth(gt.read_text(encoding="utf-8", errors="replace"))
                    parts = [words(b) for b in blocks(text)]
                    lines = [words(line) for line in text.splitlines()]
                    heads = [words(line) for line in text.splitlines() if line.lstrip().startswith("#")]
                    for paragraph in expected["paragraphs"]:
                        wanted = words(paragraph)
                        shares["paragraphs"].append(float(any(contains(b, wanted, 0.9) for b in parts)))
                    for row in expected["rows"]:
                        cells = [words(c) for c in row]
                        shares["rows"].append(
                            float(any(all(contains(line, c, 1.0) for c in cells) for line in lines))
                        )
                    for heading in expected["headings"]:
                        if words(heading):
                            shares["headings"].append(float(words(heading) in heads))
                if path.suffix.lower() == ".pdf":
                    pages += pdf_page_count(path)
                worker = sandbox._worker
                pid = worker.process.pid if worker is not None and worker.process is not None else None
                if pid is not None:
                    peak = max(peak, vm_hwm_mb(pid))
                    cpu[pid] = cpu_seconds(pid)
        finally:
            await sandbox.close()
        entry: dict[str, Any] = {"seconds": round(seconds, 2), "child_peak_mb": round(peak)}
        entry["child_cpu_s"] = round(sum(cpu.values()), 2)  # its start and imports included
        for key, values in shares.items():  # in the converter's text, before chunking and retrieval
            entry[f"text_{key}"] = round(statistics.fmean(values), 3) if values else None
        if pages:
            entry["pages"] = pages
            entry["pages_per_s"] = round(pages / seconds, 1)
            entry["pages_per_child_cpu_s"] = round(pages / max(0.01, entry["child_cpu_s"]), 1)
        per_format[name] = entry
    return per_format


async def ocr_figures() -> dict[str, Any]:
    sys.path.insert(0, str(TESTS_DATA))
    import make_scans

    def plain(blocks_: list[tuple[str, str]]) -> str:
        return " ".join(text for _, text in blocks_)

    from lore_docdb.parse.sandbox import Sandbox

    cases = [
        ("en", TESTS_DATA / "scan-en.png", plain(make_scans.ENGLISH)),
        ("zh", TESTS_DATA / "scan-zh.png", plain(make_scans.CHINESE)),
        ("en_bilevel_pdf", TESTS_DATA / "scan.pdf", plain(make_scans.SCANNED_PDF)),
    ]
    for variant in ("", "_rotated_90", "_rotated_180", "_rotated_270"):
        docling_scan = CORPUS / "ocr" / "sources" / f"ocr_test{variant}.pdf"
        if docling_scan.exists():
            cases.append((f"docling_ocr_test{variant}", docling_scan, OCR_REFERENCE))
    sandbox = Sandbox(timeout=600, memory_mb=2048, max_file_mb=256)
    figures: dict[str, Any] = {}
    try:
        for name, path, reference in cases:
            started = time.perf_counter()
            text = await sandbox.extract(path)
            elapsed = time.perf_counter() - started
            text = re.sub(r"^#+ ", "", text, flags=re.MULTILINE)
            figures[name] = {"cer": round(cer(text, reference), 4), "seconds": round(elapsed, 1)}
        worker = sandbox._worker
        pid = worker.process.pid if worker is not None and worker.process is not None else None
        if pid is not None:
            figures["child_peak_mb"] = round(vm_hwm_mb(pid))
    finally:
        await sandbox.close()
    return figures


LIBRARY_RUN = """
import resource, sys, time
paths = sys.argv[2:]
lib = sys.argv[1]
pages = 0
started = time.process_time()
for path in paths:
    if lib == "pypdfium2":
        import pypdfium2 as pdfium
        doc = pdfium.PdfDocument(path)
        for page in doc:
            tp = page.get_textpage(); tp.get_text_range(); tp.close(); page.close(); pages += 1
        doc.close()
    elif lib == "pypdf":
        from pypdf import PdfReader
        for page in PdfReader(path).pages:
            page.extract_text(); pages += 1
    elif lib == "pdfplumber":
        import pdfplumber
        with pdfplumber.open(path) as doc:
            for page in doc.pages:
                page.extract_text(); page.close(); pages += 1
    elif lib == "pdfplumber-tables":
        import pdfplumber
        with pdfplumber.open(path) as doc:
            for page in doc.pages:
                page.find_tables(); page.close(); pages += 1
    elif lib == "lore":
        from pathlib import Path
        from lore_docdb.parse.convert.pdf import pdf_pages
        pages += len(pdf_pages(Path(path)))
cpu = time.process_time() - started
print(pages, cpu, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def libraries(pdfs: list[Path]) -> dict[str, Any]:
    """Each library reads every text PDF in a process of its own: pages per CPU-second, peak memory."""
    figures: dict[str, Any] = {}
    for lib in ("pypdfium2", "lore", "pypdf", "pdfplumber", "pdfplumber-tables"):
        out = subprocess.run(
            [sys.executable, "-c", LIBRARY_RUN, lib, *map(str, pdfs)],
            capture_output=True,
            text=True,
            check=False,
        )
        try:
            pages, cpu, rss = out.stdout.split()[-3:]
        except ValueError:
            figures[lib] = {"error": out.stderr[-300:]}
            continue
        figures[lib] = {
            "pages": int(pages),
            "pages_per_cpu_s": round(int(pages) / float(cpu), 1),
            "peak_mb": round(float(rss)),
        }
    return figures


# ------------------------------------------------------------------ main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--formats", default="", help="comma-separated corpus folders (default: all)")
    parser.add_argument("--skip-api", action="store_true", help="only the converters, OCR and libraries")
    parser.add_argument(
        "--api-only", action="store_true", help="only through the API (no converters, OCR or libraries)"
    )
    parser.add_argument(
        "--misses",
        action="store_true",
        help="list every item lost through the API with its cause (ranking: its passage is among the first"
        " 100 but not the first 10; absent: no passage holds it whole)",
    )
    args = parser.parse_args()
    if not CORPUS.exists():
        raise SystemExit(f"no corpus at {CORPUS}: copy docling's tests/data there (see the docstring)")
    found = corpus([f for f in args.formats.split(",") if f] or None)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout
    result: dict[str, Any] = {"commit": commit.strip(), "corpus": str(CORPUS)}

    if not args.skip_api:
        work = Path(tempfile.mkdtemp(prefix="lore-bench-documents-"))
        docdb, base = start_service("docdb", work, {"LORE__DOCDB__GRAPH_STORE__ENABLED": "false"})
        per_format: dict[str, Any] = {}
        misses: list[dict[str, Any]] | None = [] if args.misses else None
        try:
            with httpx.Client(base_url=base, timeout=600) as client:
                for name, files in found.items():
                    per_format[name] = through_api(client, name.replace("_", "-"), files, misses)
                    row = per_format[name]
                    print(
                        f"{name:10} parsed {row['parsed']}/{row['files']}"
                        f"  paragraphs {row['paragraph_recall']}"
                        f"  rows {row['table_row_integrity']}  headings {row['heading_recall']}"
                        f"  ({row['parse_s']} s)",
                        flush=True,
                    )
                    for file, reason in row["skipped"].items():
                        print(f"           skipped {file}: {reason[:160]}", flush=True)
        finally:
            docdb.stop()
            shutil.rmtree(work, ignore_errors=True)
        result["api"] = per_format
        for miss in misses or []:
            print(f"miss {miss['cause']:9} {miss['kind']:10} {miss['file']}: {miss['item'][:150]!r}")

    if args.api_only:
        found = {}
    result["converters"] = asyncio.run(converters(found))
    for name, row in result["converters"].items():
        print(f"{name:10} converter {row}", flush=True)
    if not args.formats or "ocr" in found:  # the scans' error rates: with every format, or ocr named
        result["ocr"] = asyncio.run(ocr_figures())
        print(f"ocr {result['ocr']}", flush=True)
    text_pdfs = [p for p in found.get("pdf", []) if p.suffix == ".pdf"]
    if text_pdfs:
        result["libraries"] = libraries(text_pdfs)
        for name, row in result["libraries"].items():
            print(f"library {name:18} {row}", flush=True)
    print("details " + json.dumps(result, ensure_ascii=False))
    figures = flat(result)
    summary(result, figures)
    print(json.dumps(figures))


GOALS = {"paragraph_recall": 0.95, "heading_recall": 0.90, "table_row_integrity": 0.90}
PDF_ROWS_GOAL = 0.80
OCR_CER_GOAL = 0.05
PDF_PAGES_PER_S_GOAL = 20.0
CHILD_MB_GOAL = 1024.0


def flat(result: dict[str, Any]) -> dict[str, float]:
    """Every figure as `name: number`, and each goal's ratio (figure / goal; >= 1 meets it, for the
    error rate and memory goal / figure)."""
    figures: dict[str, float] = {}
    api = result.get("api", {})
    for name, row in api.items():
        for key in ("files", "parsed", "parse_s", *GOALS):
            if row.get(key) is not None:
                figures[f"{name}_{key}"] = row[key]
    for name, row in result.get("converters", {}).items():
        for key, value in row.items():
            if isinstance(value, int | float):
                figures[f"{name}_converter_{key}"] = value
    for case, row in result.get("ocr", {}).items():
        if isinstance(row, dict):
            figures[f"ocr_{case}_cer"] = row["cer"]
            figures[f"ocr_{case}_seconds"] = row["seconds"]
        else:
            figures[f"ocr_{case}"] = row
    for lib, row in result.get("libraries", {}).items():
        for key in ("pages_per_cpu_s", "peak_mb"):
            if key in row:
                figures[f"library_{lib}_{key}"] = row[key]
    if api:
        files = sum(row["files"] for row in api.values())
        figures["files_parsed_ratio"] = round(sum(row["parsed"] for row in api.values()) / max(1, files), 3)
        for key, goal in GOALS.items():
            scored = {n: row[key] for n, row in api.items() if row.get(key) is not None}
            if not scored:
                continue
            figures[f"{key}_mean"] = round(statistics.fmean(scored.values()), 3)
            figures[f"{key}_min"] = min(scored.values())
            pdf_rows = key == "table_row_integrity"
            goals = {n: PDF_ROWS_GOAL if pdf_rows and n == "pdf" else goal for n in scored}
            figures[f"{key}_goal_ratio"] = round(min(scored[n] / goals[n] for n in scored), 3)
            figures[f"{key}_formats_meeting_goal"] = sum(scored[n] >= goals[n] for n in scored)
            figures[f"{key}_formats_scored"] = len(scored)
    cers = [row["cer"] for row in result.get("ocr", {}).values() if isinstance(row, dict)]
    if cers:
        figures["ocr_cer_max"] = max(cers)
        figures["ocr_cer_goal_ratio"] = round(OCR_CER_GOAL / max(max(cers), 1e-4), 3)
    pdf = result.get("converters", {}).get("pdf", {})
    if pdf.get("pages_per_s"):
        figures["pdf_pages_per_s_goal_ratio"] = round(pdf["pages_per_s"] / PDF_PAGES_PER_S_GOAL, 3)
        figures["pdf_child_mb_goal_ratio"] = round(CHILD_MB_GOAL / max(1, pdf["child_peak_mb"]), 3)
    return figures


def summary(result: dict[str, Any], figures: dict[str, float]) -> None:
    """Per format: through the API, then in the converter's own text."""

    def cell(value: Any) -> str:
        return "   -" if value is None else f"{value:4.2f}"

    print("\nformat        parsed   paragraphs rows headings | text: paragraphs rows headings | child MB")
    converters = result.get("converters", {})
    for name in sorted(set(result.get("api", {})) | set(converters)):
        api, conv = result.get("api", {}).get(name, {}), converters.get(name, {})
        parsed = f"{api['parsed']}/{api['files']}" if api else "-"
        print(
            f"{name:12} {parsed:>7}   {cell(api.get('paragraph_recall'))}       "
            f"{cell(api.get('table_row_integrity'))} {cell(api.get('heading_recall'))}     |       "
            f"{cell(conv.get('text_paragraphs'))}       {cell(conv.get('text_rows'))} "
            f"{cell(conv.get('text_headings'))}     | {conv.get('child_peak_mb', '-')}"
        )
    goals = ", ".join(
        f"{key} {figures[f'{key}_formats_meeting_goal']}/{figures[f'{key}_formats_scored']} formats"
        for key in GOALS
        if f"{key}_formats_scored" in figures
    )
    if goals:
        print(f"goals met: {goals}; files parsed {figures['files_parsed_ratio']:.1%}")


if __name__ == "__main__":
    main()
