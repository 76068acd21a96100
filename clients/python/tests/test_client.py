"""lore-client against a real stack: every route through the typed methods, the typed errors, the
resumable upload and the helpers (wait, streams)."""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import sys
import uuid
from datetime import datetime
from pathlib import Path

import pytest

from lore_client import (
    AsyncLore,
    AuthenticationError,
    BadRequest,
    Conflict,
    Lore,
    NotFound,
    TaskFailed,
    Unprocessable,
    Unreachable,
)
from lore_client.models import TaskProgress, UploadEvent
from lore_common.testing.processes import ServerProcess, free_port

from .conftest import ROOT, Stack

# One worker runs the modules that use the session `stack` (conftest.py), so lore-up starts once.
pytestmark = pytest.mark.together("client-stack")

PEOPLE = ROOT / "examples" / "people"
MIB = 1024 * 1024


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def lore(stack: Stack) -> Lore:
    with Lore(stack.url) as client:
        yield client


def people_kb(lore: Lore) -> str:
    """A dataset and a KB (same name) holding the two example files, parsed in mode 0."""
    name = unique("people")
    lore.create_dataset(name)
    lore.upload(name, [PEOPLE])
    lore.create_knowledge_base(name)
    lore.wait(lore.parse(name, [name]).tasks[0], timeout=60)
    return name


def test_system_routes_and_unreachable_server(lore: Lore) -> None:
    assert lore.info().name == "lore"
    health = lore.health()
    assert health.status == "ok" and set(health.services) == {"docdb", "gen", "mem"}
    with Lore(f"http://127.0.0.1:{free_port()}") as nowhere, pytest.raises(Unreachable, match="cannot reach"):
        nowhere.list_datasets()


def test_datasets_and_files_with_typed_errors(lore: Lore, tmp_path: Path) -> None:
    name = unique("files")
    assert lore.create_dataset(name) == name
    assert name in lore.list_datasets()
    with pytest.raises(Conflict, match="already exists") as taken:
        lore.create_dataset(name)
    assert taken.value.status == 409 and taken.value.code == 409
    with pytest.raises(BadRequest) as invalid:
        lore.create_dataset("no spaces allowed")
    assert "name" in str(invalid.value)
    stored = lore.upload_files(name, [PEOPLE / "curie.md", PEOPLE / "curie.md"])
    assert [f.filename for f in stored] == ["curie.md", "curie_1.md"]
    assert {f.name: f.size for f in lore.list_files(name)} == {
        "curie.md": (PEOPLE / "curie.md").stat().st_size,
        "curie_1.md": (PEOPLE / "curie.md").stat().st_size,
    }
    lore.delete_file(name, "curie_1.md")
    with pytest.raises(NotFound, match=r"curie_1\.md"):
        lore.delete_file(name, "curie_1.md")
    put = lore.put_file(name, "notes/50% off.md", b"alpha")
    assert (put.name, put.path, put.status) == ("notes%2F50%25 off.md", "notes/50% off.md", "added")
    assert lore.put_file(name, "notes/50% off.md", b"alpha").status == "unchanged"
    assert {f.path: f.sha256 for f in lore.list_files(name)}["notes/50% off.md"] == put.sha256
    lore.delete_file(name, put.name)
    assert [f.name for f in lore.list_files(name)] == ["curie.md"]
    lore.delete_dataset(name)
    with pytest.raises(NotFound) as missing:
        lore.list_files(name)
    assert missing.value.status == 404 and name in missing.value.message


def test_chunked_upload_routes(lore: Lore, stack: Stack) -> None:
    name = unique("chunks")
    lore.create_dataset(name)
    payload = os.urandom(3000)
    session = lore.init_upload(name, "three.bin", 3, len(payload))
    assert (session.filename, session.total_chunks) == ("three.bin", 3)
    assert lore.upload_chunk(name, session.upload_id, 2, payload[2000:]) == 1000
    assert lore.upload_status(name, session.upload_id).received_chunks == [2]
    with pytest.raises(BadRequest, match="2 of 3 chunks are missing") as incomplete:
        lore.complete_upload(name, session.upload_id)
    assert incomplete.value.detail == {"missing_chunks": [0, 1]}
    with pytest.raises(BadRequest, match="out of range"):
        lore.upload_chunk(name, session.upload_id, 3, b"x")
    lore.upload_chunk(name, session.upload_id, 0, payload[:1000])
    lore.upload_chunk(name, session.upload_id, 1, payload[1000:2000])
    assert lore.complete_upload(name, session.upload_id).size == 3000
    assert (stack.data / "docdb" / "raw" / name / "three.bin").read_bytes() == payload
    aborted = lore.init_upload(name, "gone.bin", 1, 10)
    lore.abort_upload(name, aborted.upload_id)
    with pytest.raises(NotFound, match="does not exist"):
        lore.upload_status(name, aborted.upload_id)


