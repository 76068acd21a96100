"""The cited answer: one stream of events for docdb chat and the memory graph's query (mem kb).

A question's answer is always these events, in this order:

    passages   what retrieval found (each service's own shape)
    delta      {text}: the answer as the model writes it (not streaming: one delta, the whole answer;
               none for an empty answer)
    citations  {citations: [...]}: the passages the answer cites as [n] (each service's own shape)
    done       the body the non-streaming call answers

and a failure at any step ends it with

    error      {code, message}: the status and why
    done       the body the non-streaming call answers for that failure

A service says only what differs: how passages are found (`ground`), how citations and bodies are
shaped (`cite`, `done`, `failed`); the order of events, the model call and the error event are here.
"""

from __future__ import annotations

import contextlib
import re
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

import msgspec

from lore_common.providers.chat import ChatModel, ChatRequest

PASSAGES = "passages"
DELTA = "delta"
CITATIONS = "citations"
ERROR = "error"
DONE = "done"

# Where a failure happened: finding the passages (validation included), the model's answer, citing.
Stage = Literal["passages", "answer", "citations"]
# One event: its name and its payload (a msgspec Struct, or builtins), as `lore_core.sse` sends it.
AnswerEvent = tuple[str, Any]

P = TypeVar("P")
C = TypeVar("C")
B = TypeVar("B")

_CITE = re.compile(r"\[(\d{1,3})\]")


def cited_numbers(answer: str, count: int) -> list[int]:
    """The passage numbers (1 to `count`) an answer cites as [n], in number order."""
    return sorted({int(n) for n in _CITE.findall(answer) if 1 <= int(n) <= count})


def numbered(passages: Sequence[str], separator: str = "\n") -> str:
    """Passages as the model sees them: `[1] text`, `[2] text`…, so that it can cite them."""
    return separator.join(f"[{i}] {text}" for i, text in enumerate(passages, start=1))


class Delta(msgspec.Struct):
    """A piece of the answer's text."""

    text: str


class Citations(msgspec.Struct, Generic[C]):
    """The passages the answer cites."""

    citations: list[C]


class AnswerError(msgspec.Struct):
    """Why the answer failed: `code` is the HTTP status the failure means, `message` says what happened."""

    code: int
    message: str


@dataclass
class Grounding(Generic[P]):
    """What retrieval found: the `passages` event, and the model request that answers from them, or
    the answer itself where no model call is needed (`request` None)."""

    passages: P
    request: ChatRequest | None = None
    answer: str = ""


@dataclass
class Failure(Generic[B]):
    """A failed answer: the `error` event's code and message, and the body `done` carries."""

    code: int
    message: str
    body: B


class CitedAnswer(ABC, Generic[P, C, B]):
    """One question's answer, as events (`events`) or at once (`answer`)."""

    def __init__(self, *, model: ChatModel) -> None:
        self.model = model

    @abstractmethod
    async def ground(self) -> Grounding[P]:
        """Check the question and find the passages; an exception here is a failure at `passages`."""

    @abstractmethod
    async def cite(self, answer: str, grounding: Grounding[P]) -> list[C]:
        """The citations of a finished answer."""

    @abstractmethod
    def done(self, answer: str, grounding: Grounding[P], citations: list[C]) -> B:
        """The body of a finished answer."""

    @abstractmethod
    def failed(self, exc: Exception, stage: Stage) -> Failure[B]:
        """The error event and the body of an answer that failed at `stage`."""

    @contextlib.contextmanager
    def generating(self) -> Iterator[None]:
        """Around the model's answer (a service times it here)."""
        yield

    async def events(self, *, stream: bool = True) -> AsyncIterator[AnswerEvent]:
        """The events of the answer. `stream`: the model writes the answer piece by piece (a `delta`
        each); otherwise it is asked in one call. When the client goes away the iteration is closed,
        which closes the model's stream too."""
        stage: Stage = "passages"
        try:
            grounding = await self.ground()
            yield PASSAGES, grounding.passages
            stage = "answer"
            answer = grounding.answer
            if grounding.request is not None:
                parts: list[str] = []
                with self.generating():
                    if stream:
                        async for piece in self.model.stream(grounding.request):
                            parts.append(piece)
                            yield DELTA, Delta(piece)
                    else:
                        parts.append(await self.model.complete(grounding.request))
                answer = "".join(parts)
            if answer and (grounding.request is None or not stream):
                yield DELTA, Delta(answer)
            stage = "citations"
            citations = await self.cite(answer, grounding)
            yield CITATIONS, Citations(citations)
            body = self.done(answer, grounding, citations)
        except Exception as exc:
            failure = self.failed(exc, stage)
            yield ERROR, AnswerError(failure.code, failure.message)
            yield DONE, failure.body
            return
        yield DONE, body

    async def answer(self) -> tuple[B, AnswerError | None]:
        """The whole answer at once (the model asked in one call): the `done` body, and the error
        when it failed."""
        error: AnswerError | None = None
        async for name, payload in self.events(stream=False):
            if name == ERROR:
                error = payload
            elif name == DONE:
                return payload, error
        raise AssertionError("events() always ends with done")  # pragma: no cover
