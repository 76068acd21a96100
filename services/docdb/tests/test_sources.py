"""Datasets with a source (issue #41): a server folder, an S3 prefix (moto), a local git repository with
commits that add, edit, rename and delete, and a static site on loopback with a sitemap and robots.txt.
Each sync is a task whose report is exact; a failing source leaves the dataset as it was; secrets are
redacted; URLs on loopback are refused unless `network.allow_ranges` opens them; a scheduled sync runs
once per interval; a sync that changed something parses the dataset again in the KBs holding it."""

from __future__ import annotations

import asyncio
import functools
import http.server
import subprocess
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from lore_common.testing.asgi import AppClient
from lore_core.clock import utcnow

from .test_object_storage import replica, s3, s3_env

DS = "/api/v1/docdb/files/raw-files/datasets"
SOURCES = "/api/v1/docdb/files/raw-files/sources"
KB = "/api/v1/docdb/files/knowledge-bases"
LOOPBACK = {"LORE__NETWORK__ALLOW_RANGES": "['127.0.0.0/8']"}


def roots(*folders: Path) -> dict[str, str]:
    return {"LORE__DOCDB__SOURCES__FOLDER_ROOTS": str([str(f) for f in folders])}


async def wait_sync(client: AppClient, dataset: str, task_id: str) -> dict[str, Any]:
    for _ in range(300):
        task = (await client.get(f"{DS}/{dataset}/syncs/{task_id}")).json()["data"]
        if task["status"] in ("completed", "failed"):
            return dict(task)
        await asyncio.sleep(0.05)
    raise AssertionError(f"sync {task_id} did not end: {task}")


async def sync(client: AppClient, dataset: str) -> dict[str, Any]:
    started = await client.post(f"{DS}/{dataset}/sync")
    assert started.status_code == 200, started.text
    return await wait_sync(client, dataset, started.json()["data"]["task_id"])


async def source(client: AppClient, dataset: str, spec: dict[str, Any], status: int = 200) -> Any:
    if (await client.get(f"{DS}")).json()["data"].count(dataset) == 0:
        await client.post(DS, json={"name": dataset})
    reply = await client.put(f"{DS}/{dataset}/source", json=spec)
    assert reply.status_code == status, reply.text
    return reply.json()


async def files(client: AppClient, dataset: str) -> dict[str, str]:
    return {f["path"]: f["sha256"] for f in (await client.get(f"{DS}/{dataset}/files")).json()["files"]}


def report(task: dict[str, Any]) -> dict[str, Any]:
    assert task["status"] == "completed", task
    got = dict(task["report"])
    got["failed"] = [(f["path"], f["reason"]) for f in got["failed"]]
    return got


# ------------------------------------------------------------ a folder on the server


async def test_a_folder_source_syncs_exactly_and_a_failing_source_changes_nothing(
    docdb_factory: Any, tmp_path: Path
) -> None:
    shared = tmp_path / "shared"
    folder = shared / "handbook"
    (folder / "guide").mkdir(parents=True)
    (folder / "intro.md").write_text("Welcome.")
    (folder / "guide" / "setup.md").write_text("Install it.")
    (folder / ".git").mkdir()
    (folder / ".git" / "config").write_text("hidden")
    async with docdb_factory(**roots(shared)) as client:
        refused = await source(client, "book", {"kind": "folder", "path": str(tmp_path)}, status=400)
        assert "folder_roots" in refused["message"]
        await source(client, "book", {"kind": "folder", "path": str(folder)})
        first = report(await sync(client, "book"))
        assert first == {
            "added": ["guide/setup.md", "intro.md"],
            "changed": [],
            "deleted": [],
            "unchanged": 0,
            "failed": [],
        }
        (folder / "intro.md").write_text("Welcome!")  # the same size
        (folder / "guide" / "setup.md").unlink()
        (folder / "faq.md").write_text("Ask us.")
        second = report(await sync(client, "book"))
        assert second == {
            "added": ["faq.md"],
            "changed": ["intro.md"],
            "deleted": ["guide/setup.md"],
            "unchanged": 0,
            "failed": [],
        }
        assert report(await sync(client, "book"))["unchanged"] == 2
        before = await files(client, "book")
        assert sorted(before) == ["faq.md", "intro.md"]

        info = (await client.get(f"{DS}/book/source")).json()
        assert info["source"]["kind"] == "folder" and info["last_sync"]["report"]["unchanged"] == 2
        assert [s["dataset"] for s in (await client.get(SOURCES)).json()["data"]] == ["book"]

        (folder / "faq.md").rename(shared / "faq.md")
        folder.rename(shared / "moved")  # the source is gone
        failed = await sync(client, "book")
        assert failed["status"] == "failed" and "does not exist" in failed["error"]
        assert await files(client, "book") == before  # untouched
        history = (await client.get(f"{DS}/book/syncs")).json()["data"]
        assert [t["status"] for t in history][:2] == ["failed", "completed"]

        assert (await client.delete(f"{DS}/book/source")).status_code == 200
        assert (await client.post(f"{DS}/book/sync")).status_code == 404
        # A deleted dataset takes its source with it: a new dataset of that name starts without one.
        await source(client, "book", {"kind": "folder", "path": str(shared)})
        assert (await client.delete(f"{DS}/book")).status_code == 200
        await client.post(DS, json={"name": "book"})
        assert (await client.get(f"{DS}/book/source")).status_code == 404


