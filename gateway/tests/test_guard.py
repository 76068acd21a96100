"""The rules of keys limited to resources (`lore_gateway.guard.plan`), route by route."""

from __future__ import annotations

import pytest

from lore_core.settings import MemoryLimits
from lore_gateway.guard import Denied, Limits, plan, with_caller

TEAM = Limits(
    "team-a",
    knowledge_bases=("team-a-*",),
    datasets=("team-a-*",),
    memory=MemoryLimits(user_id="alice-*", agent_id="helper"),
)
KB = "/api/v1/docdb/files/knowledge-bases"


def test_names_in_the_path_and_body_must_match_the_patterns() -> None:
    plan(TEAM, "docdb", "GET", f"{KB}/team-a-kb/graph", {})
    with pytest.raises(Denied) as refused:
        plan(TEAM, "docdb", "DELETE", f"{KB}/team-b-kb", {})
    assert refused.value.status == 403 and "team-b-kb" in refused.value.message
    parse = plan(TEAM, "docdb", "POST", f"{KB}/team-a-kb/parse", {})
    with pytest.raises(Denied):
        parse.body_checked({"datasets": ["team-a-docs", "team-b-docs"]})
    chat = plan(TEAM, "docdb", "POST", "/api/v1/docdb/chat", {})
    with pytest.raises(Denied):
        chat.body_checked({"kb_id": "team-b-kb", "query": "q", "user_id": "u"})


def test_lists_are_filtered_not_refused() -> None:
    listed = plan(TEAM, "docdb", "GET", KB, {})
    assert listed.reply is not None
    reply = listed.reply({"success": True, "data": [{"name": "team-a-kb"}, {"name": "team-b-kb"}]})
    assert [kb["name"] for kb in reply["data"]] == ["team-a-kb"]
    sources = plan(TEAM, "docdb", "GET", "/api/v1/docdb/files/raw-files/sources", {})
    assert sources.reply is not None
    shown = sources.reply({"success": True, "data": [{"dataset": "team-a-docs"}, {"dataset": "team-b-docs"}]})
    assert shown["data"] == [{"dataset": "team-a-docs"}]
    tasks = plan(TEAM, "docdb", "GET", "/api/v1/docdb/files/processing/tasks", {})
    assert tasks.reply is not None
    mine = {"metadata": {"kb_name": "team-a-kb", "dataset": "team-a-docs"}}
    theirs = {"metadata": {"kb_name": "team-b-kb", "dataset": "team-b-docs"}}
    assert tasks.reply([mine, theirs]) == [mine]


def test_a_fixed_memory_id_is_filled_in_and_a_pattern_must_be_named() -> None:
    search = plan(TEAM, "mem", "POST", "/api/v1/mem/vg/search", {})
    assert search.body_checked({"query": "q", "user_id": "alice-1"}) == {
        "query": "q",
        "user_id": "alice-1",
        "agent_id": "helper",
    }
    with pytest.raises(Denied):
        search.body_checked({"query": "q"})  # user_id is a pattern: the call must name one
    with pytest.raises(Denied):
        search.body_checked({"query": "q", "user_id": "bob"})
    listed = plan(TEAM, "mem", "GET", "/api/v1/mem/vg", {"user_id": "alice-2"})
    assert listed.query == {"user_id": "alice-2", "agent_id": "helper"}


def test_one_memory_or_task_the_key_may_not_see_is_not_found() -> None:
    one = plan(TEAM, "mem", "GET", "/api/v1/mem/vg/m-1", {})
    assert one.reply is not None
    assert one.reply({"id": "m-1", "user_id": "bob", "agent_id": "helper"}) is None
    assert one.reply({"id": "m-1", "user_id": "alice-1", "agent_id": "helper"}) is not None
    changed = plan(TEAM, "mem", "DELETE", "/api/v1/mem/vg/m-1", {})
    assert changed.first == "/api/v1/mem/vg/m-1" and changed.first_ok is not None
    # gen is told the caller, and answers 404 for a task another key started (the task stores it).
    assert plan(TEAM, "gen", "GET", "/api/v1/gen/pipeline/status/t-1", {}).caller
    assert plan(TEAM, "gen", "POST", "/api/v1/gen/tag-tree/submit", {}).caller


