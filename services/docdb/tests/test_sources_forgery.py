"""No request forgery through a dataset's source (issue #46): every URL a sync fetches for a user, a
web page, a git remote and an S3 endpoint, is refused when it names loopback, a private address or the
cloud's metadata address, also when a loopback site the operator allowed redirects there."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from lore_common.testing.asgi import AppClient

DS = "/api/v1/docdb/files/raw-files/datasets"
METADATA = "http://169.254.169.254/latest/meta-data/iam/security-credentials/"


class _Site(BaseHTTPRequestHandler):
    """`/` is a page linking to `/page`; `/page` and `/hop` redirect to the metadata address."""

    def do_GET(self) -> None:
        if self.path in ("/page", "/hop", "/hop.md"):
            self.send_response(302)
            self.send_header("Location", METADATA)
            self.end_headers()
            return
        body = b'<html><body><a href="/page">page</a> loopback-only-secret-91c2</body></html>'
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


async def _sync(client: AppClient, dataset: str, spec: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Set the source and sync it: (the PUT's status, the sync task or the refusal)."""
    await client.post(DS, json={"name": dataset})
    reply = await client.put(f"{DS}/{dataset}/source", json=spec)
    if reply.status_code != 200:
        return reply.status_code, reply.json()
    started = await client.post(f"{DS}/{dataset}/sync")
    if started.status_code != 200:
        return started.status_code, started.json()
    task_id = started.json()["data"]["task_id"]
    for _ in range(400):
        task = (await client.get(f"{DS}/{dataset}/syncs/{task_id}")).json()["data"]
        if task["status"] in ("completed", "failed"):
            return 200, dict(task)
        await asyncio.sleep(0.05)
    raise AssertionError(f"sync {task_id} did not end")


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ({"kind": "web", "urls": ["http://127.0.0.1:9/"]}, "loopback"),
        ({"kind": "web", "urls": ["http://169.254.169.254/latest/meta-data/"]}, "metadata"),
        ({"kind": "web", "urls": ["http://[::ffff:169.254.169.254]/"]}, "metadata"),
        ({"kind": "web", "sitemap": "http://10.0.0.1/sitemap.xml"}, "private"),
        ({"kind": "git", "url": "http://169.254.169.254/repo.git"}, "metadata"),
        ({"kind": "git", "url": "https://[fd00:ec2::254]/repo.git"}, "metadata"),
        ({"kind": "s3", "bucket": "bucket", "endpoint_url": "http://169.254.169.254"}, "metadata"),
        ({"kind": "s3", "bucket": "bucket", "endpoint_url": "http://192.168.1.10:9000"}, "private"),
    ],
    ids=lambda value: value["kind"] if isinstance(value, dict) else value,
)
async def test_a_source_naming_an_internal_address_is_refused_and_fetches_nothing(
    docdb_factory: Any, spec: dict[str, Any], reason: str
) -> None:
    async with docdb_factory() as docdb:
        status, refused = await _sync(docdb, "forged", spec)
        files = (await docdb.get(f"{DS}/forged/files")).json()["files"]
    assert status == 400, refused
    assert reason in refused["message"] and "network.allow_ranges" in refused["message"], refused
    assert files == []


async def test_an_allowed_loopback_site_redirecting_to_the_metadata_address_is_not_followed(
    docdb_factory: Any, site: str
) -> None:
    async with docdb_factory(LORE__NETWORK__ALLOW_RANGES="['127.0.0.0/8']") as docdb:
        status, task = await _sync(
            docdb, "hops", {"kind": "web", "urls": [f"{site}/", f"{site}/hop"], "max_depth": 1}
        )
        files = (await docdb.get(f"{DS}/hops/files")).json()["files"]
    assert status == 200, task
    names = [f["name"] for f in files]
    # The allowed page is fetched; the pages that redirect to 169.254.169.254 are reported, not fetched.
    assert len(names) == 1, names
    failed = task["report"]["failed"]
    assert failed and all("169.254.169.254" in f["reason"] for f in failed), task