# ------------------------------------------------------------ S3


async def test_an_s3_prefix_syncs_with_secrets_redacted_and_loopback_refused_unless_allowed(
    docdb_factory: Any, moto_s3: str
) -> None:
    bucket = f"src-{uuid.uuid4().hex[:8]}"
    async with s3(moto_s3) as client:
        await client.create_bucket(Bucket=bucket)
        await client.put_object(Bucket=bucket, Key="docs/a.md", Body=b"alpha")
        await client.put_object(Bucket=bucket, Key="docs/sub/b.md", Body=b"beta")
        await client.put_object(Bucket=bucket, Key="other/c.md", Body=b"not in the prefix")
    spec = {
        "kind": "s3",
        "bucket": bucket,
        "prefix": "docs/",
        "endpoint_url": moto_s3,
        "access_key": "testing",
        "secret_key": "very-secret",
    }
    async with docdb_factory() as docdb:
        refused = await source(docdb, "bucket", spec, status=400)
        assert "127.0.0.1" in refused["message"] and "allow_ranges" in refused["message"]
    async with docdb_factory(**LOOPBACK) as docdb:
        shown = await source(docdb, "bucket", spec)
        assert shown["source"]["secret_key"] == "***" and shown["source"]["access_key"] == "***"
        listed = (await docdb.get(SOURCES)).text
        assert "very-secret" not in listed
        assert "very-secret" not in (await docdb.get(f"{DS}/bucket/source")).text
        assert report(await sync(docdb, "bucket"))["added"] == ["a.md", "sub/b.md"]
        async with s3(moto_s3) as client:
            await client.put_object(Bucket=bucket, Key="docs/a.md", Body=b"ALPHA")
            await client.delete_object(Bucket=bucket, Key="docs/sub/b.md")
        second = report(await sync(docdb, "bucket"))
        assert (second["changed"], second["deleted"], second["added"]) == (["a.md"], ["sub/b.md"], [])

        # Sent back as shown, the secret keeps its stored value; a bucket that is not there fails the sync.
        kept = await source(docdb, "bucket", {**spec, "secret_key": "***", "bucket": "absent-bucket"})
        assert kept["source"]["bucket"] == "absent-bucket"
        failed = await sync(docdb, "bucket")
        assert failed["status"] == "failed" and "NoSuchBucket" in failed["error"]
        assert list(await files(docdb, "bucket")) == ["a.md"]


# ------------------------------------------------------------ git


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        check=True,
        capture_output=True,
    )