class Interrupted(Exception):
    pass


def test_an_interrupted_upload_resumes_from_the_chunks_the_server_holds(
    lore: Lore, stack: Stack, tmp_path: Path
) -> None:
    name = unique("resume")
    lore.create_dataset(name)
    source = tmp_path / "video.bin"
    source.write_bytes(os.urandom(5 * MIB + 123))
    state = tmp_path / "state"

    def cut_after_two_chunks(event: UploadEvent) -> None:
        if event.sent_bytes >= 2 * MIB and not event.done:
            raise Interrupted

    with pytest.raises(Interrupted):
        lore.upload(
            name, [source], chunk_size=MIB, parallel=1, on_progress=cut_after_two_chunks, state_dir=state
        )
    [record] = list(state.iterdir())
    upload_id = record.read_text().split('"')[3]
    assert lore.upload_status(name, upload_id).received_chunks == [0, 1]

    events: list[UploadEvent] = []
    [stored] = lore.upload(
        name, [source], chunk_size=MIB, parallel=4, on_progress=events.append, state_dir=state
    )
    assert (stored.filename, stored.size) == ("video.bin", source.stat().st_size)
    assert events[0].resumed_bytes == 2 * MIB and events[0].sent_bytes == 2 * MIB
    sent = [e for e in events if not e.done][1:]
    assert len(sent) == 4  # chunks 2, 3, 4 and 5: the two the server held were not sent again
    assert events[-1].done and events[-1].sent_bytes == source.stat().st_size
    copy = stack.data / "docdb" / "raw" / name / "video.bin"
    assert hashlib.sha256(copy.read_bytes()).digest() == hashlib.sha256(source.read_bytes()).digest()
    assert not list(state.iterdir())  # the resume record goes with the upload


def test_upload_walks_folders_and_mixes_simple_and_chunked(lore: Lore, tmp_path: Path) -> None:
    name = unique("mixed")
    lore.create_dataset(name)
    (tmp_path / "docs" / "deep").mkdir(parents=True)
    (tmp_path / "docs" / "a.txt").write_text("alpha")
    (tmp_path / "docs" / "deep" / "b.bin").write_bytes(os.urandom(300_000))
    (tmp_path / "docs" / ".hidden").write_text("skipped")
    stored = lore.upload(name, [tmp_path / "docs"], chunk_size=100_000, state_dir=tmp_path / "state")
    assert [(f.filename, f.size) for f in stored] == [("a.txt", 5), ("b.bin", 300_000)]
    with pytest.raises(FileNotFoundError):
        lore.upload(name, [tmp_path / "nothing-here"])


