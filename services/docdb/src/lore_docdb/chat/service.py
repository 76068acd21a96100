"""Chat over a KB (see docs/docdb.md): five query modes side by side, an answer that cites `[n]`, and
`citations[]` mapping each number to its file. Every outcome is HTTP 200 with `code` 200, 400 or 500.
The answer's events come from `lore_common.answers`, as mem's memory-graph (mem kb) query's do."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import msgspec
import structlog

from lore_common.answers import AnswerEvent, CitedAnswer, Failure, Grounding, Stage, cited_numbers, numbered
from lore_common.providers.chat import ChatMessage, ChatModel, ChatRequest, ModelError, complete_structured
from lore_common.providers.offline import ABSTENTIONS
from lore_common.stores.objects import ObjectStore
from lore_core.bounds import MAX_RESULTS
from lore_core.errors import BadRequest, NotFound, store_outage
from lore_core.settings import QueryDefaults
from lore_docdb.chat.models import (
    MAX_QUERY,
    QUERY_MODES,
    ChatBodyAsSent,
    ChatResponse,
    Citation,
    DataItem,
    Passages,
    QueryInfo,
    Retrieved,
    RetrieveRequest,
)
from lore_docdb.chat.retrieval import Hit, KbTarget, Retriever, Trace, dedupe
from lore_docdb.datasets.paths import path_of
from lore_docdb.knowledge_bases.models import PROCESS_MODES
from lore_docdb.knowledge_bases.store import KnowledgeBaseStore
from lore_docdb.parse.extract import file_type

log = structlog.get_logger("lore.docdb.chat")

MAX_ROUNDS = 3
REWRITES = 3
ANSWER_PASSAGES = 8
PARAGRAPH = "\n\n"

ANSWER_SYSTEM = (
    "You answer questions about a knowledge base. Use only the numbered passages. After each claim, cite "
    "the passages that support it as [n]. If the passages do not contain the answer, say so."
)
DIRECT_SYSTEM = "You are a helpful assistant. Answer the question concisely."
REWRITE_SYSTEM = (
    f"Rewrite the user's question into {REWRITES} different search queries that together cover what the "
    'question asks. Answer with JSON: {"queries": ["...", "...", "..."]}.'
)
JUDGE_SYSTEM = (
    "Decide whether the evidence answers the question. Answer with JSON: "
    '{"sufficient": true or false, '
    '"next_question": "the follow-up search query if not sufficient, else null"}.'
)


class Rewrites(msgspec.Struct):
    queries: list[str]


class Verdict(msgspec.Struct):
    sufficient: bool
    next_question: str | None = None


class ChatInputError(Exception):
    """A client mistake: answered as code 400."""


class KnowledgeBaseMissing(NotFound):
    def __init__(self, name: str) -> None:
        super().__init__(f"knowledge base {name!r} does not exist")


@dataclass(frozen=True)
class Question:
    """A checked question: its text, its KB (row read once), the mode and its bounds."""

    text: str
    kb: KbTarget
    mode: str
    max_results: int
    top_k: int


class ChatService:
    def __init__(
        self,
        *,
        retriever: Retriever,
        llm: ChatModel,
        kb_store: KnowledgeBaseStore,
        objects: ObjectStore | None,
        defaults: Callable[[], QueryDefaults],
    ) -> None:
        self.retriever = retriever
        self.llm = llm
        self.kb_store = kb_store
        self.objects = objects
        self.defaults = defaults

    # ------------------------------------------------------------ entry

    async def chat(self, body: ChatBodyAsSent, request_id: str) -> ChatResponse:
        """The whole answer at once: the `done` body of the stream, with the model asked in one call."""
        reply, _ = await ChatAnswer(self, body, request_id).answer()
        return reply

    def events(self, body: ChatBodyAsSent, request_id: str) -> AsyncIterator[AnswerEvent]:
        """The answer as events (see `lore_common.answers`): `passages` {data, total_count}, `delta`
        {text}, `citations` {citations}, then `done` with the body `chat` returns; a failure is
        `error` {code, message}, then `done` with the failed body."""
        return ChatAnswer(self, body, request_id).events()

    @staticmethod
    def unreadable(message: str, request_id: str) -> ChatResponse:
        """The reply to a body that cannot be read: code 400, with HTTP 200 like every mistake."""
        return ChatResponse(False, 400, message, None, [], 0, None, QueryInfo(), request_id)

    async def validate(self, body: ChatBodyAsSent) -> Question:
        """The question, checked, with the row of its knowledge base (read once per question)."""
        query, kb, user = body.query, body.kb_id, body.user_id
        _require_text("query", query, "send the question as a non-empty string")
        if len(query) > MAX_QUERY:
            raise ChatInputError(f"query is {len(query)} characters long; the limit is {MAX_QUERY}")
        _require_text("kb_id", kb, "name the knowledge base to ask")
        _require_text("user_id", user, "send a non-empty user_id")
        mode = body.query_mode if body.query_mode is not None else "naive"
        if mode not in QUERY_MODES:
            raise ChatInputError(f"query_mode {mode!r} is unknown; use one of {', '.join(QUERY_MODES)}")
        max_results = _bounded("max_results", body.max_results if body.max_results is not None else 20)
        top_k = _bounded("top_k", body.top_k if body.top_k is not None else self.defaults().top_k)
        row = await self.kb_store.cached_kb(kb)
        if row is None:
            raise ChatInputError(f"knowledge base {kb!r} does not exist")
        if row.status != "ready":
            raise ChatInputError(f"knowledge base {kb!r} is being deleted")
        if row.mode is not None and mode not in PROCESS_MODES[row.mode]["query_modes"]:
            allowed = ", ".join(PROCESS_MODES[row.mode]["query_modes"])
            raise ChatInputError(
                f"query_mode {mode!r} does not fit knowledge base {kb!r} (process mode {row.mode}); "
                f"use one of {allowed}"
            )
        return Question(
            text=query.strip(),
            kb=self.retriever.target(row),
            mode=str(mode),
            max_results=max_results,
            top_k=max(top_k, max_results),
        )

    # ------------------------------------------------------------ the five modes

    async def prepare(self, question: Question, trace: Trace) -> tuple[list[Hit], ChatRequest]:
        """The passages a mode retrieves and the model request that answers from them."""
        modes: dict[str, Callable[[KbTarget, str, int, Trace], Awaitable[list[Hit]]]] = {
            "naive": self._naive,
            "rerank": self._rerank,
            "rewriter": self._rewriter,
            "multihop": self._multihop,
        }
        if question.mode == "direct":
            direct = ChatRequest(
                messages=[ChatMessage("system", DIRECT_SYSTEM), ChatMessage("user", question.text)],
                task="direct",
            )
            return [], direct
        started = time.perf_counter()
        hits = await modes[question.mode](question.kb, question.text, question.top_k, trace)
        trace.time("retrieval_ms", started)
        return hits, self._answer_request(question.text, hits[: question.max_results])

    def _threshold(self) -> float:
        return self.defaults().threshold

    async def _naive(self, kb: KbTarget, query: str, top_k: int, trace: Trace) -> list[Hit]:
        return await self.retriever.naive(kb, query, top_k, self._threshold(), trace)

    async def _rerank(self, kb: KbTarget, query: str, top_k: int, trace: Trace) -> list[Hit]:
        return await self.retriever.rerank(kb, query, top_k, self._threshold(), trace)

    async def _rewriter(self, kb: KbTarget, query: str, top_k: int, trace: Trace) -> list[Hit]:
        request = ChatRequest(
            messages=[ChatMessage("system", REWRITE_SYSTEM), ChatMessage("user", query)],
            task="rewrite",
            inputs={"query": query, "n": REWRITES},
        )
        trace.model_calls += 1
        variants = [
            q.strip() for q in (await complete_structured(self.llm, request, Rewrites)).queries if q.strip()
        ]
        variants = list(dict.fromkeys(variants))[:REWRITES] or [query]
        trace.candidates["rewrites"] = len(variants)
        results = await asyncio.gather(
            *(
                self.retriever.naive(kb, variant, top_k, self._threshold(), trace)
                for variant in [query, *variants]
            )
        )
        return dedupe(results)

    async def _multihop(self, kb: KbTarget, query: str, top_k: int, trace: Trace) -> list[Hit]:
        evidence: list[list[Hit]] = []
        question = query
        rounds = 0
        for rounds in range(1, MAX_ROUNDS + 1):
            evidence.append(await self.retriever.naive(kb, question, top_k, self._threshold(), trace))
            if rounds == MAX_ROUNDS:
                break
            texts = [h.text for hits in evidence for h in hits[:ANSWER_PASSAGES]]
            request = ChatRequest(
                messages=[
                    ChatMessage("system", JUDGE_SYSTEM),
                    ChatMessage("user", f"Question: {query}\n\nEvidence:\n" + "\n---\n".join(texts)),
                ],
                task="judge",
                inputs={"question": query, "evidence": texts},
            )
            trace.model_calls += 1
            verdict = await complete_structured(self.llm, request, Verdict)
            if verdict.sufficient or not (verdict.next_question or "").strip():
                break
            question = str(verdict.next_question).strip()
        trace.candidates["rounds"] = rounds
        return dedupe(evidence)

    # ------------------------------------------------------------ answer and citations

    @staticmethod
    def _answer_request(query: str, hits: list[Hit]) -> ChatRequest:
        passages = [h.text for h in hits[:ANSWER_PASSAGES]]
        # The model sees where each passage sits (file, sections, pages) above its text.
        shown = numbered([f"({place(h)})\n{h.text}" for h in hits[:ANSWER_PASSAGES]], separator=PARAGRAPH)
        return ChatRequest(
            messages=[
                ChatMessage("system", ANSWER_SYSTEM),
                ChatMessage("user", f"Passages:\n{shown}\n\nQuestion: {query}"),
            ],
            task="answer",
            inputs={"question": query, "passages": passages},
        )

    async def citations(self, answer: str, hits: list[Hit]) -> list[Citation]:
        """The passages the answer cites as [n]; every passage shown when it cites none, except when the
        offline model said that nothing answers (sources listed under that would read as its grounds)."""
        if answer.strip() in ABSTENTIONS:
            return []
        shown = hits[:ANSWER_PASSAGES]
        numbers = cited_numbers(answer, len(shown)) or list(range(1, len(shown) + 1))
        citations = []
        for number in numbers:
            hit = shown[number - 1]
            citations.append(
                Citation(
                    number,
                    path_of(hit.file),
                    hit.dataset,
                    await self._file_url(hit),
                    chunk_id=hit.chunk_id,
                    heading_path=list(hit.heading_path),
                    page=hit.page_start,
                    page_end=hit.page_end,
                )
            )
        return citations

    async def _file_url(self, hit: Hit) -> str | None:
        if not hit.file or self.objects is None:
            return None
        try:
            url = await self.objects.presigned_get(f"{hit.dataset}/{hit.file}")
        except Exception as exc:  # a citation without a link beats a failed answer
            log.warning("presign_failed", file=hit.file, error=str(exc))
            return None
        if url and hit.page_start is not None and hit.file.lower().endswith(".pdf"):
            url += f"#page={hit.page_start}"  # PDF viewers open the file at that page
        return url

    @staticmethod
    def item(kb: str, hit: Hit) -> DataItem:
        return DataItem(
            kb_id=kb,
            kb_name=path_of(hit.file) or hit.dataset,
            score=round(hit.score, 6),
            content=hit.text,
            source_id=[hit.chunk_id],
            dataset=hit.dataset,
            heading_path=list(hit.heading_path),
            page=hit.page_start,
            page_end=hit.page_end,
        )

    # ------------------------------------------------------------ retrieval API

    async def retrieve(self, request: RetrieveRequest) -> Retrieved:
        """The chunks chat would answer from, without a model call: 404 for an unknown KB."""
        row = await self.kb_store.get_kb(request.kb_id)
        if row is None:
            raise KnowledgeBaseMissing(request.kb_id)
        if not request.query.strip():
            raise BadRequest("query is empty")
        started = time.perf_counter()
        trace = Trace()
        defaults = self.defaults()
        max_results = max(1, request.max_results)
        k = max(request.top_k or defaults.top_k, max_results)
        limit = defaults.threshold if request.threshold is None else request.threshold
        kb = self.retriever.target(row)
        if request.mode == "rerank":
            hits = await self.retriever.rerank(kb, request.query, k, limit, trace)
        else:
            hits = await self.retriever.naive(kb, request.query, k, limit, trace)
        items = [self.item(request.kb_id, hit) for hit in hits[:max_results]]
        info = info_of(trace, started)
        info.mode, info.top_k = request.mode, k
        return Retrieved(data=items, total_count=len(items), query_info=info)


class ChatAnswer(CitedAnswer[Passages, Citation, ChatResponse]):
    """One chat question's answer: docdb's passages, citations and bodies around the shared stream."""

    def __init__(self, chat: ChatService, body: ChatBodyAsSent, request_id: str) -> None:
        super().__init__(model=chat.llm)
        self.chat = chat
        self.body = body
        self.request_id = request_id
        self.started = time.perf_counter()
        self.trace = Trace()
        self.info = QueryInfo(model=chat.llm.name)
        self.question: Question | None = None
        self.hits: list[Hit] = []

    async def ground(self) -> Grounding[Passages]:
        question = self.question = await self.chat.validate(self.body)
        self.info.mode, self.info.kb_id = question.mode, question.kb.name
        self.info.top_k, self.info.max_results = question.top_k, question.max_results
        self.hits, request = await self.chat.prepare(question, self.trace)
        data = [self.chat.item(question.kb.name, hit) for hit in self.hits[: question.max_results]]
        return Grounding(Passages(data, len(data)), request)

    @contextlib.contextmanager
    def generating(self) -> Iterator[None]:
        started = time.perf_counter()
        self.trace.model_calls += 1
        try:
            yield
        finally:
            self.trace.time("model_ms", started)

    async def cite(self, answer: str, grounding: Grounding[Passages]) -> list[Citation]:
        assert self.question is not None  # ground() ran
        return [] if self.question.mode == "direct" else await self.chat.citations(answer, self.hits)

    def done(self, answer: str, grounding: Grounding[Passages], citations: list[Citation]) -> ChatResponse:
        data = grounding.passages.data
        info = self._finished_info()
        return ChatResponse(True, 200, "ok", answer, data, len(data), citations, info, self.request_id)

    def failed(self, exc: Exception, stage: Stage) -> Failure[ChatResponse]:
        if isinstance(exc, ChatInputError):
            code, message = 400, str(exc)
        else:
            log.warning("chat_failed", error=f"{type(exc).__name__}: {exc}")
            outage = store_outage(exc)
            where = "model" if isinstance(exc, ModelError) else "retrieval"
            code = 500
            message = f"{where} failed: " + (outage[1] if outage else f"{type(exc).__name__}: {exc}")
        body = ChatResponse(False, code, message, None, [], 0, None, self._finished_info(), self.request_id)
        return Failure(code, message, body)

    def _finished_info(self) -> QueryInfo:
        finished = info_of(self.trace, self.started)
        return msgspec.structs.replace(
            self.info,
            timings_ms=finished.timings_ms,
            candidates=finished.candidates,
            model_calls=finished.model_calls,
        )


SLIDE_SUFFIXES = (".pptx", ".ppt", ".odp", ".key")  # a presentation's pages are its slides


def place(hit: Hit) -> str:
    """Where a passage sits, as the model is shown it: `guide.pdf, p. 3, Guide > Install`; in a
    presentation `deck.pptx, slide 3`."""
    parts = [path_of(hit.file) or hit.dataset]
    if hit.page_start is not None:
        first, last = hit.page_start, hit.page_end if hit.page_end is not None else hit.page_start
        if file_type(hit.file) in SLIDE_SUFFIXES:
            parts.append(f"slide {first}" if last == first else f"slides {first}-{last}")
        else:
            parts.append(f"p. {first}" if last == first else f"pp. {first}-{last}")
    if hit.heading_path:
        parts.append(" > ".join(hit.heading_path))
    return ", ".join(p for p in parts if p)


def info_of(trace: Trace, started: float) -> QueryInfo:
    """Time per stage (and in all), candidates per retriever and model calls of a question."""
    return QueryInfo(
        timings_ms={**trace.timings_ms, "total_ms": round((time.perf_counter() - started) * 1000, 2)},
        candidates=trace.candidates,
        model_calls=trace.model_calls,
    )


def _bounded(field: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_RESULTS:
        raise ChatInputError(f"{field} must be an integer from 1 to {MAX_RESULTS}; got {value!r}")
    return value


_JSON_TYPES = {bool: "true or false", int: "a number", float: "a number", list: "an array", dict: "an object"}


def _require_text(field: str, value: Any, what_to_send: str) -> None:
    """A 400 that says which of missing, wrong type or blank the field is."""
    if value is None:
        raise ChatInputError(f"{field} is missing: {what_to_send}")
    if not isinstance(value, str):
        kind = _JSON_TYPES.get(type(value), type(value).__name__)
        raise ChatInputError(f"{field} must be a string, not {kind}")
    if not value.strip():
        raise ChatInputError(f"{field} is empty: {what_to_send}")
