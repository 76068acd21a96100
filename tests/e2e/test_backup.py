"""`lore-up backup` while the stack serves (a parse and memory adds running), then `lore-up restore` onto
fresh data folders: the restored stack answers as the original did for everything acknowledged before
the backup began."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from lore_client import Lore
from lore_common.testing.processes import start_lore_up

ROOT = Path(__file__).resolve().parents[2]
PEOPLE = ROOT / "examples" / "people"
SCIFACT = ROOT / "tests" / "data" / "scifact-sample"


def lore_up(command: str, path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lore_gateway.launch", command, str(path)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def answers(lore: Lore) -> dict[str, Any]:
    """What a user would see of the data made before the backup."""
    overview = lore.overview("people", top_nodes=50, sample_relations=50)
    chat = lore.chat("people", "Who developed the first compiler?", mode="rerank")
    return {
        "kbs": sorted(k.name for k in lore.list_knowledge_bases()),
        "files": sorted((f.name, f.size) for f in lore.list_files("people")),
        "entities": sorted(e.name for e in overview.top_entities),
        "relations": sorted((r.source, r.target) for r in overview.sample_relations),
        "chunks": overview.chunk_count,
        "answer": chat.response,
        "cited": [c.source_file for c in chat.citations or []],
        "alice": sorted(m.memory for m in lore.list_memories(user_id="alice")),
        "search": [m.memory for m in lore.search_memories("peanuts", user_id="alice", limit=1)],
        "kb_memory": lore.kb_query("Who wrote the first program?", mode="naive").final_answer,
    }


def test_a_backup_taken_while_serving_restores_to_the_same_answers(tmp_path: Path) -> None:
    config = ROOT / "config"
    original = start_lore_up(tmp_path / "original", config, {"LORE__DOCDB__GRAPH_STORE__ENABLED": "true"})
    backup = tmp_path / "backup"
    try:
        with Lore(original.url) as lore:
            lore.create_dataset("people")
            lore.upload("people", [PEOPLE])
            lore.create_knowledge_base("people")
            lore.wait(lore.parse("people", ["people"]).tasks[0], timeout=60)
            for fact in ("I am allergic to peanuts.", "I live in Lisbon.", "I play the cello."):
                lore.add_memory(fact, user_id="alice", infer=False)
            lore.wait_insert(lore.kb_insert("Ada Lovelace wrote the first program."), timeout=60)
            before = answers(lore)
            assert before["entities"] and "Grace Hopper" in (before["answer"] or "")

            # Work that runs while the backup is taken: a parse of another dataset, memories added.
            lore.create_dataset("scifact")
            lore.upload("scifact", [SCIFACT])
            lore.create_knowledge_base("scifact")
            running = lore.parse("scifact", ["scifact"]).tasks[0]
            adding = threading.Thread(
                target=lambda: [lore.add_memory(f"fact {i}", user_id="bob", infer=False) for i in range(30)]
            )
            adding.start()
            made = lore_up("backup", backup, original.env)
            adding.join()
            lore.wait(running, timeout=120)
        assert made.returncode == 0, made.stderr
        assert "backed up docdb" in made.stderr and (backup / "lore-backup.json").is_file()
        again = lore_up("backup", backup, original.env)
        assert again.returncode != 0 and "not empty" in again.stderr
    finally:
        original.process.stop()

    fresh = tmp_path / "restored"
    env = {key: value.replace(str(tmp_path / "original"), str(fresh)) for key, value in original.env.items()}
    restored = lore_up("restore", backup, env)
    assert restored.returncode == 0, restored.stderr
    refused = lore_up("restore", backup, env)  # onto data that is there
    assert refused.returncode != 0 and "must be empty" in refused.stderr
    stack = start_lore_up(fresh, config, {"LORE__DOCDB__GRAPH_STORE__ENABLED": "true"})
    try:
        with Lore(stack.url) as lore:
            after = answers(lore)
            assert after.pop("kbs") == ["people", "scifact"]  # created before the backup began
            before.pop("kbs")
            assert after == before
            bob = lore.list_memories(user_id="bob", limit=100)
            assert len(bob) <= 30 and all(m.memory.startswith("fact ") for m in bob)
            # The parse that was running is over on the restored stack, one way or the other (resumed,
            # as after a crash, it may still be under way).
            deadline = time.monotonic() + 120
            while (task := lore.get_task(running.task_id)).status in ("pending", "running"):
                assert time.monotonic() < deadline, task
                time.sleep(0.2)
            assert task.status in ("completed", "failed"), task
    finally:
        stack.process.stop()