async def test_a_git_branch_syncs_commits_that_add_edit_rename_and_delete(
    docdb_factory: Any, tmp_path: Path
) -> None:
    repo = tmp_path / "repos" / "handbook"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.md").write_text("first")
    (repo / "b.md").write_text("to be renamed")
    (repo / "gone.md").write_text("to be deleted")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "one")
    git(repo, "checkout", "-q", "-b", "docs")
    (repo / "draft.md").write_text("only on docs")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "draft")
    git(repo, "checkout", "-q", "main")
    async with docdb_factory(**roots(tmp_path / "repos")) as client:
        # A file:// URL is not a folder "outside folder_roots": the reply says to give the path.
        as_url = await source(client, "repo", {"kind": "git", "url": f"file://{repo}"}, status=400)
        assert "file:// URLs are not supported" in as_url["message"] and str(repo) in as_url["message"]
        assert "folder_roots" not in as_url["message"]
        await source(client, "repo", {"kind": "git", "url": str(repo), "branch": "main"})
        assert report(await sync(client, "repo"))["added"] == ["a.md", "b.md", "gone.md"]
        (repo / "a.md").write_text("second")
        (repo / "notes").mkdir()
        git(repo, "mv", "b.md", "notes/b.md")
        git(repo, "rm", "-q", "gone.md")
        (repo / "new.md").write_text("added")
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", "two")
        second = report(await sync(client, "repo"))
        assert second == {
            "added": ["new.md", "notes/b.md"],
            "changed": ["a.md"],
            "deleted": ["b.md", "gone.md"],
            "unchanged": 0,
            "failed": [],
        }
        await source(client, "repo", {"kind": "git", "url": str(repo), "branch": "docs"})
        docs = report(await sync(client, "repo"))
        assert "draft.md" in docs["added"]
        await source(client, "repo", {"kind": "git", "url": str(repo), "branch": "no-such-branch"})
        failed = await sync(client, "repo")
        assert failed["status"] == "failed" and "no-such-branch" in failed["error"]
        assert "draft.md" in await files(client, "repo")


# ------------------------------------------------------------ web pages


