from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from lore_docdb.parse.models import Task

DS = "/api/v1/docdb/files/raw-files/datasets"
Client = Any


async def create(client: Client, name: str = "reports") -> None:
    response = await client.post(DS, json={"name": name})
    assert response.status_code == 200, response.text


async def test_create_list_and_conflict(docdb: Client) -> None:
    assert (await docdb.get(DS)).json()["data"] == []
    await create(docdb, "reports")
    await create(docdb, "a-b_9")
    body = (await docdb.get(DS)).json()
    assert body["success"] is True and body["data"] == ["a-b_9", "reports"]
    again = await docdb.post(DS, json={"name": "reports"})
    assert again.status_code == 409
    assert again.json()["success"] is False and "already exists" in again.json()["message"]


@pytest.mark.parametrize("name", ["", "has space", "dot.name", "../up", "x" * 65, "名字"])
async def test_invalid_dataset_names_are_400(docdb: Client, name: str) -> None:
    response = await docdb.post(DS, json={"name": name})
    assert response.status_code == 400
    assert response.json()["success"] is False


async def test_missing_dataset_is_404_everywhere(docdb: Client) -> None:
    assert (await docdb.get(f"{DS}/nope/files")).status_code == 404
    assert (await docdb.delete(f"{DS}/nope")).status_code == 404
    assert (await docdb.delete(f"{DS}/nope/files/a.txt")).status_code == 404
    r = await docdb.post(f"{DS}/nope/files", files={"files": ("a.txt", b"x")})
    assert r.status_code == 404 and "'nope' does not exist" in r.json()["message"]


async def test_upload_several_files_and_list_them(docdb: Client) -> None:
    await create(docdb)
    r = await docdb.post(
        f"{DS}/reports/files",
        files=[("files", ("a.txt", b"alpha")), ("files", ("b.md", b"# beta!"))],
    )
    assert r.status_code == 200
    assert r.json()["files"] == [{"filename": "a.txt", "size": 5}, {"filename": "b.md", "size": 7}]
    listing = (await docdb.get(f"{DS}/reports/files")).json()
    assert listing["dataset"] == "reports"
    assert [(f["name"], f["size"]) for f in listing["files"]] == [("a.txt", 5), ("b.md", 7)]
    stamp = listing["files"][0]["modified_time"]
    assert "T" in stamp and "+" not in stamp and not stamp.endswith("Z")


async def test_taken_names_count_up(docdb: Client) -> None:
    await create(docdb)
    names = []
    for body in (b"1", b"22", b"333"):
        r = await docdb.post(f"{DS}/reports/files", files={"files": ("a.txt", body)})
        names.append(r.json()["files"][0]["filename"])
    assert names == ["a.txt", "a_1.txt", "a_2.txt"]
    r = await docdb.post(
        f"{DS}/reports/files", files=[("files", ("README", b"x")), ("files", ("README", b"y"))]
    )
    assert [f["filename"] for f in r.json()["files"]] == ["README", "README_1"]


@pytest.mark.parametrize(
    "filename",
    ["../escape.txt", "..", "sub/inner.txt", "back\\slash.txt", ".hidden", "a..b/../c", " padded.txt"],
)
async def test_filenames_that_could_leave_the_dataset_are_rejected(
    docdb: Client, filename: str, tmp_path: Path
) -> None:
    await create(docdb)
    r = await docdb.post(f"{DS}/reports/files", files={"files": (filename, b"x")})
    assert r.status_code == 400, (filename, r.text)
    assert "invalid filename" in r.json()["message"]
    assert not (tmp_path / "docdb" / "raw" / "escape.txt").exists()
    assert (await docdb.get(f"{DS}/reports/files")).json()["files"] == []


async def test_unicode_names_are_normalised(docdb: Client) -> None:
    await create(docdb)
    decomposed = "cafe\u0301.txt"
    r = await docdb.post(f"{DS}/reports/files", files={"files": (decomposed, b"x")})
    assert r.json()["files"][0]["filename"] == "caf\u00e9.txt"