def test_knowledge_bases_tasks_schemas_and_configuration(lore: Lore) -> None:
    name = unique("kb")
    lore.create_dataset(name)
    lore.upload(name, [PEOPLE])
    created = lore.create_knowledge_base(name)
    assert created.status == "ready" and created.embedding_model == "hashing"  # the stack's embedder
    with pytest.raises(Conflict):
        lore.create_knowledge_base(name)
    with pytest.raises(BadRequest, match="unknown embedding model 'no-such-model'"):
        lore.create_knowledge_base(unique("kb"), embedding_model="no-such-model")
    seen: list[TaskProgress] = []
    parse = lore.parse(name, [name])
    assert parse.mode == 0 and parse.tasks[0].dataset == name
    done = lore.wait(parse.tasks[0], timeout=60, on_progress=seen.append)
    assert done.status == "completed" and done.kb_name == name and done.dataset == name
    assert seen[-1].stage == "done" and seen[-1].step == seen[-1].steps == 7
    assert lore.get_task(done.task_id).status == "completed"
    assert done.task_id in {t.task_id for t in lore.list_tasks(status="completed", limit=200)}
    with pytest.raises(BadRequest, match=r"terminal|already"):
        lore.cancel_task(done.task_id)
    with pytest.raises(NotFound):
        lore.get_task(str(uuid.uuid4()))
    with pytest.raises(Conflict, match="force"):
        lore.parse(name, [name])

    kb = lore.get_knowledge_base(name)
    assert [d.name for d in kb.datasets] == [name] and kb.datasets[0].parsed
    assert "rerank" in {m.id for m in kb.available_query_modes}
    overview = lore.overview(name, top_nodes=3, sample_relations=2)
    assert overview.chunk_count == 2 and 0 < len(overview.top_entities) <= 3 and overview.prompt
    assert name in {k.name for k in lore.list_knowledge_bases()}
    first, rest = lore.graph(name, limit=2), lore.graph(name, offset=2, limit=2000)
    assert first.total_nodes == len(first.nodes) + len(rest.nodes) and len(first.nodes) == 2
    assert first.nodes[0].name == overview.top_entities[0].name

    schema = unique("people")
    entities = [{"type": "客观实体", "subtype": "Person", "attributes": ["born"]}]
    assert lore.create_schema(schema, entities).entity_count == 1
    assert schema in {s.name for s in lore.list_schemas()}
    assert lore.get_schema(schema).entities == entities
    with pytest.raises(Unprocessable) as bad_type:
        lore.create_schema(unique("bad"), [{"type": "Person", "subtype": "x"}])
    assert bad_type.value.status == 422
    lore.delete_schema(schema)
    with pytest.raises(NotFound):
        lore.get_schema(schema)

    assert lore.config("llm")["provider"] == "offline"
    assert lore.config()["docdb"]["llm"]["provider"] == "offline" and "docdb" in lore.reload_config()
    assert lore.processing_config()["embedding"]["model"].startswith("hashing")
    with pytest.raises(NotFound):
        lore.config("no_such_section")

    lore.remove_dataset(name, name)
    assert not lore.get_knowledge_base(name).datasets
    assert lore.delete_knowledge_base(name) == "deleting"


def test_chat_stream_and_retrieve(lore: Lore) -> None:
    name = people_kb(lore)
    answer = lore.chat(name, "Who developed the first compiler?", mode="rerank")
    assert "Grace Hopper" in (answer.response or "")
    assert answer.citations and answer.citations[0].source_file == "hopper.md"
    assert answer.data[0].kb_name == "hopper.md" and answer.total_count == len(answer.data)
    assert answer.query_info["mode"] == "rerank"
    events = list(lore.chat_stream(name, "Who developed the first compiler?", mode="rerank"))
    kinds = [e.event for e in events]
    assert kinds[0] == "passages" and kinds[-1] == "done" and "delta" in kinds and "citations" in kinds
    assert "".join(e.data["text"] for e in events if e.event == "delta") == answer.response
    assert events[-1].data["response"] == answer.response
    found = lore.retrieve(name, "Marie Curie polonium", max_results=1)
    assert found.total_count == 1 and found.data[0].kb_name == "curie.md"
    with pytest.raises(BadRequest, match="query is empty"):
        lore.chat(name, "")
    with pytest.raises(BadRequest, match=r"does not exist|not found"):
        lore.chat(unique("nokb"), "anything")


