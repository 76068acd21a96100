"""The memory graph (mem kb): asynchronous multimodal insert into a knowledge graph, and four query
modes (not docdb's knowledge bases).

Insert (202 at once, then in the background): captions for the media, chunking, entity and relation
extraction per chunk, one embedding call for the chunks and entities, then one atomic segment commit
that makes the insert queryable. Communities are recomputed after commits (see communities.py).
Every insert, job and query belongs to one workspace (the default one unless named): a graph of its
own, which no call naming another workspace reads or changes.
An insert whose replica died runs again when the replica restarts (`resume_interrupted`): each
caption is recorded as it is made and each chunk's extraction is in the extraction cache as soon as it
arrives, so the run asks the models only for what was not finished.

Query: `naive` ranks chunks by similarity; `local` takes the entities nearest the query (and those it
names), their 1-hop relations and the chunks that mention most of them; `global` ranks community
summaries; `hybrid` is local plus global, plus the nearest chunks (as LightRAG's `mix`), so that text
without named entities is recalled too. With `use_pm`, the parametric-memory model answers first and
retrieval is skipped when it judges its own answer relevant. The answer's events come from
`lore_common.answers`, as docdb chat's do.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import structlog
from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncConnection

from lore_common.answers import (
    AnswerEvent,
    CitedAnswer,
    Failure,
    Grounding,
    Stage,
    cited_numbers,
    numbered,
)
from lore_common.chunking import chunk_text
from lore_common.entities import type_label
from lore_common.jobs import JobRunner
from lore_common.providers.chat import (
    ChatMessage,
    ChatModel,
    ChatRequest,
    StructuredCache,
    complete_or_record,
    complete_structured,
)
from lore_common.providers.embedders import Embedder
from lore_common.providers.extraction import EXTRACTION_PROMPT_VERSION, Extraction
from lore_common.providers.usage import begin_usage, check_failed_share
from lore_common.stores.sql import advisory_lock
from lore_common.text import unmarked
from lore_core.bounds import QUERY_CHARS
from lore_core.errors import BadRequest, Conflict, LoreError, NotFound, store_outage
from lore_core.settings import ChunkConfig, MemoryKbConfig
from lore_mem.kb.communities import CommunityUpdater
from lore_mem.kb.legacy import import_file_store
from lore_mem.kb.media import Captioner
from lore_mem.kb.models import (
    DEFAULT_WORKSPACE,
    INTERRUPTED,
    INTERRUPTED_AGAIN,
    MAX_KEY,
    ChunkRecord,
    EntityRecord,
    InsertDeleted,
    InsertJob,
    InsertPage,
    KbAnswer,
    KbCitation,
    KbPassages,
    QueryFailed,
    QueryRequest,
    RelationRecord,
    Segment,
)
from lore_mem.kb.store import Forgotten, KbStore, relation_key

log = structlog.get_logger("lore.mem.kb")

MEDIA_KINDS = ("video", "audio", "image")
MAX_QUERY_CHARS = QUERY_CHARS
RELATIONS_PER_ENTITY = 5
NAMED_ENTITY_WEIGHT = 2.0

EXTRACT_SYSTEM = (
    "Extract the entities and relations of the text for a knowledge-graph memory. Reply with one JSON "
    'object {"entities": [{"name", "type", "description"}], "relations": [{"source", "target", '
    '"description", "weight"}]}. Types are short nouns (person, place, organisation, event, concept, '
    "object…). Each description is one sentence from the facts in the text; relations link entities "
    "named in `entities`."
)
NO_MEMORY = "(no memory found)"
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


class KbService:
    def __init__(
        self,
        *,
        store: KbStore,
        runner: JobRunner[InsertJob],
        media_dir: Path,
        embedder: Embedder,
        llm: ChatModel,
        pm_llm: ChatModel | None,
        captioner: Captioner,
        config: MemoryKbConfig,
        chunking: ChunkConfig,
        leads: Callable[[], Awaitable[bool]],
        cache: StructuredCache | None = None,
    ) -> None:
        self.store = store
        self.cache = cache  # extraction results, shared by replicas (providers.cache)
        self.runner = runner
        # Uploaded media wait here (on the replica that took the insert) until their job ends.
        self.media_dir = media_dir
        self.embedder = embedder
        self.llm = llm
        self.pm_llm = pm_llm
        self.captioner = captioner
        self.config = config
        self.chunking = chunking
        self.communities = CommunityUpdater(store, llm, embedder, config.community_interval, leads)
        self._slots = asyncio.Semaphore(max(1, config.max_concurrent_inserts))

    # ------------------------------------------------------------------ lifecycle

    async def start(self, legacy_root: Path) -> None:
        await self.store.ensure()
        async with advisory_lock(self.store.engine, "lore-mem-kb-import"):
            imported = await import_file_store(legacy_root, self.store, self.runner.store)
        if imported:
            log.info("kb_inserts_imported", count=imported)
        shared = self.store.engine.dialect.name != "sqlite"
        await self._recover(shared)
        self.communities.start()

    async def _recover(self, shared: bool) -> None:
        """At start-up, before new work: run again the inserts this replica left unfinished (on SQLite,
        every unfinished one), or fail those that cannot or should not run again."""
        jobs = self.runner.store
        left = await jobs.list_jobs(
            statuses=jobs.lifecycle.unfinished,
            owner=self.runner.owner if shared else None,
            newest_first=False,
        )
        for job in left:
            reason = self._why_not_resumed(job)
            if reason is not None:
                failed = await jobs.transition(
                    job.id,
                    jobs.lifecycle.failed,
                    when=jobs.lifecycle.unfinished,
                    change=_failing(reason),
                )
                if failed is not None:
                    await self.drop_media([failed])
                log.warning("kb_insert_interrupted", job_id=job.id, error=reason)
                continue
            # Conditional: the leading replica may have failed it as silent meanwhile.
            again = await jobs.transition(
                job.id,
                jobs.lifecycle.submitted,
                when=jobs.lifecycle.unfinished,
                change=lambda j: msgspec.structs.replace(
                    j, error=None, waiting_for=None, resumed=j.resumed + 1
                ),
            )
            if again is not None:
                log.warning("kb_insert_resumed", job_id=job.id, times=again.resumed)
                await self.runner.submit(again, self._process, self._finisher(again))

    def _why_not_resumed(self, job: InsertJob) -> str | None:
        """Why an interrupted insert fails rather than runs again; None when it runs again."""
        if not self.config.resume_interrupted:
            return INTERRUPTED
        if job.resumed >= self.config.resume_attempts:
            return INTERRUPTED_AGAIN.format(times=job.resumed + 1)
        folder = self.media_dir / job.id
        for kind, name in job.media.items():
            if not self._captioned(job, kind) and not (folder / name).is_file():
                return f"{INTERRUPTED} (its {kind} file is gone)"
        return None

    async def drop_media(self, jobs: list[InsertJob]) -> None:
        for job in jobs:
            await asyncio.to_thread(shutil.rmtree, self.media_dir / job.id, True)

    async def stop(self) -> None:
        await self.runner.shutdown()
        await self.communities.stop()

    # ------------------------------------------------------------------ insert

    async def insert(
        self, query: str, media: dict[str, tuple[str, Path]], workspace: str = DEFAULT_WORKSPACE
    ) -> InsertJob:
        """Queue an insert. `media` maps video/audio/image to (original filename, a temp file we own)."""
        if not query.strip():
            raise BadRequest("query is empty: send the text to remember in the form field `query`")
        job = InsertJob(id=str(uuid.uuid4()), query=query, workspace=workspace)
        folder = self.media_dir / job.id
        for kind, (filename, temp) in media.items():
            # We name the file ourselves; only a plain extension of the client's name is kept.
            suffix = Path(filename).suffix.lower()
            target = folder / (kind + (suffix if re.fullmatch(r"\.\w{1,9}", suffix) else ""))
            await asyncio.to_thread(_move, temp, target)
            job.media[kind] = target.name
        return await self.runner.submit(job, self._process, self._finisher(job))

    def _finisher(self, job: InsertJob) -> Callable[[InsertJob], Awaitable[None]]:
        """What follows the job's end, done or failed: its media go; a done insert changes the graph.
        A job left unfinished by a shutdown keeps its media for the next start to resume it."""
        folder = self.media_dir / job.id

        async def finished(last: InsertJob) -> None:
            if last.status in self.runner.lifecycle.unfinished:
                return
            await asyncio.to_thread(shutil.rmtree, folder, True)
            if last.status == "done":
                self.communities.mark_dirty()

        return finished

    async def job(self, job_id: str, workspace: str = DEFAULT_WORKSPACE) -> InsertJob:
        job = await self.runner.get(job_id)
        if job is None or job.workspace != workspace:  # another workspace's job is not told of
            raise NotFound(f"insert job {job_id!r} does not exist")
        return job

    async def inserts(self, workspace: str, offset: int, limit: int) -> InsertPage:
        """The workspace's inserts, newest first. Records of releases before workspaces name none:
        they are the default workspace's, so that one is filtered here rather than by the store."""
        named = None if workspace == DEFAULT_WORKSPACE else {"workspace": workspace}
        jobs = [j for j in await self.runner.store.list_jobs(fields=named) if j.workspace == workspace]
        page = [j.summary() for j in jobs[offset : offset + limit]]
        return InsertPage(inserts=page, total=len(jobs), offset=offset, limit=limit)

    async def forget(self, job_id: str, workspace: str) -> InsertDeleted:
        """Remove an insert and what only it brought to the graph (`KbStore.forget`), and its job record
        (which holds its text), in one transaction; the communities it touched are recomputed."""
        job = await self.job(job_id, workspace)
        jobs = self.runner.store
        if job.status in jobs.lifecycle.unfinished:
            raise Conflict(f"insert {job_id!r} is {job.status}: delete it once it is done or failed")

        async def drop_record(connection: AsyncConnection) -> None:
            await connection.execute(delete(jobs.table).where(jobs.table.c.id == job.id))

        store = await self.store.existing(workspace)
        if store is None:  # nothing was ever stored in this workspace: only the record goes
            async with self.store.engine.begin() as connection:
                await drop_record(connection)
            forgotten = Forgotten()
        else:
            forgotten = await store.forget(job.id, drop_record)
        # The store keeps finished records in memory for status reads; JobStore has no delete of its own.
        jobs._finished.pop(job.id, None)
        self.communities.mark_dirty()
        log.info("kb_insert_deleted", job_id=job.id, workspace=workspace, chunks=forgotten.chunks)
        return InsertDeleted(
            id=job.id,
            deleted=True,
            chunks=forgotten.chunks,
            entities=len(forgotten.entities),
            communities=len(forgotten.communities),
        )

    async def _process(self, job: InsertJob) -> InsertJob:
        async with self._slots:
            if job.resumed and await self.store.committed(job.id):
                return job  # the process died between the commit and the job's `done`: it is done
            usage = begin_usage(self.config.llm)  # model calls, tokens, cost, failed chunks
            text = await self._caption(job)
            store = await self.store.in_workspace(job.workspace)
            segment = Segment(seq=0, job_id=job.id, **await self._extract(job.id, text, store))
            # The counts are recorded before the commit, so a resumed job that finds its rows has them.
            counted = msgspec.structs.replace(
                job,
                chunks=len(segment.chunks),
                entities=len(segment.entities),
                relations=len(segment.relations),
                usage=usage.report(),
            )
            await self.runner.save(counted)
            try:
                await store.commit(segment)
            except BaseException:
                self.runner.progress(job)  # nothing was stored: a failed job counts nothing
                raise
            return counted

    async def _caption(self, job: InsertJob) -> str:
        folder = self.media_dir / job.id
        parts = [job.query.strip()]
        for kind in MEDIA_KINDS:
            name = job.media.get(kind)
            if not name:
                continue
            if self._captioned(job, kind):  # before the process died (a resumed job)
                caption = getattr(job, f"{kind}caption")
                if caption:
                    parts.append(f"[{kind}] {caption}")
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
            await self.runner.save(job)  # each caption is paid for once, even if the process dies
        return "\n\n".join(parts)

    @staticmethod
    def _captioned(job: InsertJob, kind: str) -> bool:
        """Whether the medium `kind` was captioned (or found uncaptionable, with a note) already."""
        return getattr(job, f"{kind}caption") is not None or kind in job.notes

    async def _extract(self, job_id: str, text: str, store: KbStore) -> dict[str, Any]:
        pieces = chunk_text(text, self.chunking.chunk_size, self.chunking.overlap) or [text]
        chunks = [
            ChunkRecord(id=f"{job_id}:{i}", job_id=job_id, text=piece) for i, piece in enumerate(pieces)
        ]
        replies = await asyncio.gather(
            *(
                complete_or_record(
                    chunk.id,
                    self.llm,
                    ChatRequest(
                        messages=[ChatMessage("system", EXTRACT_SYSTEM), ChatMessage("user", chunk.text)],
                        task="extract_entities",
                        inputs={"text": chunk.text},
                    ),
                    Extraction,
                    cache=self.cache,
                    prompt_version=EXTRACTION_PROMPT_VERSION,
                )
                for chunk in chunks
            )
        )
        check_failed_share(len(chunks), self.config.llm.max_failed_share)
        entities: dict[str, EntityRecord] = {}
        relations: dict[tuple[str, str], RelationRecord] = {}
        for chunk, reply in zip(chunks, replies, strict=True):
            if reply is None:  # failed for good: counted in the job's usage, with the reason
                continue
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
        entity_list = [e for e in entities.values() if len(e.key) <= MAX_KEY]
        relation_list = [r for r in relations.values() if max(len(r.source), len(r.target)) <= MAX_KEY]
        # Only entities the store does not know yet need a vector (a known one keeps its first).
        known = await store.known_entities([e.key for e in entity_list])
        fresh = [e for e in entity_list if e.key not in known]
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
            "relations": relation_list,
        }

    # ------------------------------------------------------------------ query

    def checked(self, request: QueryRequest) -> str:
        """The question, or a 400 saying what is wrong with it (before any answer starts streaming)."""
        question = request.query.strip()
        if not question:
            raise BadRequest("query is empty: ask a question")
        if len(question) > MAX_QUERY_CHARS:
            raise BadRequest(f"query is longer than {MAX_QUERY_CHARS} characters")
        return question

    async def query(self, request: QueryRequest, workspace: str = DEFAULT_WORKSPACE) -> KbAnswer:
        """The whole answer at once: the `done` body of `events`, with the model asked in one call; a
        failure is answered with its status and the error body."""
        body, error = await KbQueryAnswer(self, request, self.checked(request), workspace).answer()
        if error is not None:
            raise LoreError(error.message, status_code=error.code)
        assert isinstance(body, KbAnswer)
        return body

    def events(self, request: QueryRequest, workspace: str = DEFAULT_WORKSPACE) -> AsyncIterator[AnswerEvent]:
        """The answer as events (see `lore_common.answers`): `passages` {rag_memory, passages},
        `delta` {text}, `citations` {citations: [{index, passage}]}, then `done` with the body `query`
        returns; a failure is `error` {code, message}, then `done` with the error body."""
        return KbQueryAnswer(self, request, self.checked(request), workspace).events()

    async def ask_pm(self, question: str) -> PmReply:
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

    async def retrieve(self, question: str, mode: str, workspace: str = DEFAULT_WORKSPACE) -> Context:
        """What the workspace's graph holds about the question, by mode."""
        context = Context()
        store = await self.store.existing(workspace)
        if store is None:  # nothing was inserted into it: it holds nothing to find
            return context
        vector = np.asarray(await self.embedder.embed_query(question), dtype=np.float32).reshape(-1)
        if mode in ("local", "hybrid"):
            await self._local(store, context, question, vector)
        if mode in ("naive", "hybrid"):
            # Hybrid also takes the nearest chunks, so text without named entities is still recalled.
            nearest = await store.chunk_vectors.search(vector, self.config.chunk_top_k)
            await self._chunks(store, context, [str(point["ref"]) for point, _ in nearest])
        if mode in ("global", "hybrid"):
            await self._global(store, context, vector)
        return context

    async def _chunks(self, store: KbStore, context: Context, chunk_ids: Sequence[str]) -> None:
        texts = await store.chunk_texts(chunk_ids)
        lines = context.sections.setdefault("Sources", [])
        for chunk_id in chunk_ids:
            text = unmarked(texts.get(chunk_id) or "")
            if text and text not in context.passages:
                context.passages.append(text)
                lines.append(f"[{len(context.passages)}] {text}")

    async def _local(
        self, store: KbStore, context: Context, question: str, vector: np.ndarray[Any, Any]
    ) -> None:
        # Entities the question names count double; the nearest ones by their similarity.
        nearest = await store.entity_vectors.search(vector, self.config.entity_top_k)
        weights = {str(point["ref"]): max(score, 0.0) for point, score in nearest}
        named = await store.named_in(question)
        weights.update({key: NAMED_ENTITY_WEIGHT for key in named})
        keys = list(dict.fromkeys(named + list(weights)))
        entities = await store.entities(keys)
        keys = [k for k in keys if k in entities]  # a vector whose insert never committed is skipped
        weights = {k: w for k, w in weights.items() if k in entities}
        context.sections["Entities"] = [
            f"{e.name} ({type_label(e.type)}): {unmarked('; '.join(e.descriptions[:2]))}"
            for e in (entities[k] for k in keys)
        ]
        around: dict[str, list[RelationRecord]] = {}
        for relation in await store.relations_around(keys):
            for end in (relation.source, relation.target):
                around.setdefault(end, []).append(relation)
        picked: list[RelationRecord] = []
        for key in keys:
            nearby = sorted(around.get(key, []), key=lambda r: (-r.weight, r.source, r.target))
            picked.extend(nearby[:RELATIONS_PER_ENTITY])
        names = {k: e.name for k, e in entities.items()}
        missing = {end for r in picked for end in (r.source, r.target)} - set(names)
        names.update({k: e.name for k, e in (await store.entities(sorted(missing))).items()})
        relation_lines: list[str] = []
        for relation in picked:
            a, b = names.get(relation.source, relation.source), names.get(relation.target, relation.target)
            line = f"{a} -- {b}: {unmarked(relation.descriptions[0]) if relation.descriptions else 'related'}"
            if line not in relation_lines:
                relation_lines.append(line)
        context.sections["Relations"] = relation_lines
        scores = await store.entity_chunks(weights)
        ranked = sorted(scores, key=lambda cid: (-scores[cid], cid))[: self.config.chunk_top_k]
        await self._chunks(store, context, ranked)

    async def _global(self, store: KbStore, context: Context, vector: np.ndarray[Any, Any]) -> None:
        found = await store.community_vectors.search(vector, self.config.community_top_k)
        refs = [str(point["ref"]) for point, _ in found]
        by_id = {c.id: c for c in await store.communities(refs)}
        lines = context.sections.setdefault("Communities", [])
        for community_id in refs:
            community = by_id.get(community_id)
            if community is None:
                continue
            summary = unmarked(community.summary)
            context.passages.append(summary)
            lines.append(f"[{len(context.passages)}] {community.title}: {summary}")


