"""The `lore` command against a real stack: typer's CliRunner for each command group (its `--json`
parsed), exit codes and messages on failure, and one real subprocess run of `lore ingest` and
`lore chat` on a folder of SciFact abstracts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from lore_client.cli import app
from lore_client.errors import Conflict
from lore_client.sync import Lore

from .conftest import ROOT, Stack

# One worker runs the modules that use the session `stack` (conftest.py), so lore-up starts once.
pytestmark = pytest.mark.together("client-stack")

SCIFACT = ROOT / "tests" / "data" / "scifact-sample"
PEOPLE = ROOT / "examples" / "people"


@pytest.fixture
def run(stack: Stack) -> Any:
    runner = CliRunner()

    def invoke(*args: str, code: int = 0, answer: str | None = None) -> Any:
        env = {"LORE_URL": stack.url, "LORE_API_KEY": ""}
        result = runner.invoke(app, list(args), env=env, input=answer)
        assert result.exit_code == code, f"{args}: {result.stdout}\n{result.stderr}\n{result.exception!r}"
        return result

    return invoke


def as_json(result: Any) -> Any:
    return json.loads(result.stdout)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_health(run: Any) -> None:
    report = as_json(run("health", "--json"))
    assert report["status"] == "ok" and set(report["services"]) == {"docdb", "gen", "mem"}
    assert "docdb" in run("health").stdout


def test_ingest_uploads_parses_and_is_idempotent_then_kb_and_tasks(run: Any, tmp_path: Path) -> None:
    folder = tmp_path / "people"
    shutil.copytree(PEOPLE, folder)
    (folder / "notes").mkdir()
    (folder / "notes" / "lovelace.txt").write_text("Ada Lovelace wrote the first published program in 1843.")
    kb = unique("people")
    first = as_json(run("ingest", str(folder), "--kb", kb, "--json"))
    assert sorted(f["path"] for f in first["uploaded"]) == ["curie.md", "hopper.md", "notes/lovelace.txt"]
    assert first["task"]["status"] == "completed" and first["dataset"] == kb and first["chunk_count"] == 3
    again = as_json(run("ingest", str(folder), "--kb", kb, "--json"))
    assert again["uploaded"] == [] and len(again["unchanged"]) == 3 and again["task"] is None
    (folder / "turing.md").write_text("Alan Turing described the universal machine in 1936.")
    more = as_json(run("ingest", str(folder), "--kb", kb, "--json"))
    assert [f["filename"] for f in more["uploaded"]] == ["turing.md"] and more["task"][
        "status"
    ] == "completed"
    assert more["chunk_count"] == 4  # parsed again with force: every file once
    human = run("ingest", str(folder), "--kb", kb).stdout
    assert "up to date" in human and "4 chunk(s)" in human

    assert kb in {k["name"] for k in as_json(run("kb", "ls", "--json"))}
    shown = as_json(run("kb", "show", kb, "--json"))
    assert shown["knowledge_base"]["datasets"][0]["parsed"] and shown["overview"]["chunk_count"] == 4
    assert "客观实体" in {e["type"] for e in shown["overview"]["top_entities"]}  # the API's value
    assert sorted((f["path"], f["chunks"] > 0) for f in shown["files"]["files"]) == [
        ("curie.md", True),
        ("hopper.md", True),
        ("notes/lovelace.txt", True),
        ("turing.md", True),
    ]
    printed = run("kb", "show", kb).stdout
    assert "files: 4 read, 0 skipped" in printed
    assert "Physical entity" in printed
    assert not any(t in printed for t in ("客观实体", "抽象实体", "事件实体", "文献实体"))
    assert "客观实体" in run("--labels", "zh", "kb", "show", kb).stdout
    tasks = as_json(run("tasks", "--json", "--limit", "200"))
    assert {t["task_id"] for t in tasks} >= {first["task"]["task_id"], more["task"]["task_id"]}
    assert "completed" in run("tasks", "--watch").stdout  # nothing active: one table, then it ends
    done = run("cancel", first["task"]["task_id"], code=1)  # a finished task cannot be cancelled
    assert "already completed" in done.stdout + done.stderr

    answer = as_json(run("chat", kb, "Who developed the first compiler?", "--json"))
    assert answer["citations"][0]["source_file"] == "hopper.md"
    printed = run("chat", kb, "Who developed the first compiler?", "--mode", "rerank").stdout
    assert "Grace Hopper" in printed and "[1] hopper.md" in printed
    streamed = run("chat", kb, "Who developed the first compiler?", "--stream").stdout
    assert "Grace Hopper" in streamed and "[1] hopper.md" in streamed

    table = as_json(run("table", "What do we know about Grace Hopper?", "--kb", kb, "--json"))
    assert table["status"] == "completed" and table["task_id"]
    assert table["result"]["csv_data"][0]["name"] == "Grace Hopper"
    rendered = run("table", "What do we know about Marie Curie?", "--kb", kb).stdout
    assert "Marie Curie" in rendered and "SELECT" in rendered and "step 4" in rendered
    steps = [line.split()[1] for line in rendered.splitlines() if line.startswith("step ")]
    assert len(steps) == len(set(steps)) <= 4, rendered  # one line per step, not one per row

    tree = as_json(run("tree", "generate", "science", "--kb", kb, "--json"))
    assert tree["status"] == "completed" and tree["result"]["kb_name"] == kb
    assert "science" in run("tree", "show", tree["task_id"]).stdout

    run("kb", "rm", kb, code=1, answer="n\n")  # asked, and refused: nothing happens
    assert as_json(run("kb", "show", kb, "--json"))["knowledge_base"]["status"] == "ready"
    assert as_json(run("kb", "rm", kb, "--yes", "--json"))["status"] == "deleting"


def test_ingest_syncs_by_path_and_content(run: Any, stack: Stack, tmp_path: Path) -> None:
    """Issue #41's three re-ingest defects: a same-size edit was skipped as up to date, a new-size edit
    was uploaded as vault_1.txt beside the old copy, and one name in two folders was uploaded again on
    every run (README_2.md, README_3.md, …)."""
    folder = tmp_path / "vault"
    (folder / "guide").mkdir(parents=True)
    (folder / "api").mkdir()
    (folder / "vault.txt").write_text("The vault code is 1234.")
    (folder / "guide" / "README.md").write_text("The guide explains the vault.")
    (folder / "api" / "README.md").write_text("The API opens the vault.")
    kb = unique("vault")

    def ingest(*extra: str) -> Any:
        return as_json(run("ingest", str(folder), "--kb", kb, "--mode", "1", "--json", *extra))

    def stored() -> dict[str, Any]:
        with Lore(stack.url) as lore:
            return {f.path: f for f in lore.list_files(kb)}

    first = ingest()
    assert sorted(f["path"] for f in first["uploaded"]) == ["api/README.md", "guide/README.md", "vault.txt"]
    again = ingest()
    assert again["uploaded"] == [] and again["task"] is None and len(again["unchanged"]) == 3
    assert sorted(f.name for f in stored().values()) == ["api%2FREADME.md", "guide%2FREADME.md", "vault.txt"]

    (folder / "vault.txt").write_text("The vault code is 9876.")  # the same size
    edited = ingest()
    assert [(f["path"], f["status"]) for f in edited["uploaded"]] == [("vault.txt", "replaced")]
    assert edited["task"]["status"] == "completed"
    (folder / "vault.txt").write_text("The vault code is 55555.")  # a new size
    grown = ingest()
    assert [(f["path"], f["status"]) for f in grown["uploaded"]] == [("vault.txt", "replaced")]
    assert sorted(stored()) == ["api/README.md", "guide/README.md", "vault.txt"]
    assert grown["chunk_count"] == 3
    with Lore(stack.url) as lore:
        found = lore.retrieve(kb, "vault code", max_results=10)
    texts = " ".join(p.content for p in found.data)
    assert "55555" in texts and "1234" not in texts and "9876" not in texts

    (folder / "api" / "README.md").unlink()
    kept = ingest()
    assert kept["deleted"] == [] and "api/README.md" in stored()
    pruned = ingest("--delete")
    assert pruned["deleted"] == ["api/README.md"] and sorted(stored()) == ["guide/README.md", "vault.txt"]
    assert pruned["task"]["status"] == "completed" and pruned["chunk_count"] == 2


def test_source_add_sync_and_ls(run: Any, stack: Stack) -> None:
    dataset = unique("handbook")
    folder = stack.data / "sources" / dataset
    (folder / "guide").mkdir(parents=True)
    (folder / "intro.md").write_text("Welcome to the handbook.")
    (folder / "guide" / "setup.md").write_text("Install it first.")
    outside = run("source", "add", dataset, "--folder", str(stack.data), code=1)
    assert "folder_roots" in outside.stderr
    assert "name one source" in run("source", "add", dataset, code=2).stderr
    added = as_json(run("source", "add", dataset, "--folder", str(folder), "--json"))
    assert added["source"] == {
        "kind": "folder",
        "interval": None,
        "auto_parse": True,
        "max_delete": 0.5,
        "path": str(folder),
    }
    first = as_json(run("source", "sync", dataset, "--json"))
    assert first["status"] == "completed" and first["report"]["added"] == ["guide/setup.md", "intro.md"]
    (folder / "intro.md").write_text("Welcome to the handbook!")
    (folder / "guide" / "setup.md").unlink()
    printed = run("source", "sync", dataset).stdout
    assert "added 0, changed 1, deleted 1, unchanged 0, failed 0" in printed
    listed = {s["dataset"]: s for s in as_json(run("source", "ls", "--json"))}
    assert listed[dataset]["last_sync"]["report"]["changed"] == ["intro.md"]
    assert dataset in run("source", "ls").stdout
    # A schedule starts with a sync at once (it used to wait one interval: an hour of nothing).
    scheduled = run("source", "add", dataset, "--folder", str(folder), "--interval", "3600").stdout
    assert "first sync within seconds, then every 3600 s" in scheduled
    run("source", "rm", dataset)
    assert "has no source" in run("source", "sync", dataset, code=1).stderr


def test_source_sync_waits_for_a_sync_already_running(run: Any, stack: Stack, monkeypatch: Any) -> None:
    """A scheduled source syncs at once when set, so `lore source sync` right after `source add` may
    find that sync running: it waits for it and prints its report instead of failing with a 409."""
    dataset = unique("busy")
    folder = stack.data / "sources" / dataset
    folder.mkdir(parents=True)
    (folder / "intro.md").write_text("Welcome.")
    run("source", "add", dataset, "--folder", str(folder))

    def already_running(self: Lore, name: str) -> Any:
        first = httpx.post(f"{stack.url}/api/v1/docdb/files/raw-files/datasets/{name}/sync")
        active = {"active_tasks": [first.json()["data"]["task_id"]]}  # the sync that got there first
        raise Conflict(f"dataset {name!r} is being synced", status=409, detail=active)

    monkeypatch.setattr(Lore, "sync", already_running)
    waited = run("source", "sync", dataset)
    assert "is already running; waiting for it" in waited.stderr
    assert "completed" in waited.stdout and "added 1, changed 0" in waited.stdout


def test_source_add_git_with_subdir_and_max_delete(run: Any, stack: Stack) -> None:
    dataset = unique("wiki")
    repo = stack.data / "sources" / dataset
    (repo / "docs").mkdir(parents=True)
    (repo / "docs" / "guide.md").write_text("Read the guide.")
    (repo / "README.md").write_text("Not under docs.")
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "one"]):
        git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
        subprocess.run([*git, *args], check=True, capture_output=True)
    as_url = run("source", "add", dataset, "--git", f"file://{repo}", code=1).stderr
    assert "file:// URLs are not supported" in as_url and "outside" not in as_url
    assert run("source", "add", dataset, "--git", str(repo), "--max-delete", "2", code=2)
    added = as_json(
        run("source", "add", dataset, "--git", str(repo), "--subdir", "docs", "--max-delete", "1", "--json")
    )
    assert added["source"]["subdir"] == "docs" and added["source"]["max_delete"] == 1
    synced = as_json(run("source", "sync", dataset, "--json"))
    assert synced["status"] == "completed" and synced["report"]["added"] == ["guide.md"]


def test_failures_exit_non_zero_with_the_servers_message(run: Any, tmp_path: Path) -> None:
    missing = run("kb", "show", unique("nokb"), code=1)
    assert "does not exist; " in missing.stderr
    assert "name a scope" in run("mem", "search", "x", code=2).stderr
    assert "no such file" in run("ingest", str(tmp_path / "absent"), "--kb", "x", code=2).stderr
    failed = run("table", "every person and their discovery", code=1)
    assert "no entities" in failed.stderr


def test_tree_import(run: Any, tmp_path: Path) -> None:
    import openpyxl  # here: every xdist worker collects this module

    book = openpyxl.Workbook()
    for row in (["Energy", "Solar", "Panels"], ["Energy", "Wind"], ["Water"]):
        book.active.append(row)
    book.save(tmp_path / "tags.xlsx")
    tree = as_json(run("tree", "import", str(tmp_path / "tags.xlsx"), "--name", "tags", "--json"))
    assert tree["result"]["node_count"] == 5 and [n["node_name"] for n in tree["result"]["nodes"]] == [
        "Energy",
        "Water",
    ]
    printed = run("tree", "import", str(tmp_path / "tags.xlsx")).stdout
    assert "Panels" in printed and "Wind" in printed


def test_memory_commands(run: Any) -> None:
    user = unique("user")
    added = as_json(run("mem", "add", "I am allergic to peanuts.", "--user", user, "--json"))
    memory_id = added["results"][0]["id"]
    run("mem", "add", "I live in Lisbon.", "--user", user, "--no-infer", "--when", "2023-05-08T13:56:00Z")
    found = as_json(run("mem", "search", "peanut allergy", "--user", user, "--limit", "1", "--json"))
    assert len(found) == 1 and found[0]["id"] == memory_id
    dated = as_json(run("mem", "search", "where did I live in May 2023", "--user", user, "--json"))
    assert dated[0]["memory"] == "I live in Lisbon." and dated[0]["created_at"] == "2023-05-08T13:56:00+00:00"
    assert len(as_json(run("mem", "ls", "--user", user, "--json"))) == 2
    listed = run("mem", "ls", "--user", user).stdout  # CliRunner's output is a pipe: 80 columns
    assert "peanuts" in listed and memory_id in listed
    updated = as_json(run("mem", "update", memory_id, "I am allergic to peanuts and cashews.", "--json"))
    assert updated["id"] == memory_id and updated["memory"] == "I am allergic to peanuts and cashews."
    assert "cashews" in run("mem", "update", memory_id, "I am allergic to cashews.").stdout
    history = as_json(run("mem", "history", memory_id, "--json"))
    assert [h["event"] for h in history] == ["ADD", "UPDATE", "UPDATE"]
    assert as_json(run("mem", "rm", memory_id, "--json")) == {"deleted": 1}
    assert as_json(run("mem", "rm", "--user", user, "--yes", "--json")) == {"deleted": 1}
    assert as_json(run("mem", "ls", "--user", user, "--json")) == []

    job = as_json(run("mem", "kb", "insert", "Rosalind Franklin photographed DNA in 1952.", "--json"))
    assert job["status"] == "done" and job["entities"] >= 1
    answer = as_json(run("mem", "kb", "query", "Who photographed DNA?", "--mode", "naive", "--json"))
    assert "Rosalind Franklin" in answer["final_answer"]
    space = ["--workspace", unique("lab")]
    job = as_json(run("mem", "kb", "insert", "Lise Meitner explained nuclear fission.", *space, "--json"))
    assert job["status"] == "done" and job["workspace"] == space[1]
    answer = as_json(run("mem", "kb", "query", "Who explained fission?", "--mode", "naive", *space, "--json"))
    assert "Meitner" in answer["rag_memory"] and "Rosalind" not in answer["rag_memory"]


def test_lore_ingest_and_chat_as_a_real_process_on_scifact(stack: Stack, tmp_path: Path) -> None:
    lore = shutil.which("lore", path=str(Path(sys.executable).parent))
    assert lore, "the lore command is installed with lore-client[cli]"
    env = {**os.environ, "LORE_URL": stack.url, "COLUMNS": "120"}
    kb = unique("scifact")
    ingest = subprocess.run(
        [lore, "ingest", str(SCIFACT), "--kb", kb, "--mode", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert ingest.returncode == 0, ingest.stderr
    assert "uploaded 12 file(s)" in ingest.stdout and "completed" in ingest.stdout
    claims = {
        "ADAR1 binds to Dicer to cleave pre-miRNA.": "5953485.txt",
        "AIRE is expressed in some skin tumors.": "12580014.txt",
        "ALDH1 expression is associated with poorer prognosis in breast cancer.": "45638119.txt",
    }
    for claim, evidence in claims.items():
        chat = subprocess.run(
            [lore, "chat", kb, claim, "--mode", "rerank", "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert chat.returncode == 0, chat.stderr
        answer = json.loads(chat.stdout)
        assert answer["citations"][0]["source_file"] == evidence, (claim, answer["citations"])
    missing = subprocess.run(
        [lore, "chat", unique("nokb"), "anything"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert missing.returncode == 1 and "does not exist" in missing.stderr


def test_ingest_during_a_running_parse_uploads_and_parses_the_change_after_it(
    run: Any, stack: Stack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trial F7: an ingest while a parse of the dataset ran printed docdb's 409 and exited 1, although
    its upload had worked and docdb parses the change after the running parse."""
    folder = tmp_path / "menu"
    folder.mkdir()
    (folder / "menu.md").write_text("On Fridays the cafeteria serves lutefisk.")
    kb = unique("menu")
    run("ingest", str(folder), "--kb", kb, "--mode", "1")
    real = Lore.__dict__["parse"]
    started: list[str] = []

    def parse_while_one_runs(self: Lore, *args: Any, **kwargs: Any) -> Any:
        """The first call finds a parse of the dataset active: one started just before it."""
        if not started:
            started.append(real.__get__(self, Lore)(*args, **kwargs).tasks[0].task_id)
        return real.__get__(self, Lore)(*args, **kwargs)

    monkeypatch.setattr(Lore, "parse", parse_while_one_runs)
    (folder / "menu.md").write_text("On Fridays the cafeteria now serves tacos.")
    printed = run("ingest", str(folder), "--kb", kb).stdout  # the KB's mode, 1 (was 0: a 409)
    assert f"is running (task {started[0]})" in printed and "completed" in printed
    with Lore(stack.url) as lore:
        texts = " ".join(p.content for p in lore.retrieve(kb, "cafeteria Fridays").data)
    assert "tacos" in texts and "lutefisk" not in texts

    started.clear()
    (folder / "menu.md").write_text("On Fridays the cafeteria serves churros.")
    quick = as_json(run("ingest", str(folder), "--kb", kb, "--mode", "1", "--no-wait", "--json"))
    assert quick["uploaded"][0]["status"] == "replaced" and quick["task"] is None
    assert quick["running_task"]["task_id"] == started[0]
    with Lore(stack.url) as lore:
        lore.wait(started[0])