def test_tables_and_tag_trees(lore: Lore, tmp_path: Path) -> None:
    name = people_kb(lore)
    steps: list[TaskProgress] = []
    task = lore.submit_table("What do we know about Marie Curie and Grace Hopper?", kb_name=name)
    assert task.status == "pending"
    table = lore.wait_table(task, timeout=60, on_progress=steps.append)
    assert table.result is not None
    assert {row["name"] for row in table.result.csv_data} == {"Marie Curie", "Grace Hopper"}
    assert table.result.sql.upper().startswith("SELECT") and table.result.kb_name == name
    assert steps[-1].status == "completed"

    events = list(lore.table_stream("What do we know about Grace Hopper?", kb_name=name))
    assert [e.type for e in events][-1] == "result" and events[0].type == "progress"
    assert next(e.step for e in events if e.type == "progress") == 1
    assert events[-1].data is not None and events[-1].data.csv_data[0]["name"] == "Grace Hopper"
    failed = list(lore.table_stream("every person and their discovery"))  # no KB, no names: no entities
    assert failed[-1].type == "error" and failed[-1].message
    with pytest.raises(TaskFailed, match="failed") as task_failed:
        lore.wait_table(lore.submit_table("every person and their discovery"), timeout=60)
    assert task_failed.value.task.error
    with pytest.raises(NotFound):
        lore.submit_table("anything", kb_name=unique("nokb"))

    tree = lore.wait_tree(lore.generate_tree("science", mode="kb", kb_name=name), timeout=60)
    assert tree.result is not None and tree.result.kb_name == name and tree.result.node_count > 2
    assert lore.tree_status(tree.task_id).result == tree.result
    import openpyxl  # here: every xdist worker collects this module

    book = openpyxl.Workbook()
    sheet = book.active
    for row in (["Energy", "Solar", "Panels"], ["Energy", "Wind"]):
        sheet.append(row)
    book.save(tmp_path / "tree.xlsx")
    imported = lore.import_tree(tmp_path / "tree.xlsx", tree_name="energy")
    assert imported.status == "completed" and imported.node_count == 4
    shown = lore.tree_status(imported.task_id)
    assert shown.result is not None and shown.result.nodes[0].children[0].node_name == "Solar"
    with pytest.raises(BadRequest):
        lore.import_tree(PEOPLE / "curie.md")
    with pytest.raises(NotFound):
        lore.tree_status(str(uuid.uuid4()))


def test_memories_vg_and_kb(lore: Lore) -> None:
    user = unique("user")
    added = lore.add_memory("I am allergic to peanuts.", user_id=user)
    assert [r.event for r in added.results] == ["ADD"]
    lore.add_memory(
        [{"role": "user", "content": "I live in Lisbon."}],
        user_id=user,
        infer=False,
        timestamp=datetime(2023, 5, 8, 13, 56),
    )
    found = lore.search_memories("peanut allergy", user_id=user, limit=1)
    assert len(found) == 1 and "peanut" in found[0].memory.lower() and found[0].score is not None
    dated = lore.search_memories("Where did I live in May 2023?", user_id=user, limit=2)
    assert dated[0].memory == "I live in Lisbon." and dated[0].created_at == "2023-05-08T13:56:00+00:00"
    listed = lore.list_memories(user_id=user)
    assert len(listed) == 2
    memory_id = added.results[0].id
    assert lore.get_memory(memory_id).user_id == user
    updated = lore.update_memory(memory_id, "Allergic to peanuts and shellfish")
    assert updated.memory == "Allergic to peanuts and shellfish" and updated.previous_memory
    assert [h.event for h in lore.memory_history(memory_id)] == ["ADD", "UPDATE"]
    lore.delete_memory(memory_id)
    with pytest.raises(NotFound):
        lore.get_memory(memory_id)
    assert lore.delete_memories(user_id=user) == 1
    assert lore.list_memories(user_id=user) == []
    with pytest.raises(Unprocessable, match="user_id"):
        lore.search_memories("anything")
    with pytest.raises(BadRequest, match="empty"):
        lore.search_memories("", user_id=user)

    job = lore.kb_insert("Ada Lovelace wrote the first published computer program in 1843.")
    assert job.status == "accepted"
    done = lore.wait_insert(job, timeout=60)
    assert done.status == "done" and lore.kb_insert_status(job.id).status == "done"
    answer = lore.kb_query("Who wrote the first computer program?", mode="naive")
    assert "Ada Lovelace" in answer.final_answer and answer.mode == "naive"
    events = list(lore.kb_query_stream("Who wrote the first computer program?", mode="naive"))
    assert events[-1].event == "done" and events[-1].data["final_answer"] == answer.final_answer
    with pytest.raises(BadRequest):
        lore.kb_query("")


async def test_the_async_client_is_the_same_api(stack: Stack, tmp_path: Path) -> None:
    async with AsyncLore(stack.url) as lore:
        name = unique("async")
        await lore.create_dataset(name)
        [stored] = await lore.upload(name, [PEOPLE / "hopper.md"])
        assert stored.filename == "hopper.md"
        await lore.create_knowledge_base(name)
        task = await lore.wait((await lore.parse(name, [name], mode=1)).tasks[0], timeout=60)
        assert task.status == "completed"
        answer = await lore.chat(name, "Who developed the first compiler?")
        assert answer.citations and answer.citations[0].source_file == "hopper.md"
        events = [
            e.type async for e in lore.table_stream("What do we know about Grace Hopper?", kb_name=name)
        ]
        assert events[-1] == "result"


