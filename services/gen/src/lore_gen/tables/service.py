"""The table pipeline: (1) schema, (2) one grounded row per entity, (3) a real SQL table, (4) guarded SQL.

Each step is reported as progress. Rows are filled concurrently (at most `max_workers` at once): the
entity's passages come from docdb's `/retrieve`, and when the table is grounded in a KB an entity with no
evidence gets an empty row without asking the model, so nothing is invented. The model's SQL must pass
the read-only guard and run; a rejected or failing query is regenerated once with the reason shown to the
model, then the task fails with that reason.

A task whose process died runs again at the next start (`gen.resume_interrupted`) from its last stored
step: the design and the table's name (and, once it ran, the SQL) are kept in the task's checkpoint and
each filled row in the extraction cache as soon as it arrives, so the run asks the model only for what
was not finished, and builds the same table under the same name.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
import structlog

from lore_common.providers.chat import (
    ChatMessage,
    ChatModel,
    ChatRequest,
    StructuredCache,
    complete_or_record,
    complete_structured,
)
from lore_common.providers.usage import begin_usage, check_failed_share, current_usage
from lore_core.errors import BadRequest
from lore_core.naming import check_name
from lore_core.settings import GenConfig
from lore_gen.docdb.client import DocdbClient
from lore_gen.docdb.models import Passage
from lore_gen.tables.models import RowReply, SqlReply, SubmitRequest, TableSchema
from lore_gen.tables.offline import mentions
from lore_gen.tables.sql_guard import UnsafeSQL, guard_select
from lore_gen.tables.store import TableStore, coerce, identifier, infer_kinds
from lore_gen.tasks.models import Body, Checkpoint, Report, TaskFailure, TaskRecord
from lore_gen.tasks.service import Listener, TaskService

log = structlog.get_logger("lore.gen.tables")

STEP_SCHEMA, STEP_ROWS, STEP_TABLE, STEP_SQL = 1, 2, 3, 4
MAX_WORKERS = 64
KB_ENTITIES = 50  # the KB graph's most connected entities a design may draw rows from

DESIGN_SYSTEM = (
    "You design a table that answers a question. Reply with one JSON object: "
    '{"title": str, "entities": [str], "columns": [str]}. `entities` are the rows (the things the '
    "question is about, named as in the evidence when evidence is given); `columns` are the attributes "
    "to fill, and the first column holds the entity's name. Keep column names short."
)
FILL_SYSTEM = (
    "You fill one row of a table from the evidence. Reply with one JSON object "
    '{"row": {column: value}} with exactly the given columns. Use only facts stated in the evidence; '
    "when the evidence does not support a cell, set it to null. Numbers as plain numbers, without units "
    "in the value when the column name carries them."
)
SQL_SYSTEM = (
    "You write one read-only SQL SELECT query over the given table to answer the question. Reply with "
    'one JSON object {"sql": str}. Use only the given table and columns (quote identifiers with double '
    "quotes); no other statements."
)


def _numbered(passages: Sequence[Passage]) -> str:
    return "\n".join(f"[{i + 1}] {p.content}" for i, p in enumerate(passages)) or "(no evidence)"


def _cell(value: Any) -> Any:
    """A model's cell as a plain scalar: lists joined, objects as JSON, blanks and n/a as null."""
    if isinstance(value, list):
        value = "; ".join(str(v) for v in value if v not in (None, ""))
    elif isinstance(value, dict):
        value = json.dumps(value, ensure_ascii=False)
    if isinstance(value, str) and value.strip().lower() in ("", "null", "none", "n/a", "unknown", "-"):
        return None
    return value