@pytest.fixture
def site(tmp_path: Path) -> Iterator[str]:
    root = tmp_path / "site"
    (root / "private").mkdir(parents=True)
    (root / "index.html").write_text(
        '<html><body><h1>Home</h1><a href="/one.html">one</a> <a href="two.html#top">two</a>'
        '<a href="/private/secret.html">secret</a><a href="https://elsewhere.example/">out</a></body></html>'
    )
    (root / "one.html").write_text('<html><body><p>Page one.</p><a href="/deep.html">deep</a></body></html>')
    (root / "two.html").write_text("<html><body><p>Page two.</p></body></html>")
    (root / "deep.html").write_text("<html><body><p>Two links away.</p></body></html>")
    (root / "private" / "secret.html").write_text("<html><body>Secret.</body></html>")
    (root / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
    handler = functools.partial(Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    (root / "sitemap.xml").write_text(
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{base}/two.html</loc></url><url><loc>{base}/deep.html</loc></url>"
        f"<url><loc>{base}/private/secret.html</loc></url></urlset>"
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield base
    finally:
        server.shutdown()
        server.server_close()


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


async def test_web_pages_follow_links_to_a_depth_respect_robots_and_read_a_sitemap(
    docdb_factory: Any, site: str
) -> None:
    host = "127.0.0.1_" + site.rsplit(":", 1)[1]
    async with docdb_factory() as docdb:
        refused = await source(docdb, "web", {"kind": "web", "urls": [f"{site}/"]}, status=400)
        assert "loopback" in refused["message"]
    async with docdb_factory(**LOOPBACK) as docdb:
        await source(docdb, "web", {"kind": "web", "urls": [f"{site}/"], "max_depth": 1})
        crawled = report(await sync(docdb, "web"))
        assert crawled["added"] == [f"{host}/index.html", f"{host}/one.html", f"{host}/two.html"]
        assert crawled["failed"] == [(f"{host}/private/secret.html", "robots.txt disallows it")]
        await source(docdb, "web", {"kind": "web", "urls": [f"{site}/"], "max_depth": 2, "max_pages": 3})
        capped = report(await sync(docdb, "web"))  # three pages fetched, the fourth never asked for
        assert capped["unchanged"] == 3 and capped["added"] == [] and capped["deleted"] == []
        await source(docdb, "web", {"kind": "web", "sitemap": f"{site}/sitemap.xml"})
        mapped = report(await sync(docdb, "web"))
        assert mapped["added"] == [f"{host}/deep.html"]
        assert mapped["deleted"] == [f"{host}/index.html", f"{host}/one.html"]
        assert mapped["unchanged"] == 1 and len(mapped["failed"]) == 1

        await source(docdb, "web", {"kind": "web", "urls": ["http://127.0.0.1:9/"]})  # nothing listens
        failed = await sync(docdb, "web")
        assert failed["status"] == "failed" and "no page could be fetched" in failed["error"]
        assert sorted(await files(docdb, "web")) == [f"{host}/deep.html", f"{host}/two.html"]


# ------------------------------------------------------------ schedule and parse


async def test_a_scheduled_sync_runs_once_per_interval_and_parses_the_kbs_again(
    docdb_factory: Any, tmp_path: Path
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "vault.txt").write_text("The vault code is 1234.")
    env = {**roots(tmp_path), "LORE__DOCDB__SOURCES__SCHEDULE_CHECK": "0.1"}
    async with docdb_factory(**env) as docdb:
        await source(docdb, "notes", {"kind": "folder", "path": str(folder)})
        report(await sync(docdb, "notes"))
        await docdb.post(KB, json={"name": "notes"})
        parse = await docdb.post(f"{KB}/notes/parse", json={"datasets": ["notes"], "mode": 1})
        task_id = parse.json()["data"]["tasks"][0]["task_id"]
        await wait_parse(docdb, task_id)

        (folder / "vault.txt").write_text("The vault code is 55555.")
        await source(docdb, "notes", {"kind": "folder", "path": str(folder), "interval": 1})
        scheduled = await first_scheduled(docdb, "notes")
        assert report(scheduled)["changed"] == ["vault.txt"] and len(scheduled["parse_tasks"]) == 1
        await wait_parse(docdb, scheduled["parse_tasks"][0])
        found = await docdb.post("/api/v1/docdb/retrieve", json={"query": "vault code", "kb_id": "notes"})
        texts = " ".join(p["content"] for p in found.json()["data"])
        assert "55555" in texts and "1234" not in texts

        # Replicas checking at once: the due time moves once, so one of them runs the sync. They
        # check two hours ahead, where the source is due, and docdb's own check (every 0.1 s, at
        # the real time) cannot claim it first.
        store = docdb.app.state.sources.store
        await store.put("notes", (await store.get("notes")).spec, 3600, due=utcnow() + timedelta(hours=1))
        ahead = utcnow() + timedelta(hours=2)
        claims = await asyncio.gather(*(store.claim_due(ahead) for _ in range(4)))
        assert sorted(len(c) for c in claims) == [0, 0, 0, 1]


async def test_a_scheduled_source_syncs_at_once_not_one_interval_later(
    docdb_factory: Any, tmp_path: Path
) -> None:
    """`interval: 3600` used to mean an hour of nothing after the source was set."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "vault.txt").write_text("The vault code is 1234.")
    env = {**roots(tmp_path), "LORE__DOCDB__SOURCES__SCHEDULE_CHECK": "0.1"}
    async with docdb_factory(**env) as docdb:
        info = await source(docdb, "notes", {"kind": "folder", "path": str(folder), "interval": 3600})
        assert stamp(info["next_sync_at"]) <= utcnow()
        assert report(await first_scheduled(docdb, "notes"))["added"] == ["vault.txt"]
        later = (await docdb.get(f"{DS}/notes/source")).json()["next_sync_at"]
        assert stamp(later) > utcnow() + timedelta(minutes=59)  # then once an hour


def stamp(value: str) -> datetime:
    moment = datetime.fromisoformat(value)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


async def test_a_sync_that_would_delete_most_files_is_refused_unless_the_source_allows_it(
    docdb_factory: Any, tmp_path: Path
) -> None:
    """An emptied folder (an unmounted share) read as "every file deleted": the scheduled sync deleted
    the dataset, then the KBs' parses failed and they kept answering from the deleted files. Now a
    sync deleting more than `max_delete` (half) of the files, or all of a dataset of fewer than 4,
    fails and changes nothing; allowed, it deletes them and the KB's parse takes their chunks back."""
    folder = tmp_path / "share"
    folder.mkdir()
    rooms = "abcde"
    for room in rooms:
        (folder / f"{room}.md").write_text(f"The vault code of room {room} is {room * 4}.")
    async with docdb_factory(**roots(tmp_path)) as docdb:
        await source(docdb, "hb", {"kind": "folder", "path": str(folder)})
        assert len(report(await sync(docdb, "hb"))["added"]) == 5
        await docdb.post(KB, json={"name": "hb"})
        parse = await docdb.post(f"{KB}/hb/parse", json={"datasets": ["hb"], "mode": 1})
        await wait_parse(docdb, parse.json()["data"]["tasks"][0]["task_id"])

        for room in "cde":
            (folder / f"{room}.md").unlink()
        refused = await sync(docdb, "hb")
        assert refused["status"] == "failed" and refused["parse_tasks"] == []
        error = refused["error"]
        assert "would delete 3 of the dataset's 5 files (c.md, d.md, e.md)" in error
        assert "more than 50%" in error and "max_delete 1" in error
        assert len(await files(docdb, "hb")) == 5  # nothing deleted

        (folder / "c.md").write_text("The vault code of room c is cccc.")
        half = await sync(docdb, "hb")
        assert report(half)["deleted"] == ["d.md", "e.md"]  # 2 of 5 is within the half
        await wait_parse(docdb, half["parse_tasks"][0])

        for room in "abc":  # the folder is empty now: a dataset of 3 files may not lose all of them
            (folder / f"{room}.md").unlink()
        empty = await sync(docdb, "hb")
        assert empty["status"] == "failed" and "would delete 3 of the dataset's 3 files" in empty["error"]
        assert "all of them" in empty["error"] and sorted(await files(docdb, "hb")) == [
            "a.md",
            "b.md",
            "c.md",
        ]

        await source(docdb, "hb", {"kind": "folder", "path": str(folder), "max_delete": 1})
        allowed = await sync(docdb, "hb")
        assert report(allowed)["deleted"] == ["a.md", "b.md", "c.md"] and await files(docdb, "hb") == {}
        await wait_parse(docdb, allowed["parse_tasks"][0])  # it used to fail: "no parsable file"
        found = await docdb.post("/api/v1/docdb/retrieve", json={"query": "vault code room", "kb_id": "hb"})
        assert found.json()["data"] == []


async def wait_parse(client: AppClient, task_id: str) -> None:
    for _ in range(600):
        task = (await client.get(f"/api/v1/docdb/files/processing/tasks/{task_id}")).json()
        if task["status"] in ("completed", "failed", "cancelled"):
            assert task["status"] == "completed", task
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"parse {task_id} did not end")


async def first_scheduled(client: AppClient, dataset: str) -> dict[str, Any]:
    for _ in range(200):
        for task in (await client.get(f"{DS}/{dataset}/syncs")).json()["data"]:
            if task["trigger"] == "schedule" and task["status"] in ("completed", "failed"):
                return dict(task)
        await asyncio.sleep(0.05)
    raise AssertionError("no scheduled sync ran")


@pytest.mark.postgres
async def test_two_replicas_on_one_postgresql_run_each_interval_s_sync_once(
    tmp_path: Path, moto_s3: str, postgres_url: str
) -> None:
    """Two docdb replicas sharing PostgreSQL and a bucket: the scheduled syncs they start never outnumber
    the intervals that have passed (one replica runs each interval's sync, not each of them)."""
    import time

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "vault.txt").write_text("The vault code is 1234.")
    env = {
        **roots(tmp_path),
        **s3_env(moto_s3, f"lore-{uuid.uuid4().hex[:8]}"),
        "LORE__DOCDB__DATABASE__URL": postgres_url,
        "LORE__DOCDB__SOURCES__SCHEDULE_CHECK": "0.05",
    }
    async with replica(tmp_path, "r1", **env) as one, replica(tmp_path, "r2", **env) as two:
        set_at = time.monotonic()  # before: the first sync is due at once, the next 1 s after the set
        await source(one, "notes", {"kind": "folder", "path": str(folder), "interval": 1})
        while True:
            listing = await two.get(f"{DS}/notes/syncs")
            assert listing.status_code == 200, listing.text
            scheduled = [t for t in listing.json()["data"] if t["trigger"] == "schedule"]
            elapsed = time.monotonic() - set_at
            assert len(scheduled) <= int(elapsed) + 1, (len(scheduled), elapsed)
            if len(scheduled) >= 3:
                break
            assert elapsed < 60, "the scheduled syncs did not run"
            await asyncio.sleep(0.05)
