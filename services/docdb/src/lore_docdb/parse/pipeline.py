"""The parse pipeline of one dataset into one KB: extract → chunk → embed → index → graph → merge.

Cancellation is checked at every stage boundary (and between batches); a cancelled or failed task is
rolled back by its task id, so it leaves no chunk rows, no points and no graph contributions behind.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import structlog

from lore_common.providers.chat import (
    ChatMessage,
    ChatModel,
    ChatRequest,
    ModelError,
    Picture,
    StructuredCache,
    complete_structured,
)
from lore_common.providers.extraction import EXTRACTION_PROMPT_VERSION, Extraction
from lore_common.providers.usage import check_failed_share, record_failure
from lore_common.structured_chunks import chunk_structured, indexed_text
from lore_core.settings import Settings
from lore_docdb.datasets.paths import path_of, sha256_of
from lore_docdb.index.graph import Contribution, entity_id, fold_entities
from lore_docdb.index.indexes import SearchIndexes
from lore_docdb.knowledge_bases.embedders import KbEmbedders
from lore_docdb.knowledge_bases.models import ChunkRow, KbFileRow
from lore_docdb.knowledge_bases.store import ChunkGraph, KnowledgeBaseStore
from lore_docdb.parse.extract import (
    PICTURE_SUFFIXES,
    ExtractionError,
    embedded_pictures,
    file_type,
    supported,
)
from lore_docdb.parse.models import Task
from lore_docdb.parse.sandbox import Sandbox
from lore_docdb.schemas.models import ENTITY_TYPES, EntityDefinition
from lore_docdb.schemas.service import extraction_prompt

log = structlog.get_logger("lore.docdb.parse")

CAPTION_PROMPT = (
    "This picture comes from a document. Transcribe any text in it, then say in one or two sentences "
    "what it shows (for a chart or table: its subject and main figures)."
)
STAGES = ("extract", "chunk", "embed", "index", "graph", "merge")
# Bump when a converter's output changes (its library or its code), or the chunker's: a file parsed
# under another version is parsed again by the next parse, changed or not.
CONVERTER_VERSION = "11"
CHUNKER_VERSION = "structured-4"
NODE_FIELDS = ("id", "name", "type", "description", "mentions")
EDGE_FIELDS = ("source_id", "target_id", "description", "weight")
PAGED_SUFFIXES = frozenset({".pdf", ".tif", ".tiff"})  # converters that split pages by form feeds
# Paged where the converter found the pages (a form feed in the text): a presentation's slides, a
# Word or OpenDocument text's pages as its writer last laid them out; without, a chunk has no page,
# not page 1 (a one-slide deck, a file whose breaks did not add up).
PAGED_WHEN_FOUND = frozenset({".pptx", ".ppt", ".odp", ".key", ".docx", ".odt"})


class Cancelled(Exception):
    """The task was cancelled; the pipeline stops at the boundary where it noticed."""


@dataclass
class Chunk:
    chunk_id: str
    file: str
    position: int
    text: str
    heading_path: list[str] = field(default_factory=list)
    page_start: int | None = None
    page_end: int | None = None

    @property
    def indexed(self) -> str:
        """What the vectors embed: the text, with its heading path where that helps retrieval."""
        return indexed_text(self.text, self.heading_path)


@dataclass
class GraphBatch:
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    edges: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)


@dataclass
class FileDiff:
    """The dataset's files against what the KB recorded at its last parse of it."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {
            "added": len(self.added),
            "changed": len(self.changed),
            "deleted": len(self.deleted),
            "unchanged": len(self.unchanged),
        }


@dataclass
class ParseOutcome:
    """What `run` did, for `finish` to record: the files read (None, or why one has no chunks) and
    the chunks each gave; the skipped files the task reports (those read now and unchanged ones)."""

    diff: FileDiff
    hashes: dict[str, str]
    read: dict[str, str | None] = field(default_factory=dict)
    chunks: dict[str, int] = field(default_factory=dict)
    skipped: list[dict[str, str]] = field(default_factory=list)