def test_ingest_of_a_subfolder_with_delete_asks_before_emptying_the_dataset(
    run: Any, stack: Stack, tmp_path: Path
) -> None:
    """Trial F9: files left out of an ingest were never mentioned, and `--delete` on a subfolder
    deleted every file of the dataset at once, without a question or a dry run."""
    folder = tmp_path / "docs"
    (folder / "mail").mkdir(parents=True)
    (folder / "wiki.md").write_text("The wiki explains the ducks.")
    (folder / "notes.md").write_text("Notes about the pond.")
    (folder / "mail" / "family-day.eml").write_text("Subject: family day\n\nGet excited for family day!")
    kb = unique("sub")
    run("ingest", str(folder), "--kb", kb, "--mode", "1")

    def stored() -> list[str]:
        with Lore(stack.url) as lore:
            return sorted(f.path for f in lore.list_files(kb))

    (folder / "mail" / "family-day.eml").rename(folder / "mail" / "family-day-2022.eml")
    hinted = run("ingest", str(folder), "--kb", kb, "--mode", "1").stdout
    assert "1 file(s) in the dataset are not in the folder(s) given; --delete removes them" in hinted

    plan = as_json(run("ingest", str(folder / "mail"), "--kb", kb, "--delete", "--dry-run", "--json"))
    assert plan["upload"] == [{"path": "family-day-2022.eml", "status": "added"}]
    assert plan["delete"] == ["mail/family-day-2022.eml", "mail/family-day.eml", "notes.md", "wiki.md"]
    refused = run("ingest", str(folder / "mail"), "--kb", kb, "--mode", "1", "--delete", code=2)
    assert "would delete 4 of the dataset's 4 files" in refused.stderr and "notes.md" in refused.stderr
    assert "--yes" in refused.stderr
    assert stored() == plan["delete"]  # nothing sent, nothing deleted

    (folder / "notes.md").unlink()  # one of five: no question
    pruned = as_json(run("ingest", str(folder), "--kb", kb, "--mode", "1", "--delete", "--json"))
    assert pruned["deleted"] == ["mail/family-day.eml", "notes.md"]
    forced = as_json(
        run("ingest", str(folder / "mail"), "--kb", kb, "--mode", "1", "--delete", "--yes", "--json")
    )
    assert sorted(forced["deleted"]) == ["mail/family-day-2022.eml", "wiki.md"]
    assert stored() == ["family-day-2022.eml"]


