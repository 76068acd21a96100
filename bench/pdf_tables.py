"""PDF tables without ruling lines (#40): table-row integrity of the PDF converter's text on public PDFs
with known table cells, the row kept whole on one line of the text (every cell's words on it, as
bench/documents.py counts a row in the converter's text):

- icdar: the ICDAR 2013 table competition's 67 PDFs (EU and US government reports, ruled and unruled
  tables, `*-str.xml` cells), as camelot keeps them under `tests/files/tabula/icdar2013-dataset`;
- camelot: the PDFs of camelot's "stream" tests (tables drawn without lines) with the cells its
  tests expect (`tests/data.py`);
- tabula: tabula-java's test PDFs (ruled and unruled: voting records, disclosures, statistics, RTL
  text) with the cells its tests expect: the CSV and JSON files under `resources/.../csv` and `json`,
  and the tables written into its Java tests (`String[][] X_EXPECTED`, a CSV string `expected`, or
  `assertEquals("text", table.getRows().get(r).get(c).getText())`), one expectation per PDF.

A row counts when it has 2 filled cells or more (a title spanning the table is no row). Also, per
corpus, the same share with spaces ignored (each cell's letters somewhere in one line's letters run
together: ICDAR's cells drop spaces, `UnitedKingdom`, so its misses are not all the converter's; a
looser figure, for reading the misses), and the pages per CPU-second of the converter on those PDFs,
in this process. Nothing here is tuned to single files.
Data: camelot's repository (github.com/camelot-dev/camelot, MIT licence) copied to
`$LORE_BENCH_DATA/pdftables/camelot` (its `tests/` folder at least), and tabula-java's
(github.com/tabulapdf/tabula-java, MIT licence) to `$LORE_BENCH_DATA/pdftables/tabula-java` (its
`src/test/` folder at least).

    uv run python bench/pdf_tables.py [--show-misses N] [--files eu-001,us-002]
"""

from __future__ import annotations

import argparse
import ast
import csv
import html
import io
import json
import re
import statistics
import time
import unicodedata
import xml.etree.ElementTree as ET
from pathlib import Path

from bench_data import DATA

from lore_docdb.parse.convert.pdf import pdf_pages

CAMELOT = DATA / "pdftables" / "camelot"
ICDAR = CAMELOT / "tests/files/tabula/icdar2013-dataset"
# camelot's stream tests: the file and the names in tests/data.py of the tables its tests expect there
STREAM_TESTS = {
    "health.pdf": ["data_stream"],
    "tabula/12s0324.pdf": ["data_stream_two_tables_1", "data_stream_two_tables_2"],
    "tabula/m27.pdf": ["data_stream_split_text"],
    "superscript.pdf": ["data_stream_flag_size"],
    "edge_tol.pdf": ["data_stream_edge_tol"],
    "stream_inner_outer_columns.pdf": ["data_stream_inner_outer_columns"],
    "detect_vertical_false.pdf": ["data_stream_layout_kwargs"],
    "mexican_towns.pdf": ["data_stream_columns"],
}
TABULA = DATA / "pdftables" / "tabula-java" / "src/test"
TABULA_FILES = TABULA / "resources/technology/tabula"
# expectations of tabula's that are no table of one PDF (rectangles, cells, a whole page of eu-001 read
# as stream, which ICDAR's own cells cover)
TABULA_SKIP = {"TestBasicExtractor-RECTANGLE_TEST_NATURAL_ORDER", "TestSpreadsheetExtractor-CELLS"}
TABULA_SKIP_PREFIX = "TestCommandLineApp_"
_JAVA_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_JAVA_CELL = re.compile(
    r'assertEquals\("((?:[^"\\]|\\.)*)",\s*table\.getRows\(\)\.get\((\d+)\)\.get\((\d+)\)'
)
_JAVA_PDF = re.compile(r'"src/test/resources/technology/tabula/([^"]+\.pdf)"')
_WORD = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^\W_]+")


def words(text: str) -> list[str]:
    text = html.unescape(unicodedata.normalize("NFKC", text)).replace("\\", "")
    return [w.lower() for w in _WORD.findall(text)]


def contains(line: list[str], wanted: list[str]) -> bool:
    have: dict[str, int] = {}
    for w in line:
        have[w] = have.get(w, 0) + 1
    for w in wanted:
        if not have.get(w):
            return False
        have[w] -= 1
    return True