@dataclass
class ParseContext:
    task: Task
    dataset_dir: Path
    check: Callable[[str], Awaitable[None]]  # raises Cancelled; records the stage reached


class ParsePipeline:
    def __init__(
        self,
        *,
        settings: Settings,
        kbs: KnowledgeBaseStore,
        indexes: SearchIndexes,
        embedders: KbEmbedders,
        llm: ChatModel,
        vision: ChatModel | None = None,
        cache: StructuredCache | None = None,
    ) -> None:
        self.settings = settings
        self.kbs = kbs  # the KB's chunk rows
        self.vectors = indexes.vectors
        self.graph = indexes.graph
        self.bm25 = indexes.bm25
        self.embedders = embedders
        self.llm = llm
        # With `docdb.vlm` configured, pictures inside PDF and DOCX files are captioned into the text.
        self.vision = vision
        # Extraction results by (prompt version, model, chunk, schema), shared by replicas: providers.cache.
        self.cache = cache
        # Entity rebuilds of one KB run one at a time in this process (two datasets' parses share nodes).
        self._graph_locks: dict[str, asyncio.Lock] = {}

    async def run(self, ctx: ParseContext) -> ParseOutcome:
        """Parse the files that are new or changed since the KB last parsed the dataset (every file
        when the task is forced); what the replaced files held goes in `finish`."""
        task = ctx.task
        await ctx.check("extract")
        hashes = await asyncio.to_thread(file_hashes, ctx.dataset_dir)
        version = await self.version(task)
        records = await self.kbs.parsed_files(task.kb_name, task.dataset)
        diff = diff_files(hashes, records, version)
        if task.force:  # every file is read again
            diff.changed, diff.unchanged = sorted(diff.changed + diff.unchanged), []
        outcome = ParseOutcome(diff=diff, hashes=hashes)
        texts, skipped = await self._extract_all(ctx.dataset_dir, diff.added + diff.changed)
        if self.vision is not None:
            texts, skipped = await self._captioned(ctx.dataset_dir, texts, skipped)
        outcome.read = {name: None for name in diff.added + diff.changed}
        outcome.read.update({s["file"]: s["reason"] for s in skipped})
        kept = [records[name] for name in diff.unchanged]
        outcome.skipped = sorted(
            skipped + [{"file": r.file, "reason": r.skipped} for r in kept if r.skipped],
            key=lambda s: s["file"],
        )
        # Nothing to parse is an error in a first parse only: once the KB holds the dataset, a parse
        # with no text left (every file deleted or unparsable now) takes their chunks back in `finish`.
        if not texts and not records:
            reasons = "; ".join(f"{path_of(s['file'])}: {s['reason']}" for s in outcome.skipped[:5])
            raise ExtractionError(
                f"dataset {task.dataset!r} has no parsable file" + (f" ({reasons})" if reasons else "")
            )

        await ctx.check("chunk")
        chunks = await asyncio.to_thread(self._chunk_all, task.task_id, texts)
        for chunk in chunks:
            outcome.chunks[chunk.file] = outcome.chunks.get(chunk.file, 0) + 1
        if not chunks:  # nothing new or changed: no embedding, no model call
            await ctx.check("done")
            return outcome

        await ctx.check("embed")
        embedder = await self.embedders.for_parse(task.kb_name, [c.indexed for c in chunks[:1000]])
        batch = max(1, self.settings.parameter.vector_config.batch_size)
        await self.vectors.ensure(task.kb_name, embedder.dim)
        # Each window's vectors go to the store as soon as they are made, so a task's vectors are never
        # all in memory (1.5 GB for a million 384-d chunks); a task that fails or is cancelled part way
        # has its points removed by `rollback`, as before.
        for start in range(0, len(chunks), batch):
            window = chunks[start : start + batch]
            part = await embedder.embed([c.indexed for c in window])
            payloads = [
                {
                    "dataset": task.dataset,
                    "file": c.file,
                    "chunk_id": c.chunk_id,
                    "task_id": task.task_id,
                    "text": c.text,
                    "heading_path": c.heading_path,
                    "page_start": c.page_start,
                    "page_end": c.page_end,
                }
                for c in window
            ]
            await self.vectors.upsert(task.kb_name, part, payloads)
            await ctx.check("embed")

        await ctx.check("index")
        await self.kbs.add_chunks(
            ChunkRow(
                chunk_id=c.chunk_id,
                kb_name=task.kb_name,
                dataset=task.dataset,
                task_id=task.task_id,
                file=c.file,
                position=c.position,
                text=c.text,
                heading_path=json.dumps(c.heading_path, ensure_ascii=False) if c.heading_path else None,
                page_start=c.page_start,
                page_end=c.page_end,
            )
            for c in chunks
        )
        self.bm25.bump(task.kb_name)
        await self.bm25.get(task.kb_name)  # the BM25 index of the rerank mode now includes these chunks

        if task.mode == 0 and self.graph.enabled:
            await ctx.check("graph")
            entities = (
                msgspec.json.decode(task.schema_entities, type=list[EntityDefinition])
                if task.schema_entities
                else None
            )
            contributions = await self._extract_graph(ctx, chunks, entities)
            await self.kbs.set_chunk_graphs(
                {c.chunk_id: json.dumps({"nodes": c.nodes, "edges": c.edges}) for c in contributions}
            )
            await ctx.check("merge")
            await self._rebuild_graph(task.kb_name, removed=[], added=contributions)
        await ctx.check("done")
        return outcome

    async def finish(self, task: Task, outcome: ParseOutcome) -> None:
        """Once the new chunks are all in: remove what the changed and deleted files held before (and,
        for a forced parse, every earlier chunk of the dataset), then record the files as parsed."""
        stale = await self.kbs.stale_chunks(task.kb_name, task.dataset, task.task_id, outcome.diff.unchanged)
        if stale:
            await self._remove_chunks(task.kb_name, stale)
        version = await self.version(task)  # a KB still `auto` has chosen its embedder by now
        await self.kbs.record_files(
            task.kb_name,
            task.dataset,
            [
                KbFileRow(
                    kb_name=task.kb_name,
                    dataset=task.dataset,
                    file=name,
                    sha256=outcome.hashes[name],
                    version=version,
                    task_id=task.task_id,
                    chunks=outcome.chunks.get(name, 0),
                    skipped=reason,
                )
                for name, reason in sorted(outcome.read.items())
            ],
            outcome.diff.deleted,
        )

    async def version(self, task: Task) -> str:
        """What made a file's chunks besides its content: converters, chunker, embedder and (mode 0)
        graph extraction. A file recorded with another version is parsed again."""
        row = await self.kbs.get_kb(task.kb_name)
        embedder = self.embedders.shown(row.embedding_model if row else None)
        chunking = self.settings.parameter.chunk_config
        converter = CONVERTER_VERSION
        if self.vision is not None:
            converter += f"+vlm:{self.settings.docdb.vlm.provider}:{self.settings.docdb.vlm.model}"
        graph = "none"
        if task.mode == 0 and self.graph.enabled:
            llm = self.settings.docdb.llm
            schema = hashlib.sha256((task.schema_entities or "").encode()).hexdigest()[:16]
            graph = f"{EXTRACTION_PROMPT_VERSION}:{llm.provider}:{llm.model}:{schema}"
        return (
            f"converter={converter};chunker={CHUNKER_VERSION}:{chunking.chunk_size}:{chunking.overlap};"
            f"embedder={embedder};graph={graph}"
        )[:400]

    # ------------------------------------------------------------ stages

    async def _extract_all(
        self, folder: Path, names: list[str]
    ) -> tuple[list[tuple[str, str]], list[dict[str, str]]]:
        """Each named file's text, read in the sandbox (limits on time, memory and size per file)."""
        texts: list[tuple[str, str]] = []
        skipped: list[dict[str, str]] = []
        if not names:
            return texts, skipped
        config = self.settings.docdb
        sandbox = Sandbox(config.extract_timeout, config.extract_memory_mb, config.extract_max_file_mb)
        try:
            for name in sorted(names):
                path = folder / name
                if not supported(path):
                    skipped.append({"file": path.name, "reason": f"{UNSUPPORTED} {path.suffix or '(none)'}"})
                    continue
                try:
                    text = await sandbox.extract(path)
                except ExtractionError as exc:
                    log.info("file_skipped", file=path.name, reason=str(exc))
                    # The reason names the file first; the entry already does.
                    skipped.append({"file": path.name, "reason": str(exc).removeprefix(f"{path.name}: ")})
                    continue
                if text.strip():
                    texts.append((path.name, text))
                else:
                    skipped.append({"file": path.name, "reason": "no text"})
        finally:
            await sandbox.close()
        return texts, skipped

    async def _captioned(
        self, folder: Path, texts: list[tuple[str, str]], skipped: list[dict[str, str]]
    ) -> tuple[list[tuple[str, str]], list[dict[str, str]]]:
        """Each PDF/DOCX with its pictures' captions; a file of pictures only (a scan) now has text."""
        captioned = [(name, await self._with_captions(folder / name, text)) for name, text in texts]
        kept = []
        for entry in skipped:
            if entry["reason"] == "no text" and file_type(entry["file"]) in PICTURE_SUFFIXES:
                text = (await self._with_captions(folder / entry["file"], "")).strip()
                if text:
                    captioned.append((entry["file"], text))
                    continue
            kept.append(entry)
        return sorted(captioned), kept

    async def _with_captions(self, path: Path, text: str) -> str:
        """The file's text followed by a caption of each picture inside it (`[Picture n: …]`)."""
        assert self.vision is not None
        pictures = await asyncio.to_thread(embedded_pictures, path)
        if not pictures:
            return text
        vision = self.vision

        async def caption(mime: str, data: bytes) -> str:
            request = ChatRequest(
                messages=[ChatMessage("user", CAPTION_PROMPT, (Picture(mime, data),))],
                task="caption",
                max_tokens=400,
            )
            try:
                return (await vision.complete(request)).strip()
            except ModelError as exc:  # the text is parsed anyway; the picture goes without caption
                log.warning("caption_failed", file=path.name, error=str(exc))
                return ""

        captions = await asyncio.gather(*(caption(mime, data) for mime, data in pictures))
        lines = [f"[Picture {n}: {c}]" for n, c in enumerate(captions, start=1) if c]
        return text + ("\n\n" + "\n".join(lines) if lines else "")

    def _chunk_all(self, task_id: str, texts: list[tuple[str, str]]) -> list[Chunk]:
        """Each file's chunks, cut where its structure allows (`lore_common.structured_chunks`); the
        pages of a PDF, a TIFF, a presentation's slides, a Word or OpenDocument text's pages are
        counted by the form feeds its converter writes between them."""
        config = self.settings.parameter.chunk_config
        chunks: list[Chunk] = []
        for file, text in texts:
            suffix = file_type(file)
            paged = suffix in PAGED_SUFFIXES or (suffix in PAGED_WHEN_FOUND and "\f" in text)
            for position, piece in enumerate(
                chunk_structured(text, config.chunk_size, config.overlap, paged=paged)
            ):
                chunks.append(
                    Chunk(
                        chunk_id=f"{task_id}:{len(chunks)}",
                        file=file,
                        position=position,
                        text=piece.text,
                        heading_path=piece.heading_path,
                        page_start=piece.page_start,
                        page_end=piece.page_end,
                    )
                )
        return chunks

    async def _extract_graph(
        self, ctx: ParseContext, chunks: list[Chunk], entities: list[EntityDefinition] | None
    ) -> list[Contribution]:
        """Each chunk's entities and relations, in chunk order (a chunk whose extraction failed
        contributes nothing, and is reported in the task)."""
        task = ctx.task
        system = extraction_prompt(entities)
        allowed = sorted({e.type for e in entities}) if entities else list(ENTITY_TYPES)
        slots = asyncio.Semaphore(max(1, self.settings.parameter.graph_config.max_workers))
        source = f"{task.dataset}|{task.task_id}"

        async def one(chunk: Chunk) -> Contribution:
            batch = GraphBatch()
            async with slots:
                await ctx.check("graph")
                request = ChatRequest(
                    messages=[ChatMessage("system", system), ChatMessage("user", chunk.text)],
                    task="extract_entities",
                    inputs={"text": chunk.text, "entity_types": allowed},
                )
                try:
                    result = await complete_structured(
                        self.llm,
                        request,
                        Extraction,
                        cache=self.cache,
                        prompt_version=EXTRACTION_PROMPT_VERSION,
                    )
                except ModelError as exc:  # reported in the task, never dropped (providers.usage)
                    record_failure(chunk.chunk_id, exc)
                    result = None
            if result is not None:
                self._collect(batch, result, chunk, task.dataset, source, allowed)
            return Contribution(
                chunk_id=chunk.chunk_id,
                dataset=task.dataset,
                task_id=task.task_id,
                nodes=[{k: n[k] for k in NODE_FIELDS} for n in batch.nodes.values()],
                edges=[{k: e[k] for k in EDGE_FIELDS} for e in batch.edges.values()],
            )

        contributions = await asyncio.gather(*(one(c) for c in chunks))
        check_failed_share(len(chunks), self.settings.docdb.llm.max_failed_share)
        return list(contributions)

    @staticmethod
    def _collect(
        batch: GraphBatch, result: Extraction, chunk: Chunk, dataset: str, source: str, allowed: list[str]
    ) -> None:
        names: dict[str, str] = {}
        for item in result.entities:
            name = item.name.strip()
            if not name:
                continue
            kind = item.type if item.type in allowed else allowed[0]
            key = entity_id(name, kind)
            names[name.lower()] = key
            node = batch.nodes.get(key)
            if node is None:
                batch.nodes[key] = {
                    "id": key,
                    "name": name,
                    "type": kind,
                    "description": item.description[:500],
                    "dataset": dataset,
                    "source": source,
                    "chunk_ids": [chunk.chunk_id],
                    "mentions": 1,
                }
            else:
                node["mentions"] += 1
                if chunk.chunk_id not in node["chunk_ids"]:
                    node["chunk_ids"].append(chunk.chunk_id)
                if (
                    item.description
                    and item.description not in node["description"]
                    and len(node["description"]) < 1500
                ):
                    node["description"] = (node["description"] + " | " + item.description[:300]).strip(" |")
        for relation in result.relations:
            a, b = names.get(relation.source.strip().lower()), names.get(relation.target.strip().lower())
            if a is None or b is None or a == b:
                continue  # a relation must join two entities the model named in this chunk
            edge_key = (a, b) if a < b else (b, a)
            edge = batch.edges.get(edge_key)
            if edge is None:
                batch.edges[edge_key] = {
                    "source_id": edge_key[0],
                    "target_id": edge_key[1],
                    "description": relation.description[:500],
                    "weight": float(relation.weight or 1.0),
                    "dataset": dataset,
                    "source": source,
                    "chunk_ids": [chunk.chunk_id],
                }
            else:
                edge["weight"] += float(relation.weight or 1.0)
                if chunk.chunk_id not in edge["chunk_ids"]:
                    edge["chunk_ids"].append(chunk.chunk_id)

    # ------------------------------------------------------------ rollback

    async def rollback(self, task: Task) -> None:
        """Remove everything this task wrote: points, chunk rows, graph contributions."""
        await self.vectors.delete_where(task.kb_name, "task_id", task.task_id)
        if self.graph.enabled:
            written = await self.kbs.chunks_of_task(task.task_id)
            await self._rebuild_graph(task.kb_name, removed=written, added=[], task_id=task.task_id)
        await self.kbs.delete_chunks_of_task(task.task_id, task.kb_name)
        self.bm25.bump(task.kb_name)

    async def remove_dataset(self, kb: str, dataset: str) -> None:
        """Remove every chunk of a dataset from the KB (its rows, points, BM25 entries, graph part)."""
        await self._remove_chunks(kb, await self.kbs.stale_chunks(kb, dataset, keep_task="", keep_files=[]))

    async def _remove_chunks(self, kb: str, stale: list[ChunkGraph]) -> None:
        """Remove these chunks: their points, rows, BM25 entries and graph contributions."""
        ids = [c.chunk_id for c in stale]
        await self.vectors.delete_chunks(kb, ids)
        if self.graph.enabled:
            await self._rebuild_graph(kb, removed=stale, added=[])
        await self.kbs.delete_chunk_ids(kb, ids)
        self.bm25.bump(kb)

    async def _rebuild_graph(
        self,
        kb: str,
        *,
        removed: list[ChunkGraph],
        added: list[Contribution],
        task_id: str | None = None,
    ) -> None:
        """Rebuild every entity that chunks are leaving (`removed`) or joining (`added`, already stored
        with their contributions) from the contributions of all the chunks that name it then."""
        if not self.graph.enabled:
            return
        entities: set[str] = set()
        unknown: list[str] = []
        for chunk in removed:
            if chunk.graph is None:
                unknown.append(chunk.chunk_id)
            else:
                entities.update(n["id"] for n in json.loads(chunk.graph).get("nodes", []))
        for part in added:
            entities.update(n["id"] for n in part.nodes)
        batch = max(1, self.settings.parameter.graph_merge_config.batch_size)
        async with self._graph_locks.setdefault(kb, asyncio.Lock()):
            if unknown or task_id is not None:
                entities |= await self.graph.entities_from(kb, unknown, task_id)
            if not entities:
                return
            gone = {c.chunk_id for c in removed}
            naming = await self.graph.chunks_naming(kb, entities, batch)
            if task_id is not None:  # a rollback: the failure may have been a rebuild left half done
                naming.update(await self.kbs.chunks_naming(kb, entities))
            naming = (naming - gone) | {c.chunk_id for c in added}
            contributions = [
                Contribution(c.chunk_id, c.dataset, c.task_id, *_parts(c.graph))
                for c in await self.kbs.chunk_graphs(sorted(naming))
                if c.graph is not None and c.chunk_id not in gone
            ]
            nodes, edges = fold_entities(contributions, entities)
            if not await self.graph.exists(kb):
                await self.graph.ensure(kb)  # a new graph: index its entity ids
            await self.graph.replace_entities(kb, entities, nodes, edges, batch)