def test_mistaken_names_are_said_in_words_with_the_names_meant(run: Any, tmp_path: Path) -> None:
    """Trial F11: a name with a space got the validator's regex, an unknown KB in `chat` no hint of
    the name meant, and `kb rm` of an unknown KB asked to confirm before saying it does not exist."""
    (tmp_path / "a.md").write_text("Trial notes.")
    spaced = run("ingest", str(tmp_path), "--kb", "my kb", code=2).stderr
    assert "'my kb'" in spaced and "letters, digits, _ and -" in spaced and "regex" not in spaced
    source = run("source", "add", "my ds", "--folder", str(tmp_path), code=1).stderr
    assert "letters, digits, _ and -" in source and "regex" not in source  # the server's 400, in words

    kb = unique("Trial")
    run("ingest", str(tmp_path), "--kb", kb, "--mode", "1")
    typo = kb.lower()
    for args in (("chat", typo, "What are the notes?"), ("chat", typo, "Notes?", "--stream")):
        said = run(*args, code=1).stderr
        assert f"knowledge base '{typo}' does not exist; did you mean {kb}?" in said, said
    assert f"did you mean {kb}?" in run("kb", "show", typo, code=1).stderr
    removed = run("kb", "rm", unique("nosuch"), code=1, answer="y\n")
    assert "does not exist" in removed.stderr and "Delete knowledge base" not in removed.stdout
    assert as_json(run("kb", "rm", kb, "--yes", "--json"))["status"] == "deleting"


