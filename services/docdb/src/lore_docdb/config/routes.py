from __future__ import annotations

from typing import Any

from litestar import Controller, Request, get, post
from litestar.params import FromPath

from lore_docdb.config.service import ConfigService


def _service(request: Request[Any, Any, Any]) -> ConfigService:
    service: ConfigService = request.app.state.config_service
    return service


class ConfigController(Controller):
    path = "/api/v1/docdb/config"
    tags = ["config"]

    @get("/", summary="The full configuration merged from both files, secrets redacted")
    async def full(self, request: Request[Any, Any, Any]) -> dict[str, Any]:
        return {"success": True, "message": "ok", "data": _service(request).merged()}

    @get("/{section:str}", summary="One configuration section; 404 if it does not exist")
    async def one(self, request: Request[Any, Any, Any], section: FromPath[str]) -> dict[str, Any]:
        return {"success": True, "message": "ok", "data": _service(request).section(section)}

    @post("/reload", status_code=200, summary="Re-read both configuration files from disk")
    async def reload(self, request: Request[Any, Any, Any]) -> dict[str, Any]:
        _service(request).reload()
        return {"success": True, "message": "configuration reloaded", "data": _service(request).merged()}
