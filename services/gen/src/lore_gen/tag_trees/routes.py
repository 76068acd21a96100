"""Tag-tree routes: generate, the legacy spreadsheet submit, status (see docs/gen.md)."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody, MultipartBody

from lore_core.errors import BadRequest
from lore_core.internal import CALLER_HEADER
from lore_core.web import from_state
from lore_gen.tag_trees.models import GenerateRequest, SpreadsheetForm, TreeBuilt
from lore_gen.tag_trees.service import TagTreeService
from lore_gen.tasks.models import TaskAccepted, TaskStatus

MAX_SPREADSHEET_BYTES = 64 * 1024 * 1024


class TagTreeController(Controller):
    path = "/api/v1/gen/tag-tree"
    tags = ["tag trees"]
    dependencies = {"tag_trees": from_state("tag_trees")}

    @post(
        "/generate",
        status_code=200,
        summary="Generate a tree for a topic (`pure_llm`, or `kb` grounded in `kb_name`); poll the status",
    )
    async def generate(
        self,
        request: Request[Any, Any, Any],
        tag_trees: NamedDependency[TagTreeService],
        data: JSONBody[GenerateRequest],
    ) -> TaskAccepted:
        record = await tag_trees.generate(data, request.headers.get(CALLER_HEADER))
        return record.accepted()

    @post(
        "/submit",
        status_code=200,
        request_max_body_size=MAX_SPREADSHEET_BYTES,
        summary="Legacy: a tree from an .xlsx/.xls sheet (each row a leaf, its cells the path)",
        description=(
            "multipart fields: `file` (.xlsx or .xls), `tree_name` (default `tag_tree`), `tree_description` "
            "(default empty), `sheet_name` (a sheet name or zero-based index, default `0`). Every row is a "
            "path; a blank cell ends it. There is no header row: remove one before uploading. The tree is "
            "built during the request; the answer is `{task_id, status: completed, node_count}`."
        ),
    )
    async def submit(
        self,
        request: Request[Any, Any, Any],
        tag_trees: NamedDependency[TagTreeService],
        data: MultipartBody[SpreadsheetForm],
    ) -> TreeBuilt:
        upload = data.file
        if upload is None:
            raise BadRequest("no file: send the workbook in the multipart field `file`")
        try:
            content = await upload.read()
        finally:
            await upload.close()
        record = await tag_trees.from_spreadsheet(
            upload.filename or "",
            content,
            data.tree_name or "tag_tree",
            data.tree_description,
            data.sheet_name,
            request.headers.get(CALLER_HEADER),
        )
        return TreeBuilt(task_id=record.task_id, status=record.status, node_count=record.result["node_count"])

    @get(
        "/status/{task_id:str}",
        summary="`{task_id, status, result}` from memory, else from disk; 404 if neither",
    )
    async def status(
        self,
        request: Request[Any, Any, Any],
        tag_trees: NamedDependency[TagTreeService],
        task_id: FromPath[str],
    ) -> TaskStatus:
        record = await tag_trees.status(task_id, request.headers.get(CALLER_HEADER))
        return record.public()
