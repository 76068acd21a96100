"""Routes of contract 4.9: tag-tree generate, legacy spreadsheet submit, status."""

from __future__ import annotations

from typing import Any

from litestar import Controller, get, post
from litestar.datastructures import UploadFile
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody, MultipartBody

from lore_core.errors import BadRequest
from lore_core.web import from_state
from lore_gen.tag_trees.models import GenerateRequest
from lore_gen.tag_trees.service import TagTreeService

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
        tag_trees: NamedDependency[TagTreeService],
        data: JSONBody[GenerateRequest],
    ) -> dict[str, Any]:
        record = await tag_trees.generate(data)
        return {"task_id": record.task_id, "status": record.status}

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
        self, tag_trees: NamedDependency[TagTreeService], data: MultipartBody[dict[str, Any]]
    ) -> dict[str, Any]:
        upload = data.get("file")
        if not isinstance(upload, UploadFile):
            raise BadRequest("no file: send the workbook in the multipart field `file`")
        try:
            content = await upload.read()
        finally:
            await upload.close()

        def field(name: str, default: str) -> str:
            value = data.get(name)
            return value if isinstance(value, str) else default

        record = await tag_trees.from_spreadsheet(
            upload.filename or "",
            content,
            field("tree_name", "tag_tree") or "tag_tree",
            field("tree_description", ""),
            field("sheet_name", "0"),
        )
        return {"task_id": record.task_id, "status": record.status, "node_count": record.result["node_count"]}

    @get(
        "/status/{task_id:str}",
        summary="`{task_id, status, result}` from memory, else from disk; 404 if neither",
    )
    async def status(
        self, tag_trees: NamedDependency[TagTreeService], task_id: FromPath[str]
    ) -> dict[str, Any]:
        record = await tag_trees.status(task_id)
        return record.public()