def test_the_memory_graph_needs_kb_true() -> None:
    with pytest.raises(Denied):
        plan(TEAM, "mem", "POST", "/api/v1/mem/kb/query", {})
    allowed = Limits("graph", memory=MemoryLimits(user_id="x", kb=True))
    plan(allowed, "mem", "POST", "/api/v1/mem/kb/query", {})


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/mem/kb/insert",
        "/api/v1/mem/kb/query",
        "/api/v1/mem/kb/insert/job-1",
        "/api/v1/mem/kb/inserts",  # the list of inserts: the key's own workspace's only
    ],
)
def test_every_memory_graph_call_carries_the_keys_own_workspace(path: str) -> None:
    alice = Limits("a", memory=MemoryLimits(user_id="alice-*", agent_id="helper", kb=True))
    bob = Limits("b", memory=MemoryLimits(user_id="bob", kb=True))
    assert plan(alice, "mem", "POST", path, {}).query == {"workspace": "user_id=alice-*,agent_id=helper"}
    assert plan(bob, "mem", "POST", path, {"workspace": "user_id=bob"}).query == {"workspace": "user_id=bob"}
    with pytest.raises(Denied) as refused:  # naming the other's workspace
        plan(bob, "mem", "POST", path, {"workspace": "user_id=alice-*,agent_id=helper"})
    assert refused.value.status == 403
    everyone = Limits("all", memory=MemoryLimits(kb=True))  # limits no id: the default workspace
    assert plan(everyone, "mem", "POST", path, {}).query == {"workspace": "default"}


def test_a_workspace_pattern_must_be_named_and_matched() -> None:
    team = Limits("t", memory=MemoryLimits(user_id="x", kb=True, workspace="team-a-*"))
    assert plan(team, "mem", "POST", "/api/v1/mem/kb/query", {"workspace": "team-a-1"}).query == {
        "workspace": "team-a-1"
    }
    for named in ({}, {"workspace": "team-b-1"}):
        with pytest.raises(Denied):
            plan(team, "mem", "POST", "/api/v1/mem/kb/query", named)
    fixed = Limits("f", memory=MemoryLimits(user_id="x", kb=True, workspace="ops"))
    assert plan(fixed, "mem", "POST", "/api/v1/mem/kb/query", {}).query == {"workspace": "ops"}
    with pytest.raises(Denied):
        plan(fixed, "mem", "POST", "/api/v1/mem/kb/query", {"workspace": "default"})
    with pytest.raises(Denied):  # a kb route without a rule
        plan(fixed, "mem", "GET", "/api/v1/mem/kb/graph", {})


def test_a_route_without_a_rule_is_refused_to_a_limited_key_only() -> None:
    with pytest.raises(Denied):
        plan(TEAM, "docdb", "GET", "/api/v1/docdb/some/new/route", {})
    with pytest.raises(Denied):
        plan(TEAM, "mem", "GET", "/api/v1/mem/new-thing", {})
    memory_only = Limits("m", memory=MemoryLimits(user_id="x"))
    assert plan(memory_only, "docdb", "GET", "/api/v1/docdb/some/new/route", {}).reply is None
    with pytest.raises(Denied):
        plan(TEAM, "gen", "POST", "/api/v1/gen/pipeline/submit", {}).body_checked({"question": "q"})


def test_only_the_guard_names_the_caller() -> None:
    spoofed = {"type": "http", "headers": [(b"x-lore-caller", b"team-b"), (b"accept", b"*/*")]}
    assert with_caller(spoofed, None)["headers"] == [(b"accept", b"*/*")]
    assert with_caller(spoofed, "team-a")["headers"] == [(b"accept", b"*/*"), (b"x-lore-caller", b"team-a")]
    plain = {"type": "http", "headers": [(b"accept", b"*/*")]}
    assert with_caller(plain, None) is plain
