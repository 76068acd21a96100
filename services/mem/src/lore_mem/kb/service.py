"""`kb` memory: asynchronous multimodal insert into a knowledge graph, and four query modes.

Insert (202 at once, then in the background): captions for the media, chunking, entity and relation
extraction per chunk, one embedding call for the chunks and entities, then one atomic segment commit
that makes the insert queryable. Communities are recomputed after commits (see communities.py).

Query: `naive` ranks chunks by similarity; `local` takes the entities nearest the query (and those it
names), their 1-hop relations and the chunks that mention most of them; `global` ranks community
summaries; `hybrid` is local plus global, plus the nearest chunks (as LightRAG's `mix`), so that text
without named entities is recalled too. With `use_pm`, the parametric-memory model answers first and
retrieval is skipped when it judges its own answer relevant.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import structlog

from lore_common.chunking import chunk_text
from lore_common.providers.chat import ChatMessage, ChatModel, ChatRequest, complete_structured
from lore_common.providers.embedders import Embedder
from lore_common.providers.extraction import Extraction
from lore_core.errors import BadRequest, LoreError, NotFound
from lore_core.settings import ChunkConfig, MemoryKbConfig
from lore_mem.kb.communities import CommunityUpdater
from lore_mem.kb.media import Captioner
from lore_mem.kb.models import (
    ChunkRecord,
    EntityRecord,
    InsertJob,
    QueryRequest,
    RelationRecord,
    Segment,
    now,
)
from lore_mem.kb.store import KbStore, relation_key

log = structlog.get_logger("lore.mem.kb")

MEDIA_KINDS = ("video", "audio", "image")
MAX_QUERY_CHARS = 4096
RELATIONS_PER_ENTITY = 5
NAMED_ENTITY_WEIGHT = 2.0

EXTRACT_SYSTEM = (
    "Extract the entities and relations of the text for a knowledge-graph memory. Reply with one JSON "
    'object {"entities": [{"name", "type", "description"}], "relations": [{"source", "target", '
    '"description", "weight"}]}. Types are short nouns (person, place, organisation, event, concept, '
    "object…). Each description is one sentence from the facts in the text; relations link entities "
    "named in `entities`."
)
ANSWER_SYSTEM = (
    "Answer the question from the memory context only. Cite the passages you use as [n]. If the context "
    "does not contain the answer, say so."
)
PM_SYSTEM = (
    "Answer the question from your own knowledge. Reply with one JSON object "
    '{"answer": str, "relevant": bool}: `relevant` is true only if your answer really answers the '
    "question (false when you do not know or the question is about the user's private memories)."
)


class PmReply(msgspec.Struct):
    answer: str
    relevant: bool


@dataclass
class Context:
    """What retrieval found, by section, and the passages the answer cites (in order)."""

    sections: dict[str, list[str]] = field(default_factory=dict)
    passages: list[str] = field(default_factory=list)

    def text(self) -> str:
        return "\n\n".join(
            f"-----{title}-----\n" + "\n".join(lines) for title, lines in self.sections.items() if lines
        )


def entity_key(name: str) -> str:
    return re.sub(r"\s+", " ", name.strip().lower())


class KbMemory:
    def __init__(
        self,
        store: KbStore,
        embedder: Embedder,
        llm: ChatModel,
        pm_llm: ChatModel | None,
        captioner: Captioner,
        config: MemoryKbConfig,
        chunking: ChunkConfig,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.llm = llm
        self.pm_llm = pm_llm
        self.captioner = captioner
        self.config = config
        self.chunking = chunking
        self.communities = CommunityUpdater(store, llm, embedder, config.community_interval)
        self.jobs: dict[str, InsertJob] = {}
        self._slots = asyncio.Semaphore(max(1, config.max_concurrent_inserts))
        self._commit = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        await asyncio.to_thread(self.store.load)
        for job in await asyncio.to_thread(self.store.unfinished_jobs):
            job.status, job.error, job.updated_at = (
                "failed",
                "interrupted: the mem service stopped before this insert was stored; insert it again",
                now(),
            )
            await asyncio.to_thread(self.store.save_job, job)
            await asyncio.to_thread(shutil.rmtree, self.store.media_dir / job.id, True)
        self.communities.start()
        if self.store.relations and not self.store.communities:
            self.communities.mark_dirty()

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.communities.stop()

    # ------------------------------------------------------------------ insert

    async def insert(self, query: str, media: dict[str, tuple[str, Path]]) -> InsertJob:
        """Queue an insert. `media` maps video/audio/image to (original filename, a temp file we own)."""
        if not query.strip():
            raise BadRequest("query is empty: send the text to remember in the form field `query`")
        job = InsertJob(id=str(uuid.uuid4()), query=query)
        folder = self.store.media_dir / job.id
        for kind, (filename, temp) in media.items():
            # We name the file ourselves; only a plain extension of the client's name is kept.
            suffix = Path(filename).suffix.lower()
            target = folder / (kind + (suffix if re.fullmatch(r"\.\w{1,9}", suffix) else ""))
            await asyncio.to_thread(_move, temp, target)
            job.media[kind] = target.name
        await asyncio.to_thread(self.store.save_job, job)
        self.jobs[job.id] = job
        task = asyncio.create_task(self._process(job))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return job

    async def job(self, job_id: str) -> InsertJob:
        job = self.jobs.get(job_id)
        if job is None and re.fullmatch(r"[A-Za-z0-9\-]{1,64}", job_id):
            job = await asyncio.to_thread(self.store.read_job, job_id)
        if job is None:
            raise NotFound(f"insert job {job_id!r} does not exist")
        return job

    async def _save(self, job: InsertJob, **changes: Any) -> None:
        for name, value in changes.items():
            setattr(job, name, value)
        job.updated_at = now()
        await asyncio.to_thread(self.store.save_job, job)

    async def _process(self, job: InsertJob) -> None:
        async with self._slots:
            try:
                await self._save(job, status="processing")
                text = await self._caption(job)
                segment_parts = await self._extract(job.id, text)
                async with self._commit:
                    segment = Segment(seq=self.store.next_seq(), job_id=job.id, **segment_parts)
                    await asyncio.to_thread(self.store.write_segment, segment)
                    self.store.apply(segment)
                    if self.store.needs_compaction():
                        await asyncio.to_thread(self.store.write_snapshot, self.store.snapshot())
                await self._save(
                    job,
                    status="done",
                    chunks=len(segment.chunks),
                    entities=len(segment.entities),
                    relations=len(segment.relations),
                )
                self.communities.mark_dirty()
            except asyncio.CancelledError:
                job.status, job.error = "failed", "interrupted: the mem service stopped"
                await asyncio.shield(asyncio.to_thread(self.store.save_job, job))
                raise
            except Exception as exc:
                log.warning("kb_insert_failed", job_id=job.id, error=str(exc))
                await self._save(
                    job,
                    status="failed",
                    error=str(exc) if isinstance(exc, LoreError) else f"{type(exc).__name__}: {exc}",
                )
            finally:
                await asyncio.to_thread(shutil.rmtree, self.store.media_dir / job.id, True)
                self.jobs.pop(job.id, None)

    async def _caption(self, job: InsertJob) -> str:
        folder = self.store.media_dir / job.id
        parts = [job.query.strip()]
        for kind in MEDIA_KINDS:
            name = job.media.get(kind)
            if not name:
                continue
            path = folder / name
            if kind == "audio":
                caption, note = await self.captioner.audio(path, name)
            elif kind == "image":
                caption, note = await self.captioner.image(path)
            else:
                caption, note = await self.captioner.video(path)
            setattr(job, f"{kind}caption", caption)
            if note:
                job.notes[kind] = note
            if caption:
                parts.append(f"[{kind}] {caption}")
        if job.media:
            await self._save(job)
        return "\n\n".join(parts)

    async def _extract(self, job_id: str, text: str) -> dict[str, Any]:
        pieces = chunk_text(text, self.chunking.chunk_size, self.chunking.overlap) or [text]
        chunks = [
            ChunkRecord(id=f"{job_id}:{i}", job_id=job_id, text=piece) for i, piece in enumerate(pieces)
        ]
        replies = await asyncio.gather(
            *(
                complete_structured(
                    self.llm,
                    ChatRequest(
                        messages=[ChatMessage("system", EXTRACT_SYSTEM), ChatMessage("user", chunk.text)],
                        task="extract_entities",
                        inputs={"text": chunk.text},
                    ),
                    Extraction,
                )
                for chunk in chunks
            )
        )
        entities: dict[str, EntityRecord] = {}
        relations: dict[tuple[str, str], RelationRecord] = {}
        for chunk, reply in zip(chunks, replies, strict=True):
            for item in reply.entities:
                key = entity_key(item.name)
                if not key:
                    continue
                entity = entities.setdefault(
                    key, EntityRecord(key=key, name=item.name.strip(), type=item.type or "entity")
                )
                if item.description and item.description not in entity.descriptions:
                    entity.descriptions.append(item.description[:500])
                if chunk.id not in entity.chunk_ids:
                    entity.chunk_ids.append(chunk.id)
            for link in reply.relations:
                a, b = entity_key(link.source), entity_key(link.target)
                if not a or not b or a == b:
                    continue
                for key, name in ((a, link.source), (b, link.target)):
                    entities.setdefault(
                        key, EntityRecord(key=key, name=name.strip(), type="entity", chunk_ids=[chunk.id])
                    )
                pair = relation_key(a, b)
                relation = relations.setdefault(
                    pair, RelationRecord(source=pair[0], target=pair[1], weight=0.0)
                )
                relation.weight += max(float(link.weight), 0.0) or 1.0
                if link.description and link.description not in relation.descriptions:
                    relation.descriptions.append(link.description[:500])
                if chunk.id not in relation.chunk_ids:
                    relation.chunk_ids.append(chunk.id)
        entity_list = list(entities.values())
        # Only entities the store does not know yet need a vector (a known one keeps its first).
        fresh = [e for e in entity_list if e.key not in self.store.entity_vectors.rows]
        texts = [c.text for c in chunks] + [
            f"{e.name}: {e.descriptions[0] if e.descriptions else e.type}" for e in fresh
        ]
        vectors = np.asarray(await self.embedder.embed(texts), dtype=np.float32).reshape(len(texts), -1)
        if vectors.shape[1] != self.store.dim:
            raise RuntimeError(
                f"the embedder returned {vectors.shape[1]}-d vectors; the kb store holds {self.store.dim}-d"
            )
        return {
            "chunks": chunks,
            "chunk_vectors": vectors[: len(chunks)].tobytes(),
            "entities": entity_list,
            "vector_keys": [e.key for e in fresh],
            "entity_vectors": vectors[len(chunks) :].tobytes(),
            "relations": list(relations.values()),
        }

    # ------------------------------------------------------------------ query

    async def query(self, request: QueryRequest) -> dict[str, Any]:
        question = request.query.strip()
        if not question:
            raise BadRequest("query is empty: ask a question")
        if len(question) > MAX_QUERY_CHARS:
            raise BadRequest(f"query is longer than {MAX_QUERY_CHARS} characters")
        body: dict[str, Any] = {
            "query": request.query,
            "mode": request.mode,
            "pm_used": False,
            "pm_memory": None,
            "pm_relevant": False,
            "rag_memory": "",
            "final_answer": "",
        }
        if request.use_pm and self.pm_llm is not None:
            pm = await self._ask_pm(question)
            body["pm_memory"], body["pm_relevant"] = pm.answer, pm.relevant
            if pm.relevant:
                body["pm_used"], body["final_answer"] = True, pm.answer
                return body
        try:
            context = await self.retrieve(question, request.mode)
            body["rag_memory"] = context.text()
            body["final_answer"] = await self.llm.complete(
                ChatRequest(
                    messages=[
                        ChatMessage("system", ANSWER_SYSTEM),
                        ChatMessage(
                            "user", f"Context:\n{_numbered(context.passages)}\n\nQuestion: {question}"
                        ),
                    ],
                    task="answer",
                    inputs={"question": question, "passages": context.passages},
                )
            )
        except LoreError:
            raise
        except Exception as exc:
            log.warning("kb_query_failed", mode=request.mode, error=str(exc))
            raise LoreError(f"kb {request.mode} retrieval failed: {exc}", status_code=500) from exc
        return body

    async def _ask_pm(self, question: str) -> PmReply:
        assert self.pm_llm is not None
        try:
            return await complete_structured(
                self.pm_llm,
                ChatRequest(
                    messages=[ChatMessage("system", PM_SYSTEM), ChatMessage("user", question)],
                    task="pm",
                    inputs={"question": question},
                ),
                PmReply,
            )
        except Exception as exc:
            raise LoreError(f"the parametric-memory model failed: {exc}", status_code=500) from exc

    async def retrieve(self, question: str, mode: str) -> Context:
        vector = np.asarray(await self.embedder.embed_query(question), dtype=np.float32).reshape(-1)
        context = Context()
        if mode in ("local", "hybrid"):
            self._local(context, question, vector)
        if mode in ("naive", "hybrid"):
            # Hybrid also takes the nearest chunks, so text without named entities is still recalled.
            nearest = self.store.chunk_vectors.search(vector, self.config.chunk_top_k)
            self._chunks(context, [chunk_id for chunk_id, _ in nearest])
        if mode in ("global", "hybrid"):
            self._global(context, vector)
        return context

    def _chunks(self, context: Context, chunk_ids: Sequence[str]) -> None:
        lines = context.sections.setdefault("Sources", [])
        for chunk_id in chunk_ids:
            chunk = self.store.chunks.get(chunk_id)
            if chunk and chunk.text not in context.passages:
                context.passages.append(chunk.text)
                lines.append(f"[{len(context.passages)}] {chunk.text}")

    def _local(self, context: Context, question: str, vector: np.ndarray[Any, Any]) -> None:
        store = self.store
        # Entities the question names count double; the nearest ones by their similarity.
        weights = {
            key: max(score, 0.0)
            for key, score in store.entity_vectors.search(vector, self.config.entity_top_k)
        }
        named = store.named_in(question)
        weights.update({key: NAMED_ENTITY_WEIGHT for key in named})
        picked = list(weights)
        keys = list(dict.fromkeys(named + picked))
        found = [store.entities[k] for k in keys if k in store.entities]
        context.sections["Entities"] = [
            f"{e.name} ({e.type}): {'; '.join(e.descriptions[:2])}" for e in found
        ]
        relation_lines: list[str] = []
        for key in keys:
            around = [store.relations[relation_key(key, other)] for other in store.neighbours.get(key, ())]
            around.sort(key=lambda r: -r.weight)
            for relation in around[:RELATIONS_PER_ENTITY]:
                a, b = store.entities[relation.source].name, store.entities[relation.target].name
                line = f"{a} -- {b}: {relation.descriptions[0] if relation.descriptions else 'related'}"
                if line not in relation_lines:
                    relation_lines.append(line)
        context.sections["Relations"] = relation_lines
        scores = store.entity_chunks(weights)
        ranked = sorted(scores, key=lambda cid: (-scores[cid], cid))[: self.config.chunk_top_k]
        self._chunks(context, ranked)

    def _global(self, context: Context, vector: np.ndarray[Any, Any]) -> None:
        found = self.store.community_vectors.search(vector, self.config.community_top_k)
        by_id = {c.id: c for c in self.store.communities}
        lines = context.sections.setdefault("Communities", [])
        for community_id, _ in found:
            community = by_id.get(community_id)
            if community is None:
                continue
            context.passages.append(community.summary)
            lines.append(f"[{len(context.passages)}] {community.title}: {community.summary}")


def _numbered(passages: Sequence[str]) -> str:
    return "\n".join(f"[{i + 1}] {p}" for i, p in enumerate(passages)) or "(no memory found)"


def _move(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(source), target)