class KbQueryAnswer(CitedAnswer[KbPassages, KbCitation, KbAnswer | QueryFailed]):
    """One question to the memory graph: the parametric-memory model first when asked (its answer
    stands when it judges it relevant), else retrieval by mode and the model's answer from it."""

    def __init__(
        self, kb: KbService, request: QueryRequest, question: str, workspace: str = DEFAULT_WORKSPACE
    ) -> None:
        super().__init__(model=kb.llm)
        self.kb = kb
        self.request = request
        self.question = question
        self.workspace = workspace
        self.body = KbAnswer(query=request.query, mode=request.mode)

    async def ground(self) -> Grounding[KbPassages]:
        if self.request.use_pm and self.kb.pm_llm is not None:
            pm = await self.kb.ask_pm(self.question)
            self.body.pm_memory, self.body.pm_relevant = pm.answer, pm.relevant
            if pm.relevant:
                self.body.pm_used = True
                return Grounding(KbPassages("", []), answer=pm.answer)
        context = await self.kb.retrieve(self.question, self.request.mode, self.workspace)
        self.body.rag_memory = context.text()
        answer = ChatRequest(
            messages=[
                ChatMessage("system", ANSWER_SYSTEM),
                ChatMessage(
                    "user",
                    f"Context:\n{numbered(context.passages) or NO_MEMORY}\n\nQuestion: {self.question}",
                ),
            ],
            task="answer",
            inputs={"question": self.question, "passages": context.passages},
        )
        return Grounding(KbPassages(self.body.rag_memory, context.passages), answer)

    async def cite(self, answer: str, grounding: Grounding[KbPassages]) -> list[KbCitation]:
        passages = grounding.passages.passages
        return [KbCitation(n, passages[n - 1]) for n in cited_numbers(answer, len(passages))]

    def done(self, answer: str, grounding: Grounding[KbPassages], citations: list[KbCitation]) -> KbAnswer:
        self.body.final_answer = answer
        return self.body

    def failed(self, exc: Exception, stage: Stage) -> Failure[KbAnswer | QueryFailed]:
        mode = self.request.mode
        if isinstance(exc, LoreError):
            status, message = exc.status_code, exc.message
        elif stage == "passages":
            log.warning("kb_query_failed", mode=mode, error=str(exc))
            outage = store_outage(exc)  # a store away is a 503 naming it, not a failure of ours
            status, reason = outage if outage else (500, str(exc))
            message = f"kb {mode} retrieval failed: {reason}"
        else:
            log.warning("kb_query_failed", mode=mode, error=str(exc))
            status, message = 500, f"kb {mode} answer failed: {exc}"
        return Failure(status, message, QueryFailed(code=status, message=message, detail=message))


def _failing(reason: str) -> Callable[[InsertJob], InsertJob]:
    return lambda job: msgspec.structs.replace(job, error=reason, waiting_for=None)


def _move(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(source), target)
