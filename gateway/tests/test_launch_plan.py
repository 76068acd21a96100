"""`lore-up --replicas N`: which replicas get a data dir of their own."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lore_core.settings import load_settings
from lore_gateway.launch import plan


@pytest.fixture(autouse=True)
def _keep_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LORE__GEN__DOCDB_URL", "http://127.0.0.1:8101")  # plan() fills it when unset


def data_dirs(tmp_path: Path, **env: str) -> dict[str, str | None]:
    settings = load_settings(
        tmp_path / "config", environ={"LORE__DOCDB__SERVER__DATA_DIR": "data/docdb", **env}
    )
    return {
        child.name: child.env.get(f"LORE__{child.name.split('-')[0].upper()}__SERVER__DATA_DIR")
        for child in plan(settings, 2)
        if child.name != "gateway"
    }


def test_with_object_storage_no_replica_shares_a_disk(tmp_path: Path) -> None:
    dirs = data_dirs(tmp_path, LORE__DOCDB__OBJECT_STORAGE__BUCKET="lore")
    assert dirs["docdb-1"] is None and dirs["docdb-2"] == "data/docdb-2"
    assert dirs["gen-2"] is not None and dirs["mem-2"] is not None
    assert dirs["gen-2"].endswith("-2") and dirs["mem-2"].endswith("-2")


def test_without_object_storage_docdb_replicas_share_their_raw_files_folder(tmp_path: Path) -> None:
    dirs = data_dirs(tmp_path)
    assert dirs["docdb-2"] is None  # the same folder as docdb-1 (on a cluster: a ReadWriteMany volume)
    assert dirs["mem-2"] is not None and dirs["mem-2"].endswith("-2")


def test_the_children_share_one_fresh_internal_credential_and_the_launcher_keeps_none(tmp_path: Path) -> None:
    children = plan(load_settings(tmp_path / "config", environ={}), 2)
    tokens = {child.env.get("LORE__SECURITY__INTERNAL_TOKEN") for child in children}
    assert len(tokens) == 1 and None not in tokens  # gateway and every replica hold the same one
    # Not in this process's environment: anything else it starts later (a test's services) has none.
    assert "LORE__SECURITY__INTERNAL_TOKEN" not in os.environ
    again = plan(load_settings(tmp_path / "config", environ={}), 1)
    assert {child.env["LORE__SECURITY__INTERNAL_TOKEN"] for child in again} != tokens  # one per start