def icdar_rows(xml: Path) -> list[list[str]]:
    """The rows (cells starting on that row, 2 filled or more) of every table of an ICDAR file."""
    rows: list[list[str]] = []
    for region in ET.parse(xml).getroot().iter("region"):
        by_row: dict[int, list[tuple[int, str]]] = {}
        for cell in region.iter("cell"):
            content = (cell.findtext("content") or "").strip()
            if words(content):
                by_row.setdefault(int(cell.get("start-row", 0)), []).append(
                    (int(cell.get("start-col", 0)), content)
                )
        for _, cells in sorted(by_row.items()):
            if len(cells) >= 2:
                rows.append([c for _, c in sorted(cells)])
    return rows


def camelot_tables() -> dict[str, list[list[list[str]]]]:
    """The tables that camelot's tests/data.py expects, by name (literal lists, some built from others)."""
    source = (CAMELOT / "tests/data.py").read_text(encoding="utf-8")
    found: dict[str, list[list[str]]] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            value = node.value
            if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name):  # `other[1:]`
                base = found.get(value.value.id)
                bounds = value.slice
                if base is not None and isinstance(bounds, ast.Slice):
                    low, high = (ast.literal_eval(b) if b else None for b in (bounds.lower, bounds.upper))
                    found[node.targets[0].id] = base[low:high]
                continue
            try:
                found[node.targets[0].id] = ast.literal_eval(value)
            except ValueError:
                continue
    return {name: [found[n] for n in names if n in found] for name, names in STREAM_TESTS.items()}


def java_string(literal: str) -> str:
    """A Java string literal's text (its escapes read)."""
    escapes = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\", "'": "'"}
    return re.sub(r"\\(.)", lambda m: escapes.get(m.group(1), m.group(1)), literal)


def tabula_tables() -> dict[str, list[list[list[str]]]]:
    """Per tabula PDF (its name under resources), the tables its tests expect: its CSV or JSON file of
    the same name, else tables written into the Java tests, the first expectation found per PDF."""
    found: dict[str, list[list[list[str]]]] = {}
    for path in sorted((TABULA_FILES / "csv").glob("*.csv")):
        if path.stem not in TABULA_SKIP and not path.stem.startswith(TABULA_SKIP_PREFIX):
            text = path.read_text(encoding="utf-8")
            found.setdefault(f"{path.stem}.pdf", []).append(list(csv.reader(io.StringIO(text, newline=""))))
    for path in sorted((TABULA_FILES / "json").glob("*.json")):
        pdf = f"{path.stem}.pdf"
        if pdf in found:
            continue
        for table in json.loads(path.read_text(encoding="utf-8")):
            rows = [[cell.get("text", "") for cell in row] for row in table.get("data", [])]
            found.setdefault(pdf, []).append(rows)
    from_java: dict[str, list[list[list[str]]]] = {}
    for source in sorted((TABULA / "java").rglob("*.java")):
        java = re.sub(r"^\s*//.*$", "", source.read_text(encoding="utf-8"), flags=re.MULTILINE)  # comments
        constants = {  # NAME_PDF = "...": the file a NAME_EXPECTED table is of
            m.group(1): m.group(2)
            for m in re.finditer(r'String (\w+)_PDF = "src/test/resources/technology/tabula/([^"]+)"', java)
        }
        for m in re.finditer(r"String\[\]\[\] (\w+)_EXPECTED = \{(.*?)\};", java, re.DOTALL):
            if m.group(1) in constants:
                rows = [
                    [java_string(c) for c in _JAVA_STRING.findall(row)]
                    for row in re.findall(r"\{([^{}]*)\}", m.group(2))
                ]
                from_java.setdefault(constants[m.group(1)], []).append(rows)
        for method in java.split("@Test")[1:]:
            named = _JAVA_PDF.search(method)
            if named is None:
                continue
            expected = re.search(r'String expected = ((?:\s*\+?\s*"(?:[^"\\]|\\.)*")+);', method)
            cells = re.findall(_JAVA_CELL, method)
            if expected:
                text = "".join(java_string(t) for t in _JAVA_STRING.findall(expected.group(1)))
                from_java.setdefault(named.group(1), []).append(
                    list(csv.reader(io.StringIO(text, newline="")))
                )
            elif cells:
                grid: dict[int, dict[int, str]] = {}
                for text, row, column in cells:
                    grid.setdefault(int(row), {})[int(column)] = java_string(text)
                rows = [[grid[r][c] for c in sorted(grid[r])] for r in sorted(grid)]
                from_java.setdefault(named.group(1), []).append(rows)
    for pdf, tables in from_java.items():
        found.setdefault(pdf, tables[:1])
    return found