def test_ingest_sends_a_file_over_the_servers_limit_in_chunks(tmp_path: Path) -> None:
    """Trial F8: a file over docdb's limit for one request (`docdb.max_upload_size`) failed with
    `cannot reach Lore at …: ` and an empty reason; the chunked upload has no limit."""
    from lore_common.testing.processes import start_lore_up

    limit = 1024 * 1024
    small = start_lore_up(tmp_path / "stack", ROOT / "config", {"LORE__DOCDB__MAX_UPLOAD_SIZE": str(limit)})
    try:
        folder = tmp_path / "big"
        (folder / "logs").mkdir(parents=True)
        line = "The reactor log says the pressure held at {} bar.\n"
        (folder / "logs" / "reactor.txt").write_text(line.format(7) * (2 * limit // len(line)))
        (folder / "notes.md").write_text("Notes on the reactor.")
        env = {"LORE_URL": small.url, "LORE_API_KEY": ""}

        def ingest() -> Any:
            args = ["ingest", str(folder), "--kb", "big", "--mode", "1", "--chunk-mib", "1", "--json"]
            result = CliRunner().invoke(app, args, env=env)
            assert result.exit_code == 0, f"{result.stdout}\n{result.stderr}"
            return as_json(result)

        first = ingest()
        assert sorted((f["path"], f["status"]) for f in first["uploaded"]) == [
            ("logs/reactor.txt", "added"),
            ("notes.md", "added"),
        ]
        assert first["task"]["status"] == "completed"
        (folder / "logs" / "reactor.txt").write_text(line.format(9) * (2 * limit // len(line)))
        second = ingest()
        assert [(f["path"], f["status"]) for f in second["uploaded"]] == [("logs/reactor.txt", "replaced")]
        assert ingest()["uploaded"] == []
        with Lore(small.url) as lore:
            files = {f.path: f.size for f in lore.list_files("big")}
            passages = " ".join(p.content for p in lore.retrieve("big", "reactor pressure").data)
        assert files == {"logs/reactor.txt": (folder / "logs" / "reactor.txt").stat().st_size, "notes.md": 21}
        assert "9 bar" in passages and "7 bar" not in passages
    finally:
        small.process.stop()
