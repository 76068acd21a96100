"""The fake model server's fault modes against the real openai SDK and Lore's structured calls: every
piece of work ends extracted or reported failed, whatever the server does."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from lore_common.providers.chat import ChatMessage, ChatRequest, OpenAIChat, complete_or_record
from lore_common.providers.extraction import Extraction
from lore_common.providers.usage import track_usage
from lore_common.testing.fake_llm import Faults, chunk_key
from lore_common.testing.processes import ServerProcess, free_port
from lore_core.settings import LLMConfig

PEOPLE = ["Ada Lovelace", "Alan Turing", "Grace Hopper", "Marie Curie", "Niels Bohr", "Emmy Noether"]


@pytest.fixture(scope="module")
def model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    responder = "lore_common.testing.responders:entities"
    server = ServerProcess(
        [sys.executable, "-m", "lore_common.testing.fake_llm", "--port", str(port), "--responder", responder],
        log_path=Path(tmp_path_factory.mktemp("faults")) / "fake_llm.log",
    )
    try:
        server.wait_healthy(f"http://127.0.0.1:{port}/health", timeout=30)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def faults(root: str, **body: Any) -> None:
    httpx.post(f"{root}/_reset").raise_for_status()
    httpx.post(f"{root}/_faults", json=body).raise_for_status()


def model(root: str, **overrides: Any) -> OpenAIChat:
    config = {
        "provider": "openai",
        "base_url": f"{root}/v1",
        "model": "fake",
        "max_retries": 4,
        "retry_backoff": 0.01,
        "timeout": 2.0,
        "max_concurrent_requests": 8,
        **overrides,
    }
    return OpenAIChat(msgspec.convert(config, LLMConfig))


def request(index: int) -> ChatRequest:
    a, b = PEOPLE[index % len(PEOPLE)], PEOPLE[(index + 1) % len(PEOPLE)]
    text = f"Note {index}: {a} wrote to {b} from London about the Analytical Engine."
    return ChatRequest(messages=[ChatMessage("system", "Extract entities."), ChatMessage("user", text)])


async def extract_all(chat: OpenAIChat, count: int) -> tuple[list[Extraction | None], Any]:
    import asyncio

    with track_usage(chat.config) as usage:
        results = await asyncio.gather(
            *(complete_or_record(f"c{i}", chat, request(i), Extraction) for i in range(count))
        )
    return results, usage


def test_faults_are_parsed_and_unknown_ones_refused() -> None:
    assert Faults.parse("malformed=0.2, 429=0.1,stall=0.05").rates == {
        "malformed": 0.2,
        "429": 0.1,
        "stall": 0.05,
    }
    with pytest.raises(ValueError, match="unknown faults"):
        Faults.parse("teapot=0.5")


async def test_a_mix_of_faults_loses_no_chunk_and_repairs_save_calls(model_server: str) -> None:
    faults(
        model_server,
        rates={"malformed": 0.3, "schema": 0.05, "429": 0.1, "500": 0.05},
        retry_after=0.01,
        seed=7,
    )
    chat = model(model_server)
    results, usage = await extract_all(chat, 60)
    log = httpx.get(f"{model_server}/_faults").json()
    counts = log["counts"]
    assert counts.get("malformed", 0) >= 5 and counts.get("429", 0) + counts.get("500", 0) >= 1
    # every chunk is extracted or reported failed, and the tally says which
    assert usage.extracted + len(usage.failed) == 60
    assert sum(r is not None for r in results) == usage.extracted
    assert {f.chunk for f in usage.failed} == {f"c{i}" for i, r in enumerate(results) if r is None}
    # a chunk given a good reply (by the fault log) is never among the failed
    good = {entry["key"] for entry in log["calls"] if entry["fault"] == "none"}
    for i, result in enumerate(results):
        if chunk_key({"messages": [{"role": "user", "content": request(i).messages[1].content}]}) in good:
            assert result is not None
    # most malformed replies are repaired in place, not asked again
    assert len(log["calls"]) < 60 + counts.get("429", 0) + counts.get("500", 0) + counts.get("malformed", 0)
    await chat.aclose()


async def test_garbage_every_time_is_reported_with_its_reason(model_server: str) -> None:
    faults(model_server, rates={"garbage": 1.0})
    chat = model(model_server)
    results, usage = await extract_all(chat, 3)
    assert results == [None, None, None]
    assert len(usage.failed) == 3 and "malformed Extraction after 3 attempts" in usage.failed[0].reason
    calls = httpx.get(f"{model_server}/_faults").json()["calls"]
    assert len(calls) == 9 and len({c["key"] for c in calls}) == 3  # each chunk asked three times
    await chat.aclose()


async def test_a_stalled_answer_times_out_and_is_asked_again(model_server: str) -> None:
    faults(model_server, rates={"stall": 0.5}, stall_s=5, seed=3)
    chat = model(model_server, timeout=0.5, max_retries=6)
    results, usage = await extract_all(chat, 6)
    log = httpx.get(f"{model_server}/_faults").json()
    assert log["counts"].get("stall", 0) >= 1
    assert all(r is not None for r in results) and usage.extracted == 6
    await chat.aclose()
    faults(model_server, rates={})
