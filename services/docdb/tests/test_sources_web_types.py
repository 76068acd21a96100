"""A web source keeps what a site links to as files docdb parses: pages at `.php` or versioned
addresses (`/guide/v1.2`) end in `.html`, Office, OpenDocument and EPUB downloads are kept by their
type, and a download served as `application/octet-stream` by its name. Before, `index.php` and
`v1.2` were stored under those names and skipped as unsupported, and a linked `.docx` was refused as
"not a document type"."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lore_common.testing.flows import KB, parse, wait_task
from lore_docdb.sources.fetch import page_path

from .test_sources import LOOPBACK, report, source, sync

DATA = Path(__file__).parent / "data"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
# path: (content type, body)
PAGES: dict[str, tuple[str, bytes]] = {
    "/index.php": (
        "text/html; charset=utf-8",
        b'<html><body><h1>Field station</h1><p>Guides for the season.</p><a href="/guide/v1.2">guide</a>'
        b'<a href="/files/birds.docx">birds</a><a href="/talk">talk</a><a href="/notes.md">notes</a>'
        b'<a href="/download?id=7">logo</a><a href="/feed">feed</a></body></html>',
    ),
    "/guide/v1.2": ("text/html", b"<html><body><p>Version 1.2 counts storks at dawn.</p></body></html>"),
    "/files/birds.docx": ("application/octet-stream", (DATA / "sample.docx").read_bytes()),
    "/talk": (PPTX, (DATA / "sample.pptx").read_bytes()),
    "/notes.md": ("text/plain", b"# Notes\n\nThe heron nests by the weir.\n"),
    "/download?id=7": ("application/octet-stream", b"\x89PNG not really"),
    "/feed": ("application/rss+xml", b"<rss/>"),
}


class Site(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/robots.txt":
            self.send_error(404)
            return
        kind, body = PAGES[self.path]
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def site() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Site)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_page_or_download_is_named_with_a_suffix_of_its_type() -> None:
    assert page_path("https://x.org/", ".html") == "x.org/index.html"
    assert page_path("https://x.org/index.php", ".html") == "x.org/index.php.html"
    assert page_path("https://x.org/guide/v1.2", ".html") == "x.org/guide/v1.2.html"
    assert page_path("https://x.org/a.htm", ".html") == "x.org/a.htm"
    assert page_path("https://x.org/get.aspx?id=3", ".pdf").startswith("x.org/get-")
    assert page_path("https://x.org/get.aspx?id=3", ".pdf").endswith(".aspx.pdf")
    assert page_path("https://x.org/r.pdf", ".html") == "x.org/r.pdf.html"  # a login page, not a PDF
    assert page_path("https://x.org/notes.md", ".txt") == "x.org/notes.md"  # Markdown served as text
    assert page_path("https://x.org/run.ipynb", ".json") == "x.org/run.ipynb"
    assert page_path("https://x.org/r.docm", ".docx") == "x.org/r.docm"


async def test_a_site_s_pages_and_downloads_are_kept_as_files_that_parse(
    docdb_factory: Any, site: str
) -> None:
    host = "127.0.0.1_" + site.rsplit(":", 1)[1]
    async with docdb_factory(**LOOPBACK) as docdb:
        await source(docdb, "web", {"kind": "web", "urls": [f"{site}/index.php"], "max_depth": 1})
        crawled = report(await sync(docdb, "web"))
        assert sorted(crawled["added"]) == sorted(
            f"{host}/{name}"
            for name in ("index.php.html", "guide/v1.2.html", "files/birds.docx", "talk.pptx", "notes.md")
        )
        failed = dict(crawled["failed"])
        assert failed[f"{host}/feed.html"] == "its type application/rss+xml is not a document type"
        assert (
            len(failed) == 2
            and "application/octet-stream" in failed[next(p for p in failed if "download" in p)]
        )

        await docdb.post(KB, json={"name": "web"})
        [task_id] = await parse(docdb, "web", ["web"], mode=1)
        task = await wait_task(docdb, task_id)
        assert task["status"] == "completed" and not task["metadata"].get("skipped_files"), task
        for query, path in [
            ("Version 1.2 counts storks at dawn", "guide/v1.2.html"),
            ("When does the swallow arrive?", "files/birds.docx"),
            ("final notes on the third slide", "talk.pptx"),
            ("Where does the heron nest?", "notes.md"),
        ]:
            reply = await docdb.post("/api/v1/docdb/retrieve", json={"kb_id": "web", "query": query})
            assert reply.json()["data"][0]["kb_name"].endswith(path), (query, reply.json()["data"][0])
