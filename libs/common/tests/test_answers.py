"""The cited answer's events: the order every service streams, and the one way a failure ends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest

from lore_common.answers import (
    AnswerError,
    Citations,
    CitedAnswer,
    Delta,
    Failure,
    Grounding,
    Stage,
    cited_numbers,
    numbered,
)
from lore_common.providers.chat import ChatRequest


class Model:
    """A model that writes its answer in pieces, or breaks after the first one."""

    name = "test:model"

    def __init__(self, pieces: list[str], *, break_after: int | None = None) -> None:
        self.pieces = pieces
        self.break_after = break_after

    async def complete(self, request: ChatRequest) -> str:
        if self.break_after is not None:
            raise RuntimeError("the model went away")
        return "".join(self.pieces)

    async def stream(self, request: ChatRequest) -> AsyncIterator[str]:
        for i, piece in enumerate(self.pieces):
            if self.break_after is not None and i == self.break_after:
                raise RuntimeError("the model went away")
            yield piece

    async def aclose(self) -> None:
        return None


class Body(msgspec.Struct):
    answer: str
    cited: list[int]


class Answer(CitedAnswer[list[str], int, Body]):
    def __init__(self, model: Model, *, fail_at: Stage | None = None, known: str | None = None) -> None:
        super().__init__(model=model)
        self.fail_at = fail_at
        self.known = known
        self.stages: list[Stage] = []

    async def ground(self) -> Grounding[list[str]]:
        if self.fail_at == "passages":
            raise LookupError("no such collection")
        passages = ["Grace Hopper wrote A-0.", "COBOL came later."]
        if self.known is not None:
            return Grounding(passages, answer=self.known)
        return Grounding(passages, ChatRequest(messages=[], task="answer"))

    async def cite(self, answer: str, grounding: Grounding[list[str]]) -> list[int]:
        return cited_numbers(answer, len(grounding.passages))

    def done(self, answer: str, grounding: Grounding[list[str]], citations: list[int]) -> Body:
        return Body(answer, citations)

    def failed(self, exc: Exception, stage: Stage) -> Failure[Body]:
        self.stages.append(stage)
        return Failure(500, f"{stage} failed: {exc}", Body("", []))


async def collect(events: AsyncIterator[tuple[str, Any]]) -> list[tuple[str, Any]]:
    return [event async for event in events]


async def test_a_streamed_answer_is_passages_deltas_citations_then_done() -> None:
    events = await collect(Answer(Model(["Hopper ", "wrote A-0 [1]", " [7]."])).events())
    assert [name for name, _ in events] == ["passages", "delta", "delta", "delta", "citations", "done"]
    assert events[1][1] == Delta("Hopper ")
    assert events[-2][1] == Citations([1])  # [7] names no passage
    assert events[-1][1] == Body("Hopper wrote A-0 [1] [7].", [1])


async def test_without_streaming_the_whole_answer_is_one_delta_and_the_same_done() -> None:
    answer = Answer(Model(["Hopper ", "wrote A-0 [2]."]))
    events = await collect(answer.events(stream=False))
    assert [name for name, _ in events] == ["passages", "delta", "citations", "done"]
    assert await Answer(Model(["Hopper ", "wrote A-0 [2]."])).answer() == (
        Body("Hopper wrote A-0 [2].", [2]),
        None,
    )


async def test_an_answer_known_without_the_model_streams_as_one_delta() -> None:
    events = await collect(Answer(Model([], break_after=0), known="Paris.").events())
    assert events[1:] == [
        ("delta", Delta("Paris.")),
        ("citations", Citations([])),
        ("done", Body("Paris.", [])),
    ]


@pytest.mark.parametrize("stream", [True, False])
async def test_a_model_failing_mid_answer_ends_with_the_error_event_then_done(stream: bool) -> None:
    answer = Answer(Model(["Hopper ", "wrote"], break_after=1))
    events = await collect(answer.events(stream=stream))
    names = [name for name, _ in events]
    assert names == (["passages", "delta", "error", "done"] if stream else ["passages", "error", "done"])
    assert events[-2][1] == AnswerError(500, "answer failed: the model went away")
    assert events[-1][1] == Body("", []) and answer.stages == ["answer"]


async def test_a_retrieval_failure_is_the_error_event_then_done_before_any_passage() -> None:
    answer = Answer(Model(["x"]), fail_at="passages")
    events = await collect(answer.events())
    assert [name for name, _ in events] == ["error", "done"] and answer.stages == ["passages"]
    body, error = await Answer(Model(["x"]), fail_at="passages").answer()
    assert error == AnswerError(500, "passages failed: no such collection") and body == Body("", [])


def test_events_encode_as_the_api_reference_shows_them() -> None:
    assert msgspec.json.decode(msgspec.json.encode(AnswerError(400, "query is empty"))) == {
        "code": 400,
        "message": "query is empty",
    }
    assert msgspec.json.decode(msgspec.json.encode(Citations([{"index": 1}]))) == {
        "citations": [{"index": 1}]
    }


def test_numbered_passages_and_the_numbers_an_answer_cites() -> None:
    assert numbered(["a", "b"]) == "[1] a\n[2] b"
    assert numbered(["a", "b"], separator="\n\n") == "[1] a\n\n[2] b"
    assert cited_numbers("see [2], [1] and [2]; not [0] or [3]", 2) == [1, 2]