def _parts(graph: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    decoded = json.loads(graph)
    return decoded.get("nodes", []), decoded.get("edges", [])


def file_hashes(folder: Path) -> dict[str, str]:
    """The sha256 of each visible file of a checked-out dataset, by name."""
    return {
        path.name: sha256_of(path)
        for path in sorted(folder.iterdir())
        if not path.name.startswith(".") and path.is_file()
    }


def diff_files(hashes: dict[str, str], records: dict[str, KbFileRow], version: str) -> FileDiff:
    """Added, changed (content or parse version), deleted and unchanged files against the records. A
    file skipped as of a type docdb did not read, which it now reads, is changed: it is read at last,
    without every other file being parsed again."""
    diff = FileDiff()
    for name, sha in sorted(hashes.items()):
        record = records.get(name)
        if record is None:
            diff.added.append(name)
        elif record.sha256 != sha or record.version != version or _now_supported(record):
            diff.changed.append(name)
        else:
            diff.unchanged.append(name)
    diff.deleted = sorted(set(records) - set(hashes))
    return diff


UNSUPPORTED = "unsupported type"


def _now_supported(record: KbFileRow) -> bool:
    reason = (record.skipped or "").removeprefix(f"{record.file}: ")
    return reason.startswith(UNSUPPORTED) and supported(Path(record.file))


def skipped_json(skipped: list[dict[str, str]]) -> str | None:
    return json.dumps(skipped, ensure_ascii=False) if skipped else None
