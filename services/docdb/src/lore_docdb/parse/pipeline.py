"""The parse pipeline of one dataset into one KB: extract → chunk → embed → index → graph → merge.

Cancellation is checked at every stage boundary (and between batches); a cancelled or failed task is
rolled back by its task id, so it leaves no chunk rows, no points and no graph contributions behind.
"""

from __future__ import annotations

import asyncio
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
from lore_docdb.index.graph import entity_id
from lore_docdb.index.indexes import SearchIndexes
from lore_docdb.knowledge_bases.embedders import KbEmbedders
from lore_docdb.knowledge_bases.models import ChunkRow
from lore_docdb.knowledge_bases.store import KnowledgeBaseStore
from lore_docdb.parse.extract import (
    PICTURE_SUFFIXES,
    ExtractionError,
    embedded_pictures,
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
PAGED_SUFFIXES = frozenset({".pdf"})  # converters that split pages by form feeds


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

    async def run(self, ctx: ParseContext) -> list[dict[str, str]]:
        """Parse; returns the files that were skipped, with the reason."""
        task = ctx.task
        await ctx.check("extract")
        texts, skipped = await self._extract_all(ctx.dataset_dir)
        if self.vision is not None:
            texts, skipped = await self._captioned(ctx.dataset_dir, texts, skipped)
        if not texts:
            reasons = "; ".join(f"{s['file']}: {s['reason']}" for s in skipped[:5])
            raise ExtractionError(
                f"dataset {task.dataset!r} has no parsable file" + (f" ({reasons})" if reasons else "")
            )

        await ctx.check("chunk")
        chunks = await asyncio.to_thread(self._chunk_all, task.task_id, texts)

        await ctx.check("embed")
        embedder = await self.embedders.for_parse(task.kb_name, [c.indexed for c in chunks[:1000]])
        batch = max(1, self.settings.parameter.vector_config.batch_size)
        vectors = []
        for start in range(0, len(chunks), batch):
            vectors.append(await embedder.embed([c.indexed for c in chunks[start : start + batch]]))
            await ctx.check("embed")

        await ctx.check("index")
        await self.vectors.ensure(task.kb_name, embedder.dim)
        for part, start in zip(vectors, range(0, len(chunks), batch), strict=True):
            window = chunks[start : start + batch]
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
        await self.kbs.add_chunks(
            [
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
            ]
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
            graph = await self._extract_graph(ctx, chunks, entities)
            await ctx.check("merge")
            await self.graph.ensure(task.kb_name)
            merge = self.settings.parameter.graph_merge_config
            await self.graph.merge(
                task.kb_name, list(graph.nodes.values()), list(graph.edges.values()), merge.batch_size
            )
        await ctx.check("done")
        return skipped

    # ------------------------------------------------------------ stages

    async def _extract_all(self, folder: Path) -> tuple[list[tuple[str, str]], list[dict[str, str]]]:
        """Each file's text, read in the sandbox (limits on time, memory and size per file)."""
        texts: list[tuple[str, str]] = []
        skipped: list[dict[str, str]] = []
        config = self.settings.docdb
        sandbox = Sandbox(config.extract_timeout, config.extract_memory_mb, config.extract_max_file_mb)
        try:
            for path in await asyncio.to_thread(lambda: sorted(folder.iterdir())):
                if path.name.startswith(".") or not path.is_file():
                    continue
                if not supported(path):
                    skipped.append(
                        {"file": path.name, "reason": f"unsupported type {path.suffix or '(none)'}"}
                    )
                    continue
                try:
                    text = await sandbox.extract(path)
                except ExtractionError as exc:
                    log.info("file_skipped", file=path.name, reason=str(exc))
                    skipped.append({"file": path.name, "reason": str(exc)})
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
            if entry["reason"] == "no text" and Path(entry["file"]).suffix.lower() in PICTURE_SUFFIXES:
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
        pages of a PDF are counted by the form feeds its converter writes between them."""
        config = self.settings.parameter.chunk_config
        chunks: list[Chunk] = []
        for file, text in texts:
            paged = Path(file).suffix.lower() in PAGED_SUFFIXES
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
    ) -> GraphBatch:
        task = ctx.task
        system = extraction_prompt(entities)
        allowed = sorted({e.type for e in entities}) if entities else list(ENTITY_TYPES)
        slots = asyncio.Semaphore(max(1, self.settings.parameter.graph_config.max_workers))
        source = f"{task.dataset}|{task.task_id}"
        batch = GraphBatch()

        async def one(chunk: Chunk) -> None:
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
                    return
            self._collect(batch, result, chunk, task.dataset, source, allowed)

        await asyncio.gather(*(one(c) for c in chunks))
        check_failed_share(len(chunks), self.settings.docdb.llm.max_failed_share)
        return batch

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
        await self.kbs.delete_chunks_of_task(task.task_id, task.kb_name)
        await self.graph.forget_task(task.kb_name, task.task_id)
        self.bm25.bump(task.kb_name)


def skipped_json(skipped: list[dict[str, str]]) -> str | None:
    return json.dumps(skipped, ensure_ascii=False) if skipped else None