def table_rows(table: list[list[str]]) -> list[list[str]]:
    rows = []
    for row in table:
        filled = list(dict.fromkeys(c.strip() for c in row if words(c)))
        if len(filled) >= 2:
            rows.append(filled)
    return rows


def cases(only: set[str]) -> list[tuple[str, Path, list[list[str]]]]:
    found: list[tuple[str, Path, list[list[str]]]] = []
    for xml in sorted(ICDAR.glob("*/*-str.xml")):
        pdf = xml.with_name(xml.name.replace("-str.xml", ".pdf"))
        name = pdf.stem
        if pdf.exists() and pdf.stat().st_size > 1000 and (not only or name in only):
            found.append(("icdar", pdf, icdar_rows(xml)))
    for file, tables in camelot_tables().items():
        pdf = CAMELOT / "tests/files" / file
        name = Path(file).stem
        if pdf.exists() and (not only or name in only):
            found.append(("camelot", pdf, [r for t in tables for r in table_rows(t)]))
    for file, tables in tabula_tables().items():
        pdf = TABULA_FILES / file
        name = Path(file).stem
        if pdf.exists() and (not only or name in only):
            found.append(("tabula", pdf, [r for t in tables for r in table_rows(t)]))
    return found


def page_count(path: Path) -> int:
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(str(path))
    try:
        return len(document)
    finally:
        document.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show-misses", type=int, default=0, help="print up to N missed rows per file")
    parser.add_argument("--files", default="", help="comma-separated file stems to run alone")
    args = parser.parse_args()
    only = {f for f in args.files.split(",") if f}
    per_set: dict[str, list[float]] = {}
    joined_set: dict[str, list[float]] = {}  # the same with spaces ignored (ICDAR's cells lack some)
    per_file: dict[str, float] = {}
    cpu, pages, table_lines = 0.0, 0, 0
    for group, pdf, rows in cases(only):
        started = time.process_time()
        text = "\n".join(pdf_pages(pdf))
        cpu += time.process_time() - started
        pages += page_count(pdf)
        lines = [words(line) for line in text.splitlines()]
        table_lines += sum(line.lstrip().startswith("|") for line in text.splitlines())
        hits = [float(any(all(contains(line, words(c)) for c in row) for line in lines)) for row in rows]
        per_set.setdefault(group, []).extend(hits)
        flat = ["".join(line) for line in lines]
        joined_set.setdefault(group, []).extend(
            float(any(all("".join(words(c)) in line for c in row) for line in flat)) for row in rows
        )
        if hits:
            per_file[pdf.stem] = round(statistics.fmean(hits), 2)
            print(f"{group:8} {pdf.stem:34} rows {len(hits):4}  kept {per_file[pdf.stem]:.2f}", flush=True)
            missed = [row for row, hit in zip(rows, hits, strict=True) if not hit]
            for row in missed[: args.show_misses]:
                print("    missed:", " | ".join(c.replace("\n", " ") for c in row)[:160])
    figures: dict[str, float] = {}
    for group, hits in per_set.items():
        figures[f"{group}_rows"] = len(hits)
        figures[f"{group}_row_integrity"] = round(statistics.fmean(hits), 3)
        figures[f"{group}_row_integrity_spaces_ignored"] = round(statistics.fmean(joined_set[group]), 3)
    every = [h for hits in per_set.values() for h in hits]
    if every:
        figures["row_integrity"] = round(statistics.fmean(every), 3)
    figures["pages"] = pages
    figures["table_lines"] = table_lines
    figures["pages_per_cpu_s"] = round(pages / max(cpu, 0.001), 1)
    print(
        "\n"
        + "  ".join(
            f"{g}: {figures[f'{g}_row_integrity']} of {figures[f'{g}_rows']:.0f} rows" for g in per_set
        )
        + f"  all: {figures.get('row_integrity')}  ({pages} pages, {figures['pages_per_cpu_s']} pages/CPU-s)"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