async def test_hidden_uploads_area_is_never_listed(docdb: Client) -> None:
    await create(docdb)
    init = await docdb.post(
        f"{DS}/reports/upload/init", json={"filename": "big.bin", "total_chunks": 2, "total_size": 2}
    )
    assert init.status_code == 200, init.text
    await docdb.post(f"{DS}/reports/upload/{init.json()['upload_id']}/chunk?chunk_index=0", content=b"a")
    assert (await docdb.get(f"{DS}/reports/files")).json()["files"] == []


async def test_delete_file_then_404(docdb: Client, tmp_path: Path) -> None:
    await create(docdb)
    await docdb.post(f"{DS}/reports/files", files={"files": ("a.txt", b"x")})
    assert (await docdb.delete(f"{DS}/reports/files/a.txt")).status_code == 200
    assert not (tmp_path / "docdb" / "raw" / "reports" / "a.txt").exists()
    r = await docdb.delete(f"{DS}/reports/files/a.txt")
    assert r.status_code == 404 and "a.txt" in r.json()["message"]


async def test_delete_dataset_removes_files_and_is_409_while_a_parse_is_active(
    docdb: Client, tmp_path: Path
) -> None:
    await create(docdb)
    await docdb.post(f"{DS}/reports/files", files={"files": ("a.txt", b"x")})
    tasks = docdb.app.state.parse.store
    await tasks.add(Task(task_id="t-1", status="running", kb_name="kb1", dataset="reports"))
    busy = await docdb.delete(f"{DS}/reports")
    assert busy.status_code == 409
    assert busy.json()["detail"] == {"active_tasks": ["t-1"]}
    await tasks.add(Task(task_id="t-2", status="completed", kb_name="kb1", dataset="other"))
    assert await tasks.transition("t-1", "failed", when=["running"]) is not None
    assert (await docdb.delete(f"{DS}/reports")).status_code == 200
    assert not (tmp_path / "docdb" / "raw" / "reports").exists()
    assert (await docdb.get(DS)).json()["data"] == []


async def test_simple_upload_size_limit_is_413(docdb_factory: object) -> None:
    """The 413 says the limit in MiB and the chunked upload, which has none (a trial's user read only
    that the body was too large)."""
    limit = 1024 * 1024
    async with docdb_factory(LORE__DOCDB__MAX_UPLOAD_SIZE=str(limit)) as client:  # type: ignore[operator]
        await create(client)
        big = os.urandom(limit + 1)
        r = await client.post(f"{DS}/reports/files", files={"files": ("big.bin", big)})
        assert r.status_code == 413
        assert "larger than 1 MiB" in r.json()["message"] and "upload/init" in r.json()["message"]
        put = await client.put(f"{DS}/reports/files", params={"path": "big.bin"}, content=big)
        assert put.status_code == 413 and "larger than 1 MiB" in put.json()["message"]
        assert (await client.get(f"{DS}/reports/files")).json()["files"] == []


async def test_no_files_field_is_400(docdb: Client) -> None:
    await create(docdb)
    r = await docdb.post(f"{DS}/reports/files", files={"other": ("a.txt", b"x")})
    assert r.status_code == 400 and "files" in r.json()["message"]


@pytest.mark.parametrize("name", ["nul\x00byte.txt", "bell\x07.txt", "rtl\u202etxt.exe", "x" * 256, "   "])
def test_safe_filename_rejects_control_characters_and_overlong_names(name: str) -> None:
    from lore_core.errors import BadRequest
    from lore_core.naming import safe_filename

    with pytest.raises(BadRequest, match="invalid filename"):
        safe_filename(name)


def test_start_up_on_a_shared_volume_spares_another_replicas_upload_in_progress(tmp_path: Path) -> None:
    from lore_docdb.datasets.disk import RawFiles

    raw = RawFiles(tmp_path / "raw")
    raw.create("shared")
    crashed = raw.dataset_dir("shared") / ".tmp-crashed"
    in_progress = raw.dataset_dir("shared") / ".tmp-in-progress"
    for temp in (crashed, in_progress):
        temp.write_bytes(b"partial")
    os.utime(crashed, (1_000_000_000, 1_000_000_000))  # untouched for years: a crash's leftover
    assert list(raw.sweep_temp_files(3600)) == [crashed]
    assert in_progress.exists()  # another replica may still be writing it
    assert list(raw.sweep_temp_files()) == [in_progress]  # alone (SQLite): everything goes