def test_the_blocking_client_has_every_async_method() -> None:
    def public(kind: type) -> set[str]:
        return {n for n in dir(kind) if not n.startswith("_") and n not in ("close", "aio", "base_url")}

    missing = {
        n
        for n in public(AsyncLore)
        if callable(getattr(AsyncLore, n)) and not inspect.isclass(getattr(AsyncLore, n))
    } - public(Lore)
    assert not missing, f"Lore lacks {sorted(missing)}"
    assert Lore.upload.__doc__ == AsyncLore.upload.__doc__


def test_api_keys_reach_http_routes_and_the_table_stream(stack: Stack, tmp_path: Path) -> None:
    port = free_port()
    env = {**stack.env, "LORE__GATEWAY__PORT": str(port), "LORE__GATEWAY__API_KEYS": '["client-test-key"]'}
    gateway = ServerProcess([sys.executable, "-m", "lore_gateway"], env=env, log_path=tmp_path / "gw.log")
    try:
        gateway.wait_healthy(f"http://127.0.0.1:{port}/health", timeout=60)
        url = f"http://127.0.0.1:{port}"
        with Lore(url) as anonymous, pytest.raises(AuthenticationError) as refused:
            anonymous.list_datasets()
        assert refused.value.status == 401
        with Lore(url) as anonymous, pytest.raises(AuthenticationError):
            list(anonymous.table_stream("anything"))
        with Lore(url, api_key="client-test-key") as keyed:
            assert isinstance(keyed.list_datasets(), list)
            events = list(keyed.table_stream("What do we know about Zorblax?"))
            assert events[-1].type in ("result", "error")
    finally:
        gateway.stop()


def test_keys_self_and_the_memory_graph_through_a_key_limited_to_memories(
    stack: Stack, tmp_path: Path
) -> None:
    from lore_gateway.access import key_hash

    port = free_port()
    keys = [
        {"name": "open", "key_sha256": key_hash("open-key"), "scopes": ["admin"]},
        {
            "name": "ops",
            "key_sha256": key_hash("ops-key"),
            "scopes": ["write"],
            "modules": ["mem"],
            "memory": {"agent_id": "ops-bot", "kb": True},
        },
    ]
    env = {**stack.env, "LORE__GATEWAY__PORT": str(port), "LORE__GATEWAY__API_KEYS": json.dumps(keys)}
    gateway = ServerProcess([sys.executable, "-m", "lore_gateway"], env=env, log_path=tmp_path / "gw.log")
    secret = f"Velmarith{uuid.uuid4().hex[:6]}"
    try:
        gateway.wait_healthy(f"http://127.0.0.1:{port}/health", timeout=60)
        url = f"http://127.0.0.1:{port}"
        with Lore(url, api_key="ops-key") as ops, Lore(url, api_key="open-key") as admin:
            me = ops.keys_self()
            assert me.auth and me.name == "ops" and me.scope == "write" and me.modules == ["mem"]
            assert me.memory is not None and me.memory.agent_id == "ops-bot" and me.memory.kb
            assert me.memory.workspace == "agent_id=ops-bot"
            assert admin.keys_self().memory is None
            # The limited key's insert goes to its workspace; the client follows it there.
            job = ops.wait_insert(ops.kb_insert(f"Captain {secret} keeps the ops runbook."), timeout=60)
            assert job.status == "done" and job.workspace == "agent_id=ops-bot"
            assert secret in ops.kb_query("Who keeps the ops runbook?", mode="naive").rag_memory
            # An open key reads it only by naming the workspace; the default workspace does not hold it.
            named = admin.kb_query("Who keeps the ops runbook?", mode="naive", workspace="agent_id=ops-bot")
            assert secret in named.rag_memory
            assert secret not in admin.kb_query("Who keeps the ops runbook?", mode="naive").rag_memory
            streamed = list(admin.kb_query_stream("Who keeps the ops runbook?", workspace="agent_id=ops-bot"))
            assert secret in str(streamed[-1].data)
            with pytest.raises(AuthenticationError) as refused:  # the limited key naming another workspace
                ops.kb_query("Who keeps the ops runbook?", workspace="default")
            assert refused.value.status == 403
    finally:
        gateway.stop()
