"""A file's identity in a dataset is its path and its content hash (issue #41): writing a file by path
replaces the file there (never a `_1` copy beside it), the same content writes nothing, a same-size
edit is still an edit, two folders may hold the same name, and the listing shows each file's path and
sha256. On the disk backend and on object storage (moto)."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from lore_common.testing.asgi import AppClient

from .test_object_storage import keys, s3_env

DS = "/api/v1/docdb/files/raw-files/datasets"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def listing(client: AppClient, dataset: str) -> dict[str, dict[str, Any]]:
    reply = await client.get(f"{DS}/{dataset}/files")
    assert reply.status_code == 200, reply.text
    return {f["path"]: f for f in reply.json()["files"]}


async def put(client: AppClient, dataset: str, path: str, data: bytes) -> dict[str, Any]:
    reply = await client.put(f"{DS}/{dataset}/files", params={"path": path}, content=data)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["success"] is True
    return dict(body["data"])


async def check_identity(client: AppClient) -> None:
    assert (await client.post(DS, json={"name": "vault"})).status_code == 200
    first = await put(client, "vault", "vault.txt", b"code is 1234")
    assert first == {
        "name": "vault.txt",
        "path": "vault.txt",
        "size": 12,
        "sha256": sha(b"code is 1234"),
        "status": "added",
    }
    assert (await put(client, "vault", "vault.txt", b"code is 1234"))["status"] == "unchanged"
    # The same size, other bytes: an edit, not "up to date".
    assert (await put(client, "vault", "vault.txt", b"code is 9876"))["status"] == "replaced"
    files = await listing(client, "vault")
    assert list(files) == ["vault.txt"] and files["vault.txt"]["sha256"] == sha(b"code is 9876")
    # A new size: the file is replaced, no vault_1.txt beside it.
    assert (await put(client, "vault", "vault.txt", b"code is 55555"))["status"] == "replaced"
    files = await listing(client, "vault")
    assert list(files) == ["vault.txt"]
    assert files["vault.txt"]["size"] == 13 and files["vault.txt"]["sha256"] == sha(b"code is 55555")

    # One name in two folders: two files, and sending both again adds nothing.
    for _ in range(2):
        await put(client, "vault", "guide/README.md", b"# Guide")
        await put(client, "vault", "api/README.md", b"# API")
    files = await listing(client, "vault")
    assert sorted(files) == ["api/README.md", "guide/README.md", "vault.txt"]
    assert files["guide/README.md"]["name"] == "guide%2FREADME.md"
    assert files["api/README.md"]["sha256"] == sha(b"# API")

    # The flattening never collides: a literal "%2F" in a name is not a folder.
    await put(client, "vault", "a%2Fb.txt", b"percent")
    await put(client, "vault", "a/b.txt", b"folder")
    files = await listing(client, "vault")
    assert files["a%2Fb.txt"]["sha256"] == sha(b"percent") and files["a/b.txt"]["sha256"] == sha(b"folder")
    # A file written by path is deleted by its listed name.
    name = quote(files["a/b.txt"]["name"], safe="")
    assert (await client.delete(f"{DS}/vault/files/{name}")).status_code == 200
    assert "a/b.txt" not in await listing(client, "vault")

    # A file is read back by its listed name (to open a cited page): its bytes on disk, a redirect to
    # a presigned URL on object storage.
    guide = quote(files["guide/README.md"]["name"], safe="")
    reply = await client.get(f"{DS}/vault/files/{guide}")
    if reply.status_code == 307:
        async with httpx.AsyncClient() as plain:
            body = (await plain.get(reply.headers["location"])).content
    else:
        assert reply.status_code == 200, reply.text
        assert (
            reply.headers["content-disposition"].startswith("inline")
            and "README.md" in reply.headers["content-disposition"]
        )
        body = reply.content
        assert reply.headers["content-type"].startswith("text/plain")  # text, never a page
        assert reply.headers["x-content-type-options"] == "nosniff"
    assert body == b"# Guide"
    # ... or by its path in the dataset, as citations give it (sent as it is, or encoded once).
    by_path = await client.get(f"{DS}/vault/files/guide/README.md")
    assert by_path.status_code in (200, 307) and by_path.headers.get("location", "") != reply.text
    if by_path.status_code == 200:
        assert by_path.content == b"# Guide"
    await put(client, "vault", "tmp/draft.txt", b"draft")
    assert (await client.delete(f"{DS}/vault/files/tmp%2Fdraft.txt")).status_code == 200
    assert "tmp/draft.txt" not in await listing(client, "vault")
    assert (await client.get(f"{DS}/vault/files/{name}")).status_code == 404  # deleted above
    assert (await client.get(f"{DS}/vault/files/..%2F..%2Fetc%2Fpasswd")).status_code in (400, 404)


async def test_a_file_written_by_path_replaces_its_old_version_on_disk(docdb: AppClient) -> None:
    await check_identity(docdb)


async def test_a_file_written_by_path_replaces_its_old_version_in_object_storage(
    docdb_factory: Any, moto_s3: str
) -> None:
    bucket = f"lore-{uuid.uuid4().hex[:8]}"
    async with docdb_factory(**s3_env(moto_s3, bucket)) as client:
        await check_identity(client)
        # One object per path: the old version was overwritten, not kept beside.
        assert await keys(moto_s3, bucket) == [
            "vault/a%252Fb.txt",  # the literal name "a%2Fb.txt"; the folder's "a/b.txt" was deleted
            "vault/api%2FREADME.md",
            "vault/guide%2FREADME.md",
            "vault/vault.txt",
        ]
        # A simple upload records the hash too.
        await client.post(f"{DS}/vault/files", files={"files": ("plain.txt", b"plain")})
        assert (await listing(client, "vault"))["plain.txt"]["sha256"] == sha(b"plain")


async def test_the_listing_hashes_files_uploaded_by_name_and_notices_changes_behind_its_back(
    docdb: AppClient, tmp_path: Any
) -> None:
    await docdb.post(DS, json={"name": "plain"})
    await docdb.post(f"{DS}/plain/files", files={"files": ("notes.txt", b"first")})
    assert (await listing(docdb, "plain"))["notes.txt"]["sha256"] == sha(b"first")
    on_disk = tmp_path / "docdb" / "raw" / "plain" / "notes.txt"
    on_disk.write_bytes(b"other")  # the same size, edited on the server's volume
    assert (await listing(docdb, "plain"))["notes.txt"]["sha256"] == sha(b"other")


@pytest.mark.parametrize(
    "path", ["../escape.txt", "guide/../../x.txt", ".hidden/x.txt", "guide/.env", "a//b.txt"]
)
async def test_paths_that_could_leave_the_dataset_or_hide_are_400(docdb: AppClient, path: str) -> None:
    await docdb.post(DS, json={"name": "safe"})
    reply = await docdb.put(f"{DS}/safe/files", params={"path": path}, content=b"x")
    assert reply.status_code == 400, reply.text
    assert reply.json()["success"] is False
    assert await listing(docdb, "safe") == {}


async def test_writing_by_path_into_a_missing_dataset_is_404_and_over_the_limit_is_413(
    docdb_factory: Any,
) -> None:
    async with docdb_factory(LORE__DOCDB__MAX_UPLOAD_SIZE="10") as client:
        absent = await client.put(f"{DS}/absent/files", params={"path": "a.txt"}, content=b"x")
        assert absent.status_code == 404
        await client.post(DS, json={"name": "small"})
        reply = await client.put(f"{DS}/small/files", params={"path": "a.txt"}, content=b"x" * 11)
        assert reply.status_code == 413 and reply.json()["success"] is False
        assert await listing(client, "small") == {}


async def test_answers_and_parse_reports_name_files_by_their_path(docdb: AppClient) -> None:
    """Citations, passages and the files a parse skipped show `guide/intro.md` as it was written, never
    the stored `guide%2Fintro.md`, and a skip's reason does not repeat the file's name."""
    from lore_common.testing.flows import KB, parse, wait_task

    assert (await docdb.post(DS, json={"name": "manual"})).status_code == 200
    await put(docdb, "manual", "guide/intro.md", b"# Intro\n\nThe lighthouse keeper lights the lamp at dusk.")
    await put(docdb, "manual", "misc/broken.pdf", b"%PDF-1.7 not really a PDF")
    assert (await docdb.post(KB, json={"name": "manual"})).status_code == 200
    [task_id] = await parse(docdb, "manual", ["manual"])
    task = await wait_task(docdb, task_id)
    assert task["status"] == "completed", task
    [skipped] = task["metadata"]["skipped_files"]
    assert skipped["file"] == "misc/broken.pdf" and not skipped["reason"].startswith("misc")
    reply = await docdb.post(
        "/api/v1/docdb/chat", json={"kb_id": "manual", "query": "When is the lamp lit?", "user_id": "u1"}
    )
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["data"][0]["kb_name"] == "guide/intro.md"
    assert {c["source_file"] for c in body["citations"]} == {"guide/intro.md"}


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("guide.pdf", ("application/pdf", "inline")),
        ("scan.png", ("image/png", "inline")),
        ("page.html", ("text/plain; charset=utf-8", "inline")),
        ("logo.svg", ("text/plain; charset=utf-8", "inline")),
        ("notes.md", ("text/plain; charset=utf-8", "inline")),
        ("report.docx", ("application/octet-stream", "attachment")),
    ],
)
def test_a_file_opens_as_itself_only_where_it_cannot_run_scripts(name: str, shown: tuple[str, str]) -> None:
    """An uploaded page served as HTML from Lore's origin could run scripts with the console's key."""
    from lore_docdb.datasets.routes import shown_as

    assert shown_as(name) == shown