def _table_name(title: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", title.lower()).strip("_")[:32].strip("_") or "table"
    return f"gen_{slug}_{uuid.uuid4().hex[:8]}"


class TableService:
    """Validates a submit, resolves the grounding KB and runs the pipeline as a persisted task."""

    def __init__(
        self,
        *,
        llm: ChatModel,
        docdb: DocdbClient,
        tables: TableStore,
        tasks: TaskService,
        config: GenConfig,
        cache: StructuredCache | None = None,
    ) -> None:
        self.cache = cache  # filled rows by (prompt, model, evidence, schema), shared by replicas
        self.llm = llm
        self.docdb = docdb
        self.tables = tables
        self.tasks = tasks
        self.config = config
        tasks.resumable("table", self.resumed)

    async def submit(
        self, request: SubmitRequest, listener: Listener | None = None, caller: str | None = None
    ) -> TaskRecord:
        if not request.question.strip():
            raise BadRequest("question is empty: say what the table should answer")
        if request.top_k < 1:
            raise BadRequest("top_k must be at least 1")
        if not 0.0 <= request.threshold <= 1.0:
            raise BadRequest("threshold must be between 0 and 1")
        if not 1 <= request.max_workers <= MAX_WORKERS:
            raise BadRequest(f"max_workers must be between 1 and {MAX_WORKERS}")
        kb_name = request.kb_name or self.config.kb_name
        if kb_name is not None:
            check_name("knowledge base", kb_name)
            await self.docdb.require_kb(kb_name)

        return await self.tasks.submit(
            "table",
            self._body(request, kb_name),
            msgspec.to_builtins(request) | {"kb_name": kb_name},
            listener,
            caller,
        )

    def _body(self, request: SubmitRequest, kb_name: str | None) -> Body:
        async def body(report: Report, checkpoint: Checkpoint) -> dict[str, Any]:
            return await self.run(request, kb_name, report, checkpoint)

        return body

    def resumed(self, record: TaskRecord) -> Body:
        """The body of a table task cut off by a stop, from its stored request (the KB as resolved then)."""
        fields = {k: v for k, v in record.request.items() if k != "kb_name"}
        try:
            request = msgspec.convert(fields, SubmitRequest)
        except msgspec.ValidationError as exc:
            raise ValueError(f"its request cannot be read again: {exc}") from exc
        kb_name = record.request.get("kb_name")
        return self._body(request, kb_name if isinstance(kb_name, str) else None)

    async def status(self, task_id: str, caller: str | None = None) -> TaskRecord:
        return await self.tasks.get("table", task_id, caller)

    def detach(self, task_id: str, listener: Listener) -> None:
        """Stop telling `listener` about the task (its WebSocket client left); the task runs on."""
        self.tasks.detach(task_id, listener)

    async def run(
        self, request: SubmitRequest, kb_name: str | None, report: Report, checkpoint: Checkpoint
    ) -> dict[str, Any]:
        usage = begin_usage(self.config.llm)  # model calls, tokens, cost, rows that failed
        await report(STEP_SCHEMA, "schema")
        known = await self.kb_entities(kb_name)
        passages = (
            await self.docdb.retrieve(kb_name, request.question, request.top_k, request.threshold)
            if kb_name
            else []
        )
        designed = checkpoint.get("design")
        if designed is None:
            schema = await self.design(request, kb_name, known, passages)
            table_name = _table_name(schema.title)
            designed = {"schema": msgspec.to_builtins(schema), "table_name": table_name}
            await checkpoint.put("design", designed)  # a resumed run builds this table, not another
        schema = msgspec.convert(designed["schema"], TableSchema)
        table_name = str(designed["table_name"])
        columns = schema.columns
        total = len(schema.entities)
        await report(STEP_ROWS, "rows", done=0, total=total)
        rows = await self.fill_rows(request, kb_name, schema, report, known, passages)
        check_failed_share(total, self.config.llm.max_failed_share)

        await report(STEP_TABLE, "table")
        kinds = infer_kinds(columns, rows)
        typed_rows = [{c: coerce(row.get(c), kinds[c]) for c in columns} for row in rows]
        await self.tables.create(table_name, kinds, typed_rows)

        await report(STEP_SQL, "sql")
        sql, results = await self.query(
            table_name, kinds, request.sql_question or request.question, checkpoint
        )
        return {
            "table_name": table_name,
            "schema": {"title": schema.title, "entities": schema.entities, "columns": columns},
            "csv_data": typed_rows,
            "sql": sql,
            "query_results": results,
            "kb_name": kb_name,
            "usage": usage.as_dict(),
        }

    async def kb_entities(self, kb_name: str | None) -> dict[str, str]:
        """The KB graph's most connected entities, each with the sentence that describes it: candidate
        rows and evidence for questions ("every person and their discovery") that name no one."""
        if not kb_name:
            return {}
        overview = await self.docdb.overview(kb_name, KB_ENTITIES, 0)
        return {
            str(e["name"]): str(e.get("description") or "")
            for e in overview.get("top_entities", [])
            if e.get("name")
        }

    async def design(
        self,
        request: SubmitRequest,
        kb_name: str | None,
        known: Mapping[str, str],
        passages: Sequence[Passage],
    ) -> TableSchema:
        limit = self.config.max_entities
        described = [f"{name}: {text}" for name, text in known.items() if text]
        reply = await complete_structured(
            self.llm,
            ChatRequest(
                messages=[
                    ChatMessage("system", DESIGN_SYSTEM),
                    ChatMessage(
                        "user",
                        f"Question: {request.question}\n\nEvidence:\n{_numbered(passages)}\n\n"
                        + ("Knowledge-base entities:\n" + "\n".join(described) + "\n\n" if described else "")
                        + f"At most {limit} entities.",
                    ),
                ],
                task="design_table",
                inputs={
                    "question": request.question,
                    "passages": [p.content for p in passages] + [text for text in known.values() if text],
                    "max_entities": limit,
                },
            ),
            TableSchema,
        )
        taken: set[str] = set()
        columns = [identifier(c, taken) for c in reply.columns if str(c).strip()] or ["name"]
        entities = list(dict.fromkeys(e.strip() for e in reply.entities if e and e.strip()))[:limit]
        if not entities:
            grounding = f" in knowledge base {kb_name!r}" if kb_name else ""
            raise TaskFailure(f"the model found no entities{grounding} for the question {request.question!r}")
        return TableSchema(title=reply.title.strip() or request.question, entities=entities, columns=columns)

    async def fill_rows(
        self,
        request: SubmitRequest,
        kb_name: str | None,
        schema: TableSchema,
        report: Report,
        known: Mapping[str, str],
        found: Sequence[Passage] = (),
    ) -> list[dict[str, Any]]:
        """Each entity's row; the passages retrieved for the question that name the entity are its
        evidence too (a row-by-row retrieval can miss the passage the question found)."""
        slots = asyncio.Semaphore(max(1, request.max_workers))
        done = 0
        key = schema.columns[0]

        async def fill(entity: str) -> dict[str, Any]:
            nonlocal done
            async with slots:
                named = [p for p in found if mentions(p.content, entity)]
                row = await self.fill_row(request, kb_name, schema, entity, known.get(entity, ""), named)
            row[key] = row.get(key) or entity
            done += 1
            tally = current_usage()
            extra = {"usage": tally.as_dict()} if tally is not None else {}
            await report(STEP_ROWS, "rows", done=done, total=len(schema.entities), **extra)
            return row

        return list(await asyncio.gather(*(fill(entity) for entity in schema.entities)))

    async def fill_row(
        self,
        request: SubmitRequest,
        kb_name: str | None,
        schema: TableSchema,
        entity: str,
        described: str,
        named: Sequence[Passage] = (),
    ) -> dict[str, Any]:
        empty: dict[str, Any] = {column: None for column in schema.columns}
        passages: list[Passage] = []
        if kb_name:
            query = f"{entity}: {', '.join(schema.columns[1:])}"
            passages = await self.docdb.retrieve(kb_name, query, request.top_k, request.threshold)
            seen = {p.content for p in passages}
            passages += [p for p in named if p.content not in seen]
            if described and not any(described in p.content for p in passages):
                # The sentence the KB graph keeps for the entity is evidence too.
                passages.append(Passage(content=described, score=0.0, source="knowledge graph"))
            if not passages:
                return empty  # grounded and no evidence: nothing to fill, nothing to invent
        reply = await complete_or_record(
            entity,
            self.llm,
            ChatRequest(
                messages=[
                    ChatMessage("system", FILL_SYSTEM),
                    ChatMessage(
                        "user",
                        f"Table: {schema.title}\nEntity: {entity}\nColumns: {json.dumps(schema.columns)}\n\n"
                        f"Evidence:\n{_numbered(passages)}",
                    ),
                ],
                task="fill_row",
                inputs={
                    "entity": entity,
                    "columns": schema.columns,
                    "passages": [p.content for p in passages],
                },
            ),
            RowReply,
            cache=self.cache,
        )
        if reply is None:  # failed for good: the row stays empty, reported in the task's usage
            return empty
        # The model may echo a column under its original spelling ("Population" for `population`).
        normalised = {identifier(str(k), set()): v for k, v in reply.row.items()}
        for column in schema.columns:
            empty[column] = _cell(reply.row.get(column, normalised.get(column)))
        return empty

    async def query(
        self, table_name: str, kinds: Mapping[str, str], question: str, checkpoint: Checkpoint
    ) -> tuple[str, list[dict[str, Any]]]:
        stored = checkpoint.get("sql")
        if isinstance(stored, str):  # written before the process stopped: run it, ask nothing
            sql = guard_select(stored, table_name, self.tables.dialect, self.config.sql_row_limit)
            return sql, await self.tables.query(sql)
        columns = ", ".join(f'"{name}" {kind.upper()}' for name, kind in kinds.items())
        prompt = f'Dialect: {self.tables.dialect}\nTable: "{table_name}" ({columns})\nQuestion: {question}'
        messages = [ChatMessage("system", SQL_SYSTEM), ChatMessage("user", prompt)]
        problem = ""
        for attempt in (1, 2):
            reply = await complete_structured(
                self.llm,
                ChatRequest(
                    messages=messages,
                    task="write_sql",
                    inputs={"table": table_name, "limit": self.config.sql_row_limit, "question": question},
                ),
                SqlReply,
            )
            try:
                sql = guard_select(reply.sql, table_name, self.tables.dialect, self.config.sql_row_limit)
                results = await self.tables.query(sql)
                await checkpoint.put("sql", sql)
                return sql, results
            except UnsafeSQL as exc:
                problem = f"rejected: {exc}"
            except Exception as exc:  # a valid SELECT that fails at run time (a wrong column, say)
                problem = f"failed to run: {str(exc).splitlines()[0][:300]}"
            log.warning("generated_sql_refused", attempt=attempt, problem=problem, sql=reply.sql[:300])
            messages = [
                *messages,
                ChatMessage("assistant", json.dumps({"sql": reply.sql})),
                ChatMessage("user", f"That query was {problem}. Write a corrected single SELECT query."),
            ]
        raise TaskFailure(f"the generated SQL was {problem} (after one regeneration)")
