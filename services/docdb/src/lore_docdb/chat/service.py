"""Chat over a KB (contract 4.2): five query modes side by side, an answer that cites `[n]`, and
`citations[]` mapping each number to its file. Every outcome is HTTP 200 with `code` 200, 400 or 500."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import msgspec
import structlog

from lore_common.providers.chat import ChatMessage, ChatModel, ChatRequest, ModelError, complete_structured
from lore_common.stores.objects import ObjectStore
from lore_core.bounds import MAX_RESULTS
from lore_core.errors import store_outage
from lore_core.settings import QueryDefaults
from lore_docdb.chat.models import (
    MAX_QUERY,
    QUERY_MODES,
    ChatRequestBody,
    ChatResponse,
    Citation,
    DataItem,
)
from lore_docdb.chat.retrieval import Hit, Retriever, Trace, dedupe
from lore_docdb.index.store import IndexStore
from lore_docdb.knowledge_bases.models import PROCESS_MODES

log = structlog.get_logger("lore.docdb.chat")

MAX_ROUNDS = 3
REWRITES = 3
ANSWER_PASSAGES = 8
_CITE = re.compile(r"\[(\d{1,3})\]")

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


class ChatService:
    def __init__(
        self,
        retriever: Retriever,
        llm: ChatModel,
        index: IndexStore,
        objects: ObjectStore | None,
        defaults: Callable[[], QueryDefaults],
    ) -> None:
        self.retriever = retriever
        self.llm = llm
        self.index = index
        self.objects = objects
        self.defaults = defaults

    # ------------------------------------------------------------ entry

    async def chat(self, body: ChatRequestBody, request_id: str) -> ChatResponse:
        """The whole answer at once: the last event of the stream, with the model asked in one call."""
        final: ChatResponse | None = None
        async for name, payload in self.events(body, request_id, stream=False):
            if name == "done":
                final = payload
        assert final is not None  # events() always ends with `done`
        return final

    async def events(
        self, body: ChatRequestBody, request_id: str, *, stream: bool = True
    ) -> AsyncIterator[tuple[str, Any]]:
        """The answer as events: `passages` (what was retrieved), `delta` (answer text as the model
        writes it), `citations`, then `done` with the body the non-streaming call returns; a failure is
        an `error` event, then `done` with the failed body."""
        started = time.perf_counter()
        trace = Trace()
        info: dict[str, Any] = {"model": self.llm.name}
        try:
            query, kb, mode, max_results, top_k = await self._validate(body)
            info.update({"mode": mode, "kb_id": kb, "top_k": top_k, "max_results": max_results})
            hits, request = await self._prepare(mode, kb, query, top_k, max_results, trace)
            data = [self._item(kb, hit) for hit in hits[:max_results]]
            yield "passages", {"data": data, "total_count": len(data)}
            parts: list[str] = []
            model_started = time.perf_counter()
            trace.model_calls += 1
            try:
                if stream:
                    async for piece in self.llm.stream(request):
                        parts.append(piece)
                        yield "delta", {"text": piece}
                else:
                    parts.append(await self.llm.complete(request))
            finally:
                trace.time("model_ms", model_started)
            answer = "".join(parts)
            citations = await self._citations(answer, hits) if mode != "direct" else []
            if stream:
                yield "citations", {"citations": citations}
            info.update(self._info(trace, started))
            yield "done", ChatResponse(True, 200, "ok", answer, data, len(data), citations, info, request_id)
        except ChatInputError as exc:
            info.update(self._info(trace, started))
            failed = ChatResponse(False, 400, str(exc), None, [], 0, None, info, request_id)
            if stream:
                yield "error", {"code": 400, "message": failed.message}
            yield "done", failed
        except Exception as exc:
            log.warning("chat_failed", error=f"{type(exc).__name__}: {exc}")
            info.update(self._info(trace, started))
            stage = "model" if isinstance(exc, ModelError) else "retrieval"
            outage = store_outage(exc)
            message = f"{stage} failed: " + (outage[1] if outage else f"{type(exc).__name__}: {exc}")
            failed = ChatResponse(False, 500, message, None, [], 0, None, info, request_id)
            if stream:
                yield "error", {"code": 500, "message": message}
            yield "done", failed

    @staticmethod
    def _info(trace: Trace, started: float) -> dict[str, Any]:
        return {
            "timings_ms": {**trace.timings_ms, "total_ms": round((time.perf_counter() - started) * 1000, 2)},
            "candidates": trace.candidates,
            "model_calls": trace.model_calls,
        }

    async def _validate(self, body: ChatRequestBody) -> tuple[str, str, str, int, int]:
        query, kb, user = body.query, body.kb_id, body.user_id
        if not isinstance(query, str) or not query.strip():
            raise ChatInputError("query is empty: send the question as a non-empty string")
        if len(query) > MAX_QUERY:
            raise ChatInputError(f"query is {len(query)} characters long; the limit is {MAX_QUERY}")
        if not isinstance(kb, str) or not kb.strip():
            raise ChatInputError("kb_id is missing: name the knowledge base to ask")
        if not isinstance(user, str) or not user.strip():
            raise ChatInputError("user_id is missing: send a non-empty user_id")
        mode = body.query_mode if body.query_mode is not None else "naive"
        if mode not in QUERY_MODES:
            raise ChatInputError(f"query_mode {mode!r} is unknown; use one of {', '.join(QUERY_MODES)}")
        max_results = _bounded("max_results", body.max_results if body.max_results is not None else 20)
        top_k = _bounded("top_k", body.top_k if body.top_k is not None else self.defaults().top_k)
        row = await self.index.cached_kb(kb)
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
        return query.strip(), kb, str(mode), max_results, max(top_k, max_results)

    # ------------------------------------------------------------ the five modes

    async def _prepare(
        self, mode: str, kb: str, query: str, top_k: int, max_results: int, trace: Trace
    ) -> tuple[list[Hit], ChatRequest]:
        """The passages a mode retrieves and the model request that answers from them."""
        modes: dict[str, Callable[[str, str, int, Trace], Awaitable[list[Hit]]]] = {
            "naive": self._naive,
            "rerank": self._rerank,
            "rewriter": self._rewriter,
            "multihop": self._multihop,
        }
        if mode == "direct":
            direct = ChatRequest(
                messages=[ChatMessage("system", DIRECT_SYSTEM), ChatMessage("user", query)], task="direct"
            )
            return [], direct
        started = time.perf_counter()
        hits = await modes[mode](kb, query, top_k, trace)
        trace.time("retrieval_ms", started)
        return hits, self._answer_request(query, hits[:max_results])

    def _threshold(self) -> float:
        return self.defaults().threshold

    async def _naive(self, kb: str, query: str, top_k: int, trace: Trace) -> list[Hit]:
        return await self.retriever.naive(kb, query, top_k, self._threshold(), trace)

    async def _rerank(self, kb: str, query: str, top_k: int, trace: Trace) -> list[Hit]:
        return await self.retriever.rerank(kb, query, top_k, self._threshold(), trace)

    async def _rewriter(self, kb: str, query: str, top_k: int, trace: Trace) -> list[Hit]:
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

    async def _multihop(self, kb: str, query: str, top_k: int, trace: Trace) -> list[Hit]:
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
        numbered = "\n\n".join(f"[{i}] {text}" for i, text in enumerate(passages, start=1))
        return ChatRequest(
            messages=[
                ChatMessage("system", ANSWER_SYSTEM),
                ChatMessage("user", f"Passages:\n{numbered}\n\nQuestion: {query}"),
            ],
            task="answer",
            inputs={"question": query, "passages": passages},
        )

    async def _citations(self, answer: str, hits: list[Hit]) -> list[Citation]:
        shown = hits[:ANSWER_PASSAGES]
        cited = sorted({int(n) for n in _CITE.findall(answer) if 1 <= int(n) <= len(shown)})
        numbers = cited or list(range(1, len(shown) + 1))
        citations = []
        for number in numbers:
            hit = shown[number - 1]
            citations.append(Citation(number, hit.file, hit.dataset, await self._file_url(hit)))
        return citations

    async def _file_url(self, hit: Hit) -> str | None:
        if self.objects is None or not hit.file:
            return None
        try:
            return await self.objects.presigned_get(f"{hit.dataset}/{hit.file}")
        except Exception as exc:  # a citation without a link beats a failed answer
            log.warning("presign_failed", file=hit.file, error=str(exc))
            return None

    @staticmethod
    def _item(kb: str, hit: Hit) -> DataItem:
        return DataItem(
            kb_id=kb,
            kb_name=hit.file or hit.dataset,
            score=round(hit.score, 6),
            content=hit.text,
            source_id=[hit.chunk_id],
            dataset=hit.dataset,
        )

    # ------------------------------------------------------------ retrieval API

    async def retrieve(
        self, kb: str, query: str, mode: str, top_k: int | None, max_results: int, threshold: float | None
    ) -> tuple[list[DataItem], dict[str, Any]]:
        started = time.perf_counter()
        trace = Trace()
        defaults = self.defaults()
        k = max(top_k or defaults.top_k, max_results)
        limit = defaults.threshold if threshold is None else threshold
        if mode == "rerank":
            hits = await self.retriever.rerank(kb, query, k, limit, trace)
        else:
            hits = await self.retriever.naive(kb, query, k, limit, trace)
        items = [self._item(kb, hit) for hit in hits[:max_results]]
        return items, {"mode": mode, "top_k": k, **self._info(trace, started)}


def _bounded(field: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_RESULTS:
        raise ChatInputError(f"{field} must be an integer from 1 to {MAX_RESULTS}; got {value!r}")
    return value
