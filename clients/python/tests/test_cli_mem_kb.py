"""`lore mem kb` against a real stack (trial 2 M1, M3): text from stdin or a file, never the literal `-`
or `@file`; an empty text refused; `--json` without the text; ls and rm; the answer's Sources."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lore_client.cli import app

from .conftest import ROOT, Stack

pytestmark = pytest.mark.together("client-stack")

PEOPLE = ROOT / "examples" / "people"


@pytest.fixture
def run(stack: Stack) -> Any:
    runner = CliRunner()

    def invoke(*args: str, code: int = 0, stdin: str | None = None) -> Any:
        result = runner.invoke(app, list(args), env={"LORE_URL": stack.url, "LORE_API_KEY": ""}, input=stdin)
        assert result.exit_code == code, f"{args}: {result.stdout}\n{result.stderr}\n{result.exception!r}"
        return result

    return invoke


def test_insert_reads_stdin_and_files_and_ls_rm_forget_them(run: Any, tmp_path: Path) -> None:
    space = ["--workspace", f"cli-{uuid.uuid4().hex[:8]}"]
    curie = (PEOPLE / "curie.md").read_text()
    from_stdin = json.loads(run("mem", "kb", "insert", "-", "--json", *space, stdin=curie).stdout)
    assert from_stdin["status"] == "done" and from_stdin["chars"] == len(curie) and "query" not in from_stdin
    hopper = PEOPLE / "hopper.md"
    at_file = json.loads(run("mem", "kb", "insert", f"@{hopper}", "--json", *space).stdout)
    notes = tmp_path / "notes.txt"
    notes.write_text("Ilsa Varga has kept the Zanzibar lighthouse burning since 1923.")
    by_option = json.loads(run("mem", "kb", "insert", "--file", str(notes), "--json", *space).stdout)

    listed = json.loads(run("mem", "kb", "ls", "--json", *space).stdout)
    assert [i["id"] for i in listed["inserts"]] == [by_option["id"], at_file["id"], from_stdin["id"]]
    previews = [i["preview"] for i in listed["inserts"]]
    assert previews[0].startswith("Ilsa Varga") and "Hopper" in previews[1] and "Curie" in previews[2]
    assert "-" not in previews and not any(p.startswith("@") for p in previews)
    assert "3 insert(s)" in run("mem", "kb", "ls", *space).stdout

    printed = run("mem", "kb", "query", "Who developed the first compiler?", "--mode", "naive", *space).stdout
    answer, _, sources = printed.partition("Sources:")
    assert "Hopper" in answer and "[1]" in answer and "[1] " in sources and "Hopper" in sources

    removed = json.loads(run("mem", "kb", "rm", at_file["id"], "--json", *space).stdout)
    assert removed["deleted"] is True and removed["chunks"] >= 1
    assert len(json.loads(run("mem", "kb", "ls", "--json", *space).stdout)["inserts"]) == 2
    after = run("mem", "kb", "query", "Who developed the first compiler?", "--mode", "naive", *space).stdout
    assert "Hopper" not in after
    assert "does not exist" in run("mem", "kb", "rm", at_file["id"], *space, code=1).stderr


def test_an_empty_text_or_an_unreadable_file_is_refused_before_any_insert(run: Any, tmp_path: Path) -> None:
    assert "the text is empty" in run("mem", "kb", "insert", "-", stdin="  \n", code=2).stderr
    assert "cannot read" in run("mem", "kb", "insert", f"@{tmp_path / 'absent.txt'}", code=2).stderr
    assert "give the text" in run("mem", "kb", "insert", code=2).stderr
